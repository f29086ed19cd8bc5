"""Strategic compaction (PIP-215) on Spark gives exactly the in-process result.

`pulsar_entries.spark.compact(df, strategy=...)` reads messages per Spark
partition, finishes chunked messages that cross partitions after the shuffle
by key, folds each key with the strategy on the executors and rebuilds every
entry that keeps something. Inputs here: the sample topic, a topic of
interleaved chunked messages (resent, duplicated, orphaned, unfinished) with
plain updates of the same keys, Parquet files cut inside chunked messages,
and hash-shuffled DataFrames.

A missing pyspark is a failure, never a skip.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark import cloudpickle

import pulsar_entries as pe
import pulsar_entries.spark as ps
from pulsar_entries._sample import generate_topic
from pulsar_entries.strategies import FirstWins, LatestWins, VersionedState

from support import entrygen, strategic_examples
from support.strategic_examples import MergeTail, ShortestWins
from support.tables import spark_entries

pytestmark = pytest.mark.spark

# The test module's strategies travel by value: executors cannot import tests/python.
cloudpickle.register_pickle_by_value(strategic_examples)

T0 = 1_700_000_000_000


@pytest.fixture(scope="module", autouse=True)
def small_arrow_batches(spark):
    """Small Arrow batches, so keys and entries straddle batch boundaries."""
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "16")
    yield
    spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


def chunky_topic(seed: int = 0) -> pa.Table:
    """Chunked messages of three keys interleaved with plain updates (and
    tombstones) of the same keys: a resent message (chunk 0 again), a
    duplicated chunk, an orphan (chunk 0 lost), a message never finished, and
    key-less entries."""
    rng = random.Random(seed)
    msgs = []
    for i in range(7):
        value = rng.randbytes(1_500 + 300 * i)
        msgs.append(
            pe.encode_chunked(
                {"value": value, "key": f"k{i % 3}"},
                chunk_size=700,
                compression=["none", "lz4", "zstd"][i % 3],
                producer_name=f"p{i % 3}",
                sequence_id=i,
                publish_time=T0 + 400 * i,
            )
        )
    msgs[2] = msgs[2][:2] + msgs[2]  # resent from chunk 0
    msgs[4] = [*msgs[4][:2], msgs[4][1], *msgs[4][2:]]  # a duplicate
    msgs[5] = msgs[5][1:]  # chunk 0 lost: an orphan
    msgs[6] = msgs[6][:-1]  # never finished: kept for a later run
    queues = [list(m) for m in msgs]
    entries: list[bytes] = []
    step = 0
    while any(queues):
        for q in queues:
            if q:
                entries.append(q.pop(0))
                step += 1
                k = f"k{rng.randrange(4)}"
                if step % 2 == 0:
                    value = None if rng.random() < 0.15 else rng.randbytes(rng.randrange(3, 30))
                    entries.append(pe.encode_entry([{"key": k, "value": value}], batch=False, publish_time=T0 + step))
                if step % 5 == 0:
                    batch = [
                        {"key": f"k{rng.randrange(4)}", "value": rng.randbytes(rng.randrange(1, 20))} for _ in range(3)
                    ]
                    batch.append({"value": b"no key"})
                    entries.append(pe.encode_entry(batch, publish_time=T0 + step, compression="lz4"))
    return pe.entries_table(entries, ledger_id=9)


def mixed_topic() -> pa.Table:
    """The sample topic (batches of every codec, tombstones, key-less messages,
    chunks with a duplicate, markers, corrupt entries) plus encrypted and
    legacy-compacted entries and a chunked message split by other entries."""
    base = generate_topic(300, seed=21).entries
    t = T0 + 100_000
    big = bytes(range(256)) * 8
    chunks = entrygen.chunk_entries("user-7", big, 3, uuid="chunky-1", publish_time=t)
    extra = [
        chunks[0],
        pe.encode_entry([{"key": "user-7", "value": b"between chunks"}], batch=False, publish_time=t + 1),
        chunks[1],
        chunks[2],
        entrygen.encrypted_entry(3, "user-2", b"\x0b\xff" * 40, publish_time=t + 2),
        pe.encode_entry([{"key": "user-4", "value": b"a"}, {"key": "user-4", "value": b"b"}], publish_time=t + 5),
        entrygen.legacy_compacted_batch([("user-5", b"x"), None, ("user-6", b"y")], codec="zstd"),
        pe.encode_entry([{"value": b"no key"}, {"key": "user-8", "value": b""}], publish_time=t + 6, checksum=False),
        b"\x0e\x01garbage",
    ]
    more = pe.entries_table(extra, ledger_id=2000)
    return pa.concat_tables([base, more], promote_options="permissive")


def versioned_topic() -> pa.Table:
    """Service-unit state updates, some invalid, stale or forced, in batches and singles."""
    rng = random.Random(5)
    states = ["Init", "Free", "Owned", "Assigning", "Releasing", "Splitting", "Deleted", "bogus"]
    entries = []
    for i in range(120):
        msgs = []
        for _ in range(rng.choice([1, 1, 3])):
            k = f"bundle-{rng.randrange(6)}"
            if rng.random() < 0.05:
                msgs.append({"key": k, "value": None})
            else:
                doc = f'{{"state":"{rng.choice(states)}","version":{rng.randrange(1, 12)}'
                doc += ',"force":true}' if rng.random() < 0.05 else "}"
                msgs.append({"key": k, "value": doc.encode()})
        entries.append(pe.encode_entry(msgs, batch=len(msgs) > 1, publish_time=T0 + i))
    return pe.entries_table(entries, ledger_id=3)


def write_files(table: pa.Table, cuts: list[int], directory) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    bounds = [0, *sorted(set(cuts)), table.num_rows]
    for n, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        pq.write_table(table.slice(lo, hi - lo), directory / f"part-{n:03d}.parquet")
    return str(directory)


def spark_compact(df, **kw) -> pa.Table:
    out = ps.compact(df, **kw).toArrow()
    keys = [c for c in ("partition", "ledger_id", "entry_id") if c in out.column_names]
    in_order = out.take(pc.sort_indices(out, [(k, "ascending") for k in keys]))
    assert out.select(keys).to_pylist() == in_order.select(keys).to_pylist()  # topic order
    return out


def same(expected: pa.Table, got: pa.Table) -> None:
    assert got.column_names == expected.column_names
    for name in expected.column_names:
        assert got[name].to_pylist() == expected[name].to_pylist(), name


STRATEGIES = {
    "latest": LatestWins,
    "first": FirstWins,
    "merge": MergeTail,
    "shortest": ShortestWins,
}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_chunks_across_parquet_files_equal_in_process(spark, tmp_path, name):
    table = chunky_topic()
    strategy = STRATEGIES[name]()
    expected = pe.compact(table, strategy=strategy, retain_null_key=True)
    # Survivors include chunked messages, and (when merging) merged values.
    assert expected.num_rows > 5
    cuts = list(range(3, table.num_rows, 4))  # inside most chunked messages
    df = ps.read_entries(spark, write_files(table, cuts, tmp_path))
    assert df.rdd.getNumPartitions() == len(cuts) + 1
    same(expected, spark_compact(df, strategy=strategy, retain_null_key=True))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_cuts_and_shuffles_equal_in_process(spark, tmp_path, seed):
    rng = random.Random(seed)
    table = chunky_topic(seed)
    strategy = [MergeTail(), FirstWins(), LatestWins()][seed % 3]
    retain = bool(seed % 2)
    expected = pe.compact(table, strategy=strategy, retain_null_key=retain)
    cuts = rng.sample(range(1, table.num_rows), rng.randrange(1, 12))
    df = ps.read_entries(spark, write_files(table, cuts, tmp_path))
    same(expected, spark_compact(df, strategy=strategy, retain_null_key=retain))
    # Partitions that are not topic ranges are range-partitioned first.
    shuffled = spark_entries(spark, table, partitions=rng.randrange(2, 5))
    same(expected, spark_compact(shuffled, strategy=strategy, retain_null_key=retain))


@pytest.mark.slow
@pytest.mark.parametrize("retain_null_key", [False, True])
def test_sample_topic_equals_in_process(spark, tmp_path, retain_null_key):
    table = mixed_topic()
    for strategy in (LatestWins(), MergeTail()):
        expected = pe.compact(table, strategy=strategy, retain_null_key=retain_null_key)
        assert expected["error"].null_count < expected.num_rows < table.num_rows
        assert expected["error"].null_count < expected.num_rows  # corrupt / encrypted kept with a note
        df = ps.read_entries(
            spark, write_files(table, [40, 41, 150, 290, table.num_rows - 6], tmp_path / type(strategy).__name__)
        )
        same(expected, spark_compact(df, strategy=strategy, retain_null_key=retain_null_key))


@pytest.mark.slow
def test_sample_topic_hash_partitioned_with_topic_partitions(spark):
    one = generate_topic(120, seed=2).entries
    two = chunky_topic(4)
    table = pa.concat_tables(
        [
            one.append_column("partition", pa.array([0] * one.num_rows, pa.int32())),
            two.append_column("partition", pa.array([1] * two.num_rows, pa.int32())),
        ],
        promote_options="permissive",
    )
    strategy = FirstWins()
    expected = pe.compact(table, strategy=strategy)
    assert set(expected["partition"].to_pylist()) == {0, 1}
    same(expected, spark_compact(spark_entries(spark, table, partitions=4), strategy=strategy))


def test_versioned_state_equals_in_process(spark):
    table = versioned_topic()
    strategy = VersionedState(allow_version_gaps=False)
    expected = pe.compact(table, strategy=strategy)
    # The strategy matters here: it keeps other values than the last.
    assert expected.num_rows and expected["data"] != pe.compact(table, strategy=LatestWins())["data"]
    same(expected, spark_compact(spark_entries(spark, table, partitions=3), strategy=strategy))


def test_large_var_types(spark, tmp_path):
    table = chunky_topic(7)
    strategy = MergeTail()
    expected = pe.compact(table, strategy=strategy)
    spark.conf.set("spark.sql.execution.arrow.useLargeVarTypes", "true")
    try:
        df = ps.read_entries(spark, write_files(table, [5, 17, 30], tmp_path))
        same(expected, spark_compact(df, strategy=strategy))
    finally:
        spark.conf.unset("spark.sql.execution.arrow.useLargeVarTypes")


def test_errors_as_in_process(spark):
    table = chunky_topic()
    df = spark.createDataFrame(table)
    with pytest.raises(ValueError, match="publishing order") as spark_error:
        ps.compact(df, strategy=LatestWins(), order="event_time")
    with pytest.raises(ValueError, match="publishing order") as local_error:
        pe.compact(table, strategy=LatestWins(), order="event_time")
    assert str(spark_error.value) == str(local_error.value)
    with pytest.raises(TypeError, match="should_keep_left"):
        ps.compact(df, strategy=object())

    class Unpicklable(ShortestWins):
        def __init__(self) -> None:
            import threading

            self.lock = threading.Lock()

    with pytest.raises(TypeError, match="cannot be pickled"):
        ps.compact(df, strategy=Unpicklable())
    # An entry stored twice is refused, as in-process, wherever the copies sit.
    doubled = pa.concat_tables([table, table.slice(7, 1)])
    with pytest.raises(ValueError, match="not in topic order"):
        pe.compact(doubled.sort_by([("entry_id", "ascending")]), strategy=LatestWins())
    with pytest.raises(Exception, match="not in topic order"):
        ps.compact(spark.createDataFrame(doubled), strategy=LatestWins()).collect()
    # A strategy's error stops the run, as in-process, with its message.
    with pytest.raises(ValueError, match="exploded on purpose"):
        pe.compact(table, strategy=strategic_examples.Exploding())
    with pytest.raises(Exception, match="exploded on purpose"):
        ps.compact(df, strategy=strategic_examples.Exploding()).collect()


def test_builtin_strategies_pickle():
    import pickle

    for s in (LatestWins(), FirstWins(), VersionedState({"A": ["B"]}, initial_state="A", first_version=1)):
        back = pickle.loads(pickle.dumps(s))
        assert type(back) is type(s)
        for prev, cur in [
            (None, b'{"state":"B","version":1}'),
            (b'{"state":"A","version":1}', b'{"state":"B","version":2}'),
            (b"x", None),
            (b"a", b"b"),
        ]:
            assert back.should_keep_left(prev, cur) == s.should_keep_left(prev, cur)
    with pytest.raises(ValueError, match="unknown built-in"):
        pe._native.NativeStrategy("nope")


@pytest.mark.slow
def test_chunk_boundary_cases(spark, tmp_path):
    """Each boundary case of the partition pass, with files cut exactly there:
    a message restarted (chunk 0 resent) after its first attempt crossed a
    file; a message spanning three files with a duplicate chunk across a cut;
    an orphan chunk at a file's start; a message left unfinished at the
    topic's end; plain updates of the same keys in between."""

    def chunked(key, seed, n, uuid=None, t=0):
        value = random.Random(seed).randbytes(700 * n - 100)
        return pe.encode_chunked({"key": key, "value": value}, chunk_size=700, sequence_id=seed, publish_time=T0 + t)

    def plain(key, value, t):
        return pe.encode_entry([{"key": key, "value": value}], batch=False, publish_time=T0 + t)

    resent = chunked("a", 1, 3)
    spanning = chunked("b", 2, 4)
    orphaned = chunked("c", 3, 2)
    unfinished = chunked("a", 4, 3)
    entries = [
        resent[0],
        resent[1],
        plain("a", b"x" * 9, 1),  # | cut: resent restarts in the next file
        resent[0],
        spanning[0],
        resent[1],
        resent[2],
        spanning[1],  # | cut
        spanning[1],
        plain("b", b"y" * 12, 2),
        spanning[2],  # | cut (a duplicate chunk 1 first)
        orphaned[1],
        spanning[3],
        plain("c", None, 3),
        unfinished[0],  # | cut
        unfinished[1],
        plain("b", None, 4),
    ]
    table = pe.entries_table(entries, ledger_id=4)
    cuts = [3, 8, 11, 15]
    for strategy in (LatestWins(), MergeTail()):
        expected = pe.compact(table, strategy=strategy)
        # The resent message survives whole; the unfinished one is kept.
        kept = set(expected["entry_id"].to_pylist())
        assert {14, 15} <= kept and not {0, 1} & kept
        df = ps.read_entries(spark, write_files(table, cuts, tmp_path / type(strategy).__name__))
        assert df.rdd.getNumPartitions() == 5
        same(expected, spark_compact(df, strategy=strategy))

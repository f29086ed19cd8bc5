"""PIP-215 strategies: built-ins, Python strategies with value formats and the
merge hook, the strategic compactor's output shape, and TableView."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pulsar_entries as pe
from pulsar_entries.strategies import FirstWins, LatestWins, ValueFormat, VersionedState

from support.compaction_model import build, topics

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class KeepGreatest:
    """Keeps the greatest value seen (bytes order); tombstones always delete."""

    def should_keep_left(self, prev, cur):
        return prev is not None and cur is not None and prev >= cur


class Concat:
    """Merges every accepted value into the previous one."""

    def should_keep_left(self, prev, cur):
        return False

    def is_merge_enabled(self):
        return True

    def merge(self, prev, cur):
        return prev + b"+" + cur


def keep_left_of(strategy):
    if isinstance(strategy, FirstWins):
        return lambda p, c: p is not None and c is not None
    if isinstance(strategy, LatestWins):
        return lambda p, c: False
    return strategy.should_keep_left


def strategic_reference(topic, strategy) -> dict:
    """Key → value after folding every readable keyed message through the strategy."""
    keep_left = keep_left_of(strategy)
    merging = getattr(strategy, "is_merge_enabled", lambda: False)()
    state: dict = {}
    for e in topic:
        if e.kind not in ("single", "batch"):
            continue
        for m in e.msgs:
            if m.key is None:
                continue
            cur = m.value or None
            prev = state.get(m.key)
            if keep_left(prev, cur):
                continue
            if cur is None:
                state.pop(m.key, None)
            else:
                state[m.key] = strategy.merge(prev, cur) if merging and prev is not None else cur
    return state


def view_dict(view: pe.TableView) -> dict:
    return dict(view.items())


STRATEGIES = [LatestWins(), FirstWins(), KeepGreatest(), Concat()]


@SETTINGS
@given(
    topic=topics(chunks=False, encrypted=False),
    strategy=st.sampled_from(STRATEGIES),
)
def test_strategic_compaction_matches_the_reference(topic, strategy):
    table = build(topic)
    expected = strategic_reference(topic, strategy)
    assert view_dict(pe.TableView.from_entries(table, strategy)) == expected
    out = pe.compact(table, strategy=strategy)
    assert out["error"].null_count == out.num_rows
    # A latest-wins view of the compacted topic is the strategy's result.
    assert view_dict(pe.TableView.from_entries(out)) == expected
    ids = out["entry_id"].to_pylist()
    assert ids == sorted(set(ids)), "one compacted entry per original entry, in topic order"
    inputs = {i: e for i, e in enumerate(topic)}
    merging = isinstance(strategy, Concat)
    for entry_id, data in zip(ids, out["data"].to_pylist()):
        rows = pe.decode(pa.table({"ledger_id": [7], "entry_id": [entry_id], "data": [data]})).to_pylist()
        original = inputs[entry_id]
        if len(rows) > 1:
            # A new batch with fresh indexes, no placeholders (Pulsar #21091: never split an entry).
            assert [r["batch_index"] for r in rows] == list(range(len(rows)))
            assert "compacted_batch_indexes" not in pe.parse_entry(data)["metadata"]
        else:
            assert rows[0]["batch_index"] == -1
        assert not any(r["compacted_out"] for r in rows)
        if not merging:
            source = [(m.key, m.value or None) for m in original.msgs]
            for r in rows:
                assert (r["key"], r["value"]) in source


def test_merge_writes_at_the_latest_contributing_message():
    a = pe.encode_entry([{"key": "k", "value": b"a", "properties": {"n": "1"}}], publish_time=1)
    b = pe.encode_entry(
        [{"key": "x", "value": b"x1"}, {"key": "k", "value": b"b", "properties": {"n": "2"}, "event_time": 5}],
        publish_time=2,
        compression="zstd",
    )
    table = pe.entries_table([a, b])
    out = pe.compact(table, strategy=Concat())
    assert out["entry_id"].to_pylist() == [1]
    rows = pe.decode(out).to_pylist()
    assert [(r["key"], r["value"], r["batch_index"]) for r in rows] == [("x", b"x1", 0), ("k", b"a+b", 1)]
    # The merged message carries the latest message's metadata.
    assert rows[1]["properties"] == [("n", "2")] and rows[1]["event_time"] is not None
    assert rows[1]["compression"] == "zstd"


def test_lone_survivor_keeps_its_metadata_and_singles_are_copied():
    single = pe.encode_entry([{"key": "s", "value": b"one", "properties": {"p": "q"}}], publish_time=1, broker_index=0)
    batch = pe.encode_entry(
        [{"key": "k", "value": b"1", "properties": {"a": "b"}, "event_time": 9}, {"key": "k", "value": b""}],
        publish_time=2,
    )
    later = pe.encode_entry([{"key": "k", "value": b"2"}, {"key": "z", "value": b"zz"}], publish_time=3)
    out = pe.compact(pe.entries_table([single, batch, later]), strategy=FirstWins())
    assert out["entry_id"].to_pylist() == [0, 2]
    assert out["data"][0].as_py() == single  # byte for byte, broker prefix included
    rows = pe.decode(out.slice(1)).to_pylist()
    # k was deleted by the tombstone in entry 1, so entry 2's k is first again.
    assert [(r["key"], r["value"], r["batch_index"]) for r in rows] == [("k", b"2", 0), ("z", b"zz", 1)]
    lone = pe.encode_entry(
        [{"key": "k", "value": b"v", "properties": {"a": "b"}, "event_time": 9}, {"value": b"nokey"}], publish_time=5
    )
    out = pe.compact(pe.entries_table([lone]), strategy=LatestWins())
    md = pe.parse_entry(out["data"][0].as_py())["metadata"]
    assert "num_messages_in_batch" not in md
    assert md["properties"] == [("a", "b")] and md["event_time"] == 9 and md["partition_key"] == "k"
    kept = pe.compact(pe.entries_table([lone]), strategy=LatestWins(), retain_null_key=True)
    assert [r["key"] for r in pe.decode(kept).to_pylist()] == ["k", None]


def test_versioned_state_keeps_the_first_valid_chain():
    def state(s, v, force=False):
        return json.dumps({"state": s, "version": v, **({"force": True} if force else {})}).encode()

    updates = [
        ("u1", state("Assigning", 1)),
        ("u1", state("Owned", 2)),
        ("u1", state("Owned", 2)),  # stale version
        ("u1", state("Free", 3)),  # Owned -> Free is not a valid transition
        ("u1", state("Releasing", 3)),
        ("u2", state("Owned", 1)),  # Init -> Owned is valid over a system topic
        ("u2", b"{not json"),
        ("u3", state("Assigning", 4)),
        ("u3", None),  # tombstones are always accepted
        ("u4", state("Assigning", 1)),
        ("u4", state("Free", 7, force=True)),
    ]
    entries = [pe.encode_entry([{"key": k, "value": v}], publish_time=i) for i, (k, v) in enumerate(updates)]
    table = pe.entries_table(entries)
    strategy = VersionedState()
    view = pe.TableView.from_entries(table, strategy)
    assert view.get("u1") == {"state": "Releasing", "version": 3}
    assert view.get("u2") == {"state": "Owned", "version": 1}
    assert "u3" not in view
    assert view.get("u4")["state"] == "Free"
    compacted = pe.TableView.from_entries(pe.compact(table, strategy=strategy), value_format="json")
    assert dict(compacted.items()) == dict(view.items())
    strict = VersionedState(first_version=1, allow_version_gaps=False)
    assert strict.should_keep_left(None, {"state": "Owned", "version": 2})
    assert not strict.should_keep_left(None, state("Assigning", 1))


def test_value_formats_and_strategy_errors():
    class Longest:
        value_format = "utf-8"

        def should_keep_left(self, prev, cur):
            assert prev is None or isinstance(prev, str)
            return prev is not None and cur is not None and len(prev) >= len(cur)

    class Tally:
        value_format = "json"

        def should_keep_left(self, prev, cur):
            return False

        def is_merge_enabled(self):
            return True

        def merge(self, prev, cur):
            return {"n": prev["n"] + cur["n"]}

    values = [b"ab", b"abcd", b"x", "é".encode()]
    table = pe.entries_table(
        [pe.encode_entry([{"key": "k", "value": v}], publish_time=i) for i, v in enumerate(values)]
    )
    assert pe.TableView.from_entries(table, Longest()).get("k") == "abcd"
    assert pe.decode(pe.compact(table, strategy=Longest()))["value"].to_pylist() == [b"abcd"]

    counts = pe.entries_table(
        [pe.encode_entry([{"key": "c", "value": json.dumps({"n": i}).encode()}], publish_time=i) for i in range(1, 5)]
    )
    assert pe.TableView.from_entries(counts, Tally()).get("c") == {"n": 10}
    assert pe.decode(pe.compact(counts, strategy=Tally()))["value"].to_pylist() == [b'{"n":10}']

    class Bad:
        value_format = "json"

        def should_keep_left(self, prev, cur):
            return False

    with pytest.raises(ValueError, match="could not be decoded as json"):
        pe.compact(table, strategy=Bad())

    class BytesMerge:
        value_format = ValueFormat(lambda b: b.decode(), lambda s: s.encode(), "text")

        def should_keep_left(self, prev, cur):
            return False

        def is_merge_enabled(self):
            return True

        def merge(self, prev, cur):
            return prev + cur

    assert pe.decode(pe.compact(table, strategy=BytesMerge()))["value"].to_pylist() == ["ababcdxé".encode()]

    with pytest.raises(TypeError, match="not a compaction strategy"):
        pe.compact(table, strategy=object())


def test_table_view_listeners_deletes_and_skips():
    entries = [
        pe.encode_entry(
            [{"key": "a", "value": b"1"}, {"value": b"no key"}, {"key": "b", "value": b"2"}], publish_time=1
        ),
        pe.encode_entry([{"key": "a", "value": None}], publish_time=2),
        pe.encode_entry([{"key": "b", "value": b"3"}], publish_time=3),
    ]
    events = []
    skipped = []

    class Counting(FirstWins):
        def handle_skipped_message(self, key, value):
            skipped.append((key, value))

    view = pe.TableView(Counting())
    view.for_each_and_listen(lambda k, v: events.append(("first", k, v)))
    view.update(pe.entries_table(entries[:1]))
    view.listen(lambda k, v: events.append(("later", k, v)))
    view.update(pe.entries_table(entries[1:], entry_ids=[1, 2]))
    assert dict(view.items()) == {"b": b"2"}
    assert ("first", "a", b"1") in events and ("first", "a", None) in events and ("later", "a", None) in events
    assert skipped == [("b", b"3")]
    assert len(view) == 1 and "b" in view and "a" not in view and view.get("a", "none") == "none"
    table = view.to_arrow()
    assert table.column_names == ["key", "value", "ledger_id", "entry_id", "batch_index", "publish_time"]
    assert table.to_pylist() == [
        {"key": "b", "value": b"2", "ledger_id": 0, "entry_id": 0, "batch_index": 2, "publish_time": 1}
    ]


def test_table_view_inputs():
    from support import entrygen

    value = bytes(range(40))
    chunks = entrygen.chunk_entries("big", value, 3)
    bad = bytearray(pe.encode_entry([{"key": "q", "value": b"v"}], publish_time=1))
    bad[-1] ^= 1
    table = pe.entries_table([*chunks, bytes(bad)])
    view = pe.TableView.from_entries(table)
    assert view.get("big") == value  # reassembled
    assert len(view.errors) == 1 and view.errors[0][2].startswith("checksum mismatch")
    decoded = pe.TableView.from_entries(pe.decode(table, verify_checksum=False))
    assert "big" not in decoded and decoded.get("q") is not None
    assert any("chunk" in e[2] for e in decoded.errors)
    with pytest.raises(ValueError, match="raw entries"):
        pe.TableView.from_entries(pa.table({"x": [1]}))

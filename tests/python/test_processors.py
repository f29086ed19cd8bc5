"""Payload processors (PIP-96): user processors written in Python, selection, errors, pickling."""

from __future__ import annotations

import datetime
import pickle
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import pyarrow as pa
import pytest

import pulsar_entries as pe
from pulsar_entries import kafka
from pulsar_entries.processors import DEFAULT, KAFKA, PULSAR

from support.lines_format import LinesProcessor, lines_entry
from support.tables import int_times


def mixed_topic() -> pa.Table:
    """Pulsar batch, KoP Kafka entry, two `lines` entries (one compressed), stamped by a broker."""
    pulsar = pe.encode_entry([{"value": b"p0", "key": "a"}, {"value": b"p1"}], publish_time=1_000)
    kop = kafka.kop_entry(
        [kafka.record_batch([{"key": b"k", "value": b"kafka-0", "timestamp": 5}])], publish_time=2_000
    )
    lines1 = lines_entry(["u1|hello|lang=en", "|anon|"], publish_time=3_000)
    lines2 = lines_entry(["u2|zstd-line|"], publish_time=4_000, compression="zstd")
    table = pe.entries_table([pulsar, kop, lines1, lines2], ledger_id=9)
    return pe.stamp(table, timestamps=[1_001, 2_001, 3_001, 4_001])


def test_user_processor_decodes_its_format_end_to_end():
    out = int_times(pe.decode(mixed_topic(), processors=[LinesProcessor(), KAFKA, PULSAR]))
    rows = out.select(
        ["entry_id", "processor", "key", "value", "properties", "event_time", "batch_index", "offset", "error"]
    ).to_pylist()
    assert [(r["entry_id"], r["processor"], r["key"], r["value"]) for r in rows] == [
        (0, "pulsar", "a", b"p0"),
        (0, "pulsar", None, b"p1"),
        (1, "kafka", "k", b"kafka-0"),
        (2, "lines", "u1", b"hello"),
        (2, "lines", None, b"anon"),
        (3, "lines", "u2", b"zstd-line"),  # decompressed before the processor runs
    ]
    assert rows[3]["properties"] == [("lang", "en")] and rows[3]["event_time"] == 3_000
    assert rows[4]["event_time"] == 2_999
    # Batch indexes default to the position; offsets come from the broker index,
    # which counts what the broker was told: a non-batched entry is one message,
    # so the second line of entry 2 runs into entry 3's offset.
    assert [r["batch_index"] for r in rows[3:]] == [0, 1, -1]
    assert [r["broker_index"] for r in out.to_pylist()] == [1, 1, 2, 3, 3, 4]
    assert [r["offset"] for r in rows] == [0, 1, 2, 3, 4, 4]
    assert all(r["error"] is None for r in rows)


def test_without_the_user_processor_its_entries_fall_to_pulsar():
    out = pe.decode(mixed_topic())
    lines = out.filter(pa.compute.equal(out["entry_id"], 2)).to_pylist()
    assert len(lines) == 1 and lines[0]["processor"] == "pulsar"
    assert lines[0]["value"] == b"u1|hello|lang=en\n|anon|"


def test_a_raising_processor_marks_only_its_entry():
    table = pe.entries_table([lines_entry(["a|1|"]), lines_entry(["b|2|", "!boom"]), lines_entry(["c|3|"])])
    out = pe.decode(table, processors=[LinesProcessor(), PULSAR])
    assert out["value"].to_pylist() == [b"1", None, b"3"]
    err = out["error"][1].as_py()
    assert err == "processor `lines` failed: ValueError: cannot parse line 1 of entry 0:1"
    assert out["processor"].to_pylist() == ["lines", None, "lines"]


class BadMessages:
    name = "bad"

    def __init__(self, result):
        self.result = result

    def process(self, payload, context):
        return self.result


@pytest.mark.parametrize(
    "result, message",
    [
        (None, "process() returned None"),
        ([{"value": b"x", "colour": "red"}], 'message 0 has unknown key "colour"'),
        ([b"raw bytes"], "message 0 is a bytes, not a dict"),
        ([{"value": 5}], 'message 0["value"] must be bytes, str or None'),
        ([{"event_time": "yesterday"}], 'message 0["event_time"] must be an int (ms), a datetime or None'),
        ([{"headers": [("k", 1)]}], "must be a list of (str, bytes or None) pairs"),
        (42, "TypeError: 'int' object is not iterable"),
    ],
)
def test_bad_processor_output_is_a_clear_error_row(result, message):
    out = pe.decode(pe.entries_table([pe.encode_entry([{"value": b"v"}])]), processors=[BadMessages(result)])
    assert out.num_rows == 1
    assert message in out["error"][0].as_py()
    assert out["error"][0].as_py().startswith("processor `bad` failed: ")


def test_entries_no_processor_takes_are_error_rows():
    table = pe.entries_table([pe.encode_entry([{"value": b"v"}], properties={"entry.format": "avro"})])
    out = pe.decode(table, processors=[LinesProcessor(), KAFKA])
    assert "no processor takes this entry (processors: lines, kafka; entry properties: entry.format=avro)" in (
        out["error"][0].as_py()
    )


class Recorder:
    """Keeps what the context said, and re-decodes with the context's Pulsar helper."""

    name = "recorder"

    def __init__(self):
        self.seen = []

    def process(self, payload, context):
        self.seen.append(
            {
                "ids": (context.ledger_id, context.entry_id, context.partition),
                "props": context.properties,
                "prop": context.get_property("source"),
                "missing": context.get_property("nope"),
                "batch": (context.is_batch, context.num_messages),
                "broker": (context.broker_timestamp, context.broker_index, context.base_offset),
                "md": context.metadata,
                "producer": (context.producer_name, context.publish_time),
            }
        )
        yield from context.pulsar_messages(payload)


def test_context_exposes_the_entry_and_its_helpers_match_the_builtin():
    msgs = [
        {"value": b"a", "key": "k1", "properties": {"x": "1"}, "event_time": 7},
        {"value": None, "key": b"\x00\x01"},
        {"value": b"c", "ordering_key": b"ok"},
    ]
    entry = pe.encode_entry(
        msgs,
        compression="lz4",
        producer_name="prod",
        publish_time=99,
        sequence_id=40,
        properties={"source": "web"},
        broker_timestamp=123,
        broker_index=12,
    )
    table = pe.entries_table([entry], ledger_id=4, partition=2)
    rec = Recorder()
    ours = pe.decode(table, processors=[rec])
    builtin = pe.decode(table)
    seen = rec.seen[0]
    assert seen["ids"] == (4, 0, 2)
    assert seen["props"] == {"source": "web"} and seen["prop"] == "web" and seen["missing"] is None
    assert seen["batch"] == (True, 3)
    assert seen["broker"] == (123, 12, 10)
    assert seen["md"]["compression"] == "lz4" and seen["md"]["num_messages_in_batch"] == 3
    assert seen["producer"] == ("prod", 99)
    cols = [
        "batch_index",
        "key",
        "key_b64_encoded",
        "ordering_key",
        "properties",
        "value",
        "event_time",
        "sequence_id",
        "offset",
    ]
    assert ours.select(cols).to_pylist() == builtin.select(cols).to_pylist()
    assert set(ours["processor"].to_pylist()) == {"recorder"}


def test_message_at_and_single_message_helpers():
    class Helpers:
        def process(self, payload, context):
            smm = bytes.fromhex("12026b3118053000")  # partition_key "k1", payload_size 5, b64 false
            record = len(smm).to_bytes(4, "big") + smm + b"hello"
            return [context.message_at(3, record), context.single_message(payload)]

    entry = pe.encode_entry([{"value": b"whole", "key": "ek", "properties": {"p": "q"}}], batch=False)
    rows = pe.decode(pe.entries_table([entry]), processors=[Helpers()]).to_pylist()
    assert (rows[0]["batch_index"], rows[0]["key"], rows[0]["value"]) == (3, "k1", b"hello")
    assert (rows[1]["batch_index"], rows[1]["key"], rows[1]["value"]) == (-1, "ek", b"whole")
    assert rows[1]["properties"] == [("p", "q")]
    assert rows[0]["processor"] == "Helpers"  # the class name when there is no `name`


def test_processor_list_is_validated():
    table = pe.entries_table([pe.encode_entry([{"value": b"v"}])])
    with pytest.raises(ValueError, match="at least one processor"):
        pe.decode(table, processors=[])
    with pytest.raises(TypeError, match=r"processors\[0\] must be a built-in processor"):
        pe.decode(table, processors=[object()])
    with pytest.raises(ValueError, match="unknown built-in processor"):
        pe.decode(table, processors=["avro"])
    with pytest.raises(TypeError, match="entry_property must be None or a"):
        bad = LinesProcessor()
        bad.entry_property = "entry.format=lines"
        pe.decode(table, processors=[bad])
    assert pe.decode(table, processors=["pulsar"])["value"].to_pylist() == [b"v"]


def test_processors_pickle_and_decode_in_another_process():
    assert pickle.loads(pickle.dumps(KAFKA)) == KAFKA and pickle.loads(pickle.dumps(PULSAR)) is not KAFKA
    assert list(DEFAULT) == [KAFKA, PULSAR]
    assert KAFKA.entry_property == ("entry.format", "kafka") and PULSAR.entry_property is None
    processors = [LinesProcessor(), KAFKA, PULSAR]
    restored = pickle.loads(pickle.dumps(processors))
    assert restored[1:] == [KAFKA, PULSAR] and restored[0].entry_property == ("entry.format", "lines")
    table = mixed_topic()
    here = pe.decode(table, processors=processors)
    # A fresh interpreter (spawn), as a Spark executor would run decode per batch.
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        there = pool.submit(_decode_batches, table.to_batches(max_chunksize=2), processors).result(timeout=120)
    assert pa.concat_tables(there).equals(here)


def _decode_batches(batches, processors):
    return [pe.decode(b, processors=processors) for b in batches]


class BytesLikes:
    """Returns every bytes-like the message dicts take, a datetime and a header generator."""

    name = "likes"

    def process(self, payload, context):
        when = datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc)
        headers = (h for h in [("h", bytearray(b"hv"))])
        first = {"value": bytearray(b"ba"), "key": b"\x01", "event_time": when, "ordering_key": memoryview(b"ok")}
        return iter([{**first, "headers": headers}, {"value": memoryview(b"mv"), "key": "text"}, {"value": "str"}])


def test_processor_messages_take_bytes_likes_datetimes_and_iterables():
    out = pe.decode(pe.entries_table([pe.encode_entry([{"value": b"v"}])]), processors=[BytesLikes()]).to_pylist()
    assert [r["value"] for r in out] == [b"ba", b"mv", b"str"]
    assert [(r["key"], r["key_b64_encoded"]) for r in out] == [("AQ==", True), ("text", False), (None, False)]
    assert out[0]["event_time"] == datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc)
    assert out[0]["ordering_key"] == b"ok"
    assert out[0]["headers"] == [{"key": "h", "value": b"hv"}]
    assert all(r["error"] is None for r in out)

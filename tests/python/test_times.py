"""One rule for times: a naive datetime is UTC, as Pulsar's timestamps are, in
process and in the CLI (Spark: ``test_spark_chunks_seek``), whatever the
process's local time zone (the ``far_from_utc`` fixture puts it at UTC+05:30)."""

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pulsar_entries as pe
from pulsar_entries import kafka
from pulsar_entries._times import parse_time, to_millis
from pulsar_entries.cli import main

T0 = 1_714_564_800_000  # 2024-05-01T12:00:00Z
NAIVE = dt.datetime(2024, 5, 1, 12, 0)
AWARE = NAIVE.replace(tzinfo=dt.timezone.utc)


def stamped(n: int = 20) -> pa.Table:
    raw = pe.entries_table([pe.encode_entry([{"value": b"v%d" % i}], publish_time=T0) for i in range(n)])
    return pe.stamp(raw, timestamps=[T0 - 5_000 + 1_000 * i for i in range(n)])


def broker_times(table) -> list[int]:
    return [pe.parse_entry(d)["broker_entry_metadata"]["broker_timestamp"] for d in table["data"].to_pylist()]


def test_conversions(far_from_utc):
    assert to_millis(NAIVE) == to_millis(AWARE) == T0
    ist = dt.timezone(dt.timedelta(hours=5, minutes=30))
    assert to_millis(NAIVE.replace(tzinfo=ist)) == T0 - 19_800_000  # an aware datetime keeps its zone
    assert to_millis(dt.datetime(2024, 5, 1, 12, 0, 0, 1500)) == T0 + 2  # rounded as the core rounds
    assert parse_time("2024-05-01T12:00:00") == parse_time("2024-05-01T12:00:00Z") == parse_time(str(T0)) == T0
    assert parse_time("2024-05-01T17:30:00+05:30") == T0
    with pytest.raises(ValueError):
        parse_time("yesterday")


def test_seek_in_process(far_from_utc):
    table = stamped()
    want = pe.find_position_by_time(table, T0)
    assert want.row == 5  # entries 0..4 are before T0
    assert pe.find_position_by_time(table, NAIVE) == pe.find_position_by_time(table, AWARE) == want
    # Half a second later is the next entry; 5.5 hours (the local offset) later, past the end.
    assert pe.find_position_by_time(table, NAIVE + dt.timedelta(milliseconds=500)).row == 6
    assert pe.find_position_by_time(table, NAIVE + dt.timedelta(hours=5, minutes=30)).row == 20


def test_stamp_and_kafka_timestamps_in_process(far_from_utc):
    raw = pe.entries_table([pe.encode_entry([{"value": b"v"}], publish_time=T0)] * 2)
    assert broker_times(pe.stamp(raw, timestamps=NAIVE)) == [T0, T0]
    assert broker_times(pe.stamp(raw, timestamps=[NAIVE, AWARE + dt.timedelta(seconds=1)])) == [T0, T0 + 1_000]
    assert kafka.record_batch([{"value": b"x", "timestamp": NAIVE}]) == kafka.record_batch(
        [{"value": b"x", "timestamp": T0}]
    )


def test_seek_in_the_cli(tmp_path, capsys, far_from_utc):
    pq.write_table(stamped(), tmp_path / "entries.parquet")
    want = pe.find_position_by_time(stamped(), T0)
    for when in (str(T0), "2024-05-01T12:00:00", "2024-05-01T12:00:00Z", "2024-05-01T17:30:00+05:30"):
        assert main(["--engine", "local", "seek", str(tmp_path / "entries.parquet"), "--time", when]) == 0
        assert capsys.readouterr().out.startswith(f"{want.ledger_id}:{want.entry_id} (row 5;")

"""Issue 16, the CLI side: outputs never destroy or mix data, every input
column and reader diagnostic reaches the output, and every failure is one line.

Most tests run the CLI in a child process (``python -m pulsar_entries``), as a
user does. With ``--engine spark`` they run it in this process on the suite's
Spark session (:func:`cli_on`), except the tests about Spark's start-up and its
JVM's output, which start their own; all of those are marked ``spark``."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import pulsar_entries as pe
from pulsar_entries._sample import generate_topic
from pulsar_entries.cli import main
from pulsar_entries.cli._output import COMMIT_DELAY_ENV, MARKER
from pulsar_entries.cli._output import FILE_MARK as MARK
from pulsar_entries.offload import write_offloaded_ledgers

ENGINES = ["local", pytest.param("spark", marks=pytest.mark.spark)]


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process; ``env`` adds to this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "pulsar_entries", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def cli_on(engine: str, request: pytest.FixtureRequest, *args: str) -> subprocess.CompletedProcess[str]:
    """``cli("--engine", engine, *args)``. On Spark it runs in this process, on the suite's one Spark session:
    these tests check the CLI's outputs and messages, and a child process would start a JVM for each call (10 to
    15 s). The tests about Spark's start-up and its JVM's own output run the CLI in a child process."""
    if engine != "spark":
        return cli("--engine", engine, *args)
    session = request.getfixturevalue("spark")
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["--engine", engine, *args])
    finally:
        session.sparkContext.setLogLevel("ERROR")  # as the suite's session had it (the CLI turns Spark's log off)
    return subprocess.CompletedProcess(
        ["pulsar-entries", "--engine", engine, *args], rc, out.getvalue(), err.getvalue()
    )


def error_line(run: subprocess.CompletedProcess[str]) -> str:
    """The one stderr line of a failed run (asserts there is exactly one)."""
    assert run.returncode == 1, (run.returncode, run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("pulsar-entries: error: ")
    return lines[0]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def topic_dir(tmp_path: Path) -> Path:
    """A small sample topic: Parquet entry tables in topic/entries."""
    topic = generate_topic(60, seed=4)
    d = tmp_path / "topic" / "entries"
    d.mkdir(parents=True)
    pq.write_table(topic.entries.slice(0, 30), d / "a.parquet")
    pq.write_table(topic.entries.slice(30), d / "b.parquet")
    return d


# ----------------------------------------------------------------------------- 1. outputs


@pytest.mark.parametrize("engine", ENGINES)
def test_out_equal_to_or_overlapping_in_is_refused(topic_dir, engine, request):
    before = snapshot(topic_dir.parent)
    for command in ("decode", "compact"):
        for out in (topic_dir, topic_dir / "sub", topic_dir.parent, topic_dir / "a.parquet"):
            run = cli_on(engine, request, command, str(topic_dir), str(out))
            assert "overlaps input" in error_line(run), (command, out)
    # A single input file as OUT, and --overwrite does not change that.
    run = cli_on(engine, request, "decode", str(topic_dir / "a.parquet"), str(topic_dir / "a.parquet"), "--overwrite")
    assert "overlaps input" in error_line(run)
    run = cli_on(engine, request, "inspect", str(topic_dir), "--html", str(topic_dir / "a.parquet"), "--overwrite")
    assert "overlaps input" in error_line(run)
    assert snapshot(topic_dir.parent) == before  # nothing read was touched


def test_generate_and_demo_never_delete_files_they_did_not_write(tmp_path):
    out = tmp_path / "mine"
    (out / "entries").mkdir(parents=True)
    (out / "offload").mkdir()
    (out / "entries" / "notes.txt").write_text("mine")
    (out / "offload" / "keep.bin").write_bytes(b"\x00\x01")
    before = snapshot(out)
    for args in (["generate", str(out), "--entries", "20"], ["--engine", "local", "demo", "--dir", str(out)]):
        for extra in ([], ["--overwrite"]):
            line = error_line(cli(*args, *extra))
            assert "did not write" in line and str(out) in line
    assert snapshot(out) == before


def test_existing_output_needs_overwrite_and_is_replaced_whole(tmp_path):
    out = tmp_path / "sample"
    assert cli("generate", str(out), "--entries", "30", "--seed", "1").returncode == 0
    assert (out / MARKER).is_file()
    first = snapshot(out)
    assert "add --overwrite to replace it" in error_line(cli("generate", str(out), "--entries", "50"))
    assert snapshot(out) == first
    # With --overwrite the new sample replaces the old one: no file of the old one is left beside it.
    (out / "entries" / "extra-from-old-run.parquet").write_bytes(b"x")  # a file only the old output had
    assert cli("generate", str(out), "--entries", "50", "--overwrite").returncode == 0
    assert not (out / "entries" / "extra-from-old-run.parquet").exists()
    got = pa.Table.from_batches(
        [b for f in sorted((out / "entries").glob("*.parquet")) for b in pq.read_table(f).to_batches()]
    )
    assert got.num_rows == 50
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary sibling left


@pytest.mark.parametrize("engine", ENGINES)
def test_decode_existing_out_needs_overwrite(topic_dir, tmp_path, engine, request):
    out = tmp_path / ("m.parquet" if engine == "local" else "m")
    assert cli_on(engine, request, "decode", str(topic_dir), str(out)).returncode == 0
    first = out.read_bytes() if out.is_file() else snapshot(out)
    run = cli_on(engine, request, "decode", str(topic_dir), str(out), "--keep-markers")
    assert "exists: add --overwrite" in error_line(run)
    assert (out.read_bytes() if out.is_file() else snapshot(out)) == first
    assert cli_on(engine, request, "decode", str(topic_dir), str(out), "--keep-markers", "--overwrite").returncode == 0
    want = pe.decode(
        pa.concat_tables([pq.read_table(f) for f in sorted(topic_dir.glob("*.parquet"))]), keep_markers=True
    )
    assert pq.read_table(out).num_rows == want.num_rows


def test_overwrite_never_replaces_a_directory_the_tool_did_not_write(topic_dir, tmp_path):
    out = tmp_path / "theirs"
    out.mkdir()
    (out / "data.csv").write_text("a,b\n")
    line = error_line(cli("--engine", "local", "compact", str(topic_dir), str(out), "--overwrite"))
    assert "did not write" in line
    assert (out / "data.csv").read_text() == "a,b\n"


def test_overwrite_never_replaces_a_file_the_tool_did_not_write(topic_dir, tmp_path):
    """The README says only pulsar-entries' own outputs are replaced; a user's file at OUT was replaced
    with --overwrite all the same. A Parquet file of the user's (even one holding messages), or any
    other file, is refused and left as it was; our own earlier output is replaced."""
    theirs = tmp_path / "theirs.parquet"
    pq.write_table(pe.decode(pq.read_table(topic_dir / "a.parquet")), theirs)
    notes = tmp_path / "notes.html"
    notes.write_text("<html>my notes</html>")
    before = theirs.read_bytes()
    line = error_line(cli("--engine", "local", "decode", str(topic_dir), str(theirs), "--overwrite"))
    assert f"output {theirs} is a file that pulsar-entries did not write" in line
    assert "remove it yourself" in line
    assert theirs.read_bytes() == before
    line = error_line(cli("--engine", "local", "inspect", str(topic_dir), "--html", str(notes), "--overwrite"))
    assert "did not write" in line and notes.read_text() == "<html>my notes</html>"
    # Our own outputs (a decoded Parquet file, an HTML report) are replaced with --overwrite.
    ours = tmp_path / "ours.parquet"
    report = tmp_path / "report.html"
    assert cli("--engine", "local", "decode", str(topic_dir), str(ours)).returncode == 0
    assert cli("--engine", "local", "inspect", str(topic_dir), "--html", str(report)).returncode == 0
    assert MARK in (pq.read_metadata(ours).metadata or {})
    first = ours.read_bytes()
    assert (
        cli("--engine", "local", "decode", str(topic_dir), str(ours), "--keep-markers", "--overwrite").returncode == 0
    )
    assert ours.read_bytes() != first
    report.write_text(report.read_text().replace("</body>", "<p>old</p></body>"))
    assert cli("--engine", "local", "inspect", str(topic_dir), "--html", str(report), "--overwrite").returncode == 0
    assert "<p>old</p>" not in report.read_text()


@pytest.mark.spark
def test_local_compact_into_a_spark_output_replaces_it_without_mixing(topic_dir, tmp_path, spark):
    out = tmp_path / "out"
    assert main(["--engine", "spark", "compact", str(topic_dir), str(out)]) == 0
    entries = pa.concat_tables([pq.read_table(f) for f in sorted(topic_dir.glob("*.parquet"))])
    want = pe.compact(entries)
    assert pq.read_table(out / "compacted").num_rows == want.num_rows
    assert main(["--engine", "local", "compact", str(topic_dir), str(out)]) == 1  # exists: needs --overwrite
    assert main(["--engine", "local", "compact", str(topic_dir), str(out), "--overwrite"]) == 0
    # Readers of the directory see the local output only, not Spark's parts beside it.
    got = pq.read_table(out / "compacted")
    assert got.num_rows == want.num_rows
    assert got.select(want.column_names).equals(want)


def _interrupt_during_write(args: list[str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Runs the CLI with the test hook that pauses before the rename, sends
    SIGINT as the pause starts (the output written, not yet in place) and
    returns the finished run."""
    child = subprocess.Popen(
        [sys.executable, "-m", "pulsar_entries", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, COMMIT_DELAY_ENV: "120"},
    )
    assert child.stderr is not None
    deadline = time.monotonic() + timeout
    seen = []
    for line in child.stderr:
        seen.append(line)
        if "test hook: pausing" in line:
            break
        assert time.monotonic() < deadline, "".join(seen)
    else:
        child.wait()
        raise AssertionError(f"the CLI never reached the rename: {''.join(seen)}")
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    return subprocess.CompletedProcess(child.args, child.returncode, out, "".join(seen) + err)


@pytest.mark.parametrize("engine", ENGINES)
def test_sigint_during_a_write_leaves_the_previous_output_intact(topic_dir, tmp_path, engine, request):
    out = tmp_path / ("m.parquet" if engine == "local" else "m")
    assert cli_on(engine, request, "decode", str(topic_dir), str(out)).returncode == 0
    before = out.read_bytes() if out.is_file() else snapshot(out)
    run = _interrupt_during_write(["--engine", engine, "decode", str(topic_dir), str(out), "--overwrite"])
    assert run.returncode == 130 and "interrupted" in run.stderr
    assert (out.read_bytes() if out.is_file() else snapshot(out)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["topic", out.name])  # no temporary sibling left
    # A first write interrupted leaves no output at all (not an empty one that reads as a dataset).
    fresh = tmp_path / "fresh"
    run = _interrupt_during_write(["--engine", engine, "compact", str(topic_dir), str(fresh)])
    assert run.returncode == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["topic", out.name])


# ----------------------------------------------------------------------------- 2. columns pass through


def _keyed(key: str, value: bytes, t: int) -> bytes:
    return pe.encode_entry([{"key": key, "value": value}], publish_time=t, broker_timestamp=t)


@pytest.fixture
def partitioned(tmp_path: Path) -> Path:
    """Key ``k`` in partitions 0 and 1 of a topic, with an extra ``topic`` column."""
    table = pa.table(
        {
            "ledger_id": pa.array([10, 10, 20], pa.int64()),
            "entry_id": pa.array([0, 1, 0], pa.int64()),
            "partition": pa.array([0, 0, 1], pa.int32()),
            "data": [_keyed("k", b"a", 1_000), _keyed("k", b"b", 2_000), _keyed("k", b"c", 1_500)],
            "topic": ["t-partition-0", "t-partition-0", "t-partition-1"],
        }
    )
    d = tmp_path / "partitioned"
    d.mkdir()
    pq.write_table(table, d / "entries.parquet")
    return d


@pytest.mark.parametrize("engine", ENGINES)
def test_compact_keeps_keys_of_different_partitions_apart(partitioned, tmp_path, engine, request):
    out = tmp_path / "out"
    run = cli_on(engine, request, "compact", str(partitioned), str(out))
    assert run.returncode == 0, run.stderr
    got = pq.read_table(out / "compacted").sort_by([("partition", "ascending")])
    # One survivor per partition: 10:1 (value b) and 20:0 (value c), not one for the whole topic.
    assert got.select(["ledger_id", "entry_id", "partition"]).to_pylist() == [
        {"ledger_id": 10, "entry_id": 1, "partition": 0},
        {"ledger_id": 20, "entry_id": 0, "partition": 1},
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_decode_keeps_partition_and_extra_columns(partitioned, tmp_path, engine, request):
    out = tmp_path / ("m.parquet" if engine == "local" else "m")
    assert cli_on(engine, request, "decode", str(partitioned), str(out)).returncode == 0
    got = pq.read_table(out).sort_by([("ledger_id", "ascending"), ("entry_id", "ascending")])
    assert got["partition"].to_pylist() == [0, 0, 1]
    assert got["topic"].to_pylist() == ["t-partition-0", "t-partition-0", "t-partition-1"]
    assert got["value"].to_pylist() == [b"a", b"b", b"c"]


@pytest.fixture
def damaged_offload(tmp_path: Path) -> Path:
    """Offload objects of a sample topic; the first data object's block header magic overwritten."""
    d = tmp_path / "offload"
    objects = write_offloaded_ledgers(generate_topic(40, seed=1).entries, d)
    data = bytearray(Path(objects[0].data_path).read_bytes())
    data[0:4] = b"XXXX"
    Path(objects[0].data_path).write_bytes(bytes(data))
    return d


@pytest.mark.parametrize("engine", ENGINES)
def test_offload_reader_diagnostic_becomes_the_rows_error(damaged_offload, tmp_path, engine, request):
    out = tmp_path / ("m.parquet" if engine == "local" else "m")
    assert cli_on(engine, request, "decode", str(damaged_offload), str(out)).returncode == 0
    errors = [e for e in pq.read_table(out)["error"].to_pylist() if e]
    assert any(e.startswith("bad block header magic at data-object offset 0") for e in errors), errors
    assert "entry data is null" not in errors
    run = cli_on(engine, request, "inspect", str(damaged_offload))
    assert run.returncode == 0 and "bad block header magic at data-object offset 0" in run.stdout


@pytest.mark.spark
def test_spark_decode_carries_partition_columns_and_reader_errors(partitioned, damaged_offload, spark):
    import pulsar_entries.spark as ps

    rows = ps.decode(ps.read_entries(spark, str(partitioned))).orderBy("ledger_id", "entry_id").collect()
    assert [(r["partition"], r["topic"]) for r in rows] == [
        (0, "t-partition-0"),
        (0, "t-partition-0"),
        (1, "t-partition-1"),
    ]
    errors = [r["error"] for r in ps.decode(ps.read_entries(spark, str(damaged_offload))).collect() if r["error"]]
    assert any(e.startswith("bad block header magic at data-object offset 0") for e in errors), errors


def test_decode_carrying_matches_rows_to_their_entries():
    from pulsar_entries._carry import decode_carrying

    topic = generate_topic(80, seed=9).entries
    # Repeated ids (an entry stored twice) and a reader's error row among them.
    table = pa.concat_tables([topic.slice(0, 40), topic.slice(39, 1), topic.slice(40)])
    table = table.append_column("row", pa.array(range(table.num_rows), pa.int64()))
    error = pa.array([None] * table.num_rows, pa.string())
    table = table.append_column("error", error)
    broken = table.to_pylist()
    broken[5]["data"], broken[5]["error"] = None, "block 3 unreadable"
    table = pa.Table.from_pylist(broken, schema=table.schema)
    got = decode_carrying(table)
    want = pe.decode(table.select(["ledger_id", "entry_id", "data"]))
    assert got.drop_columns(["row", "error"]).equals(want.drop_columns(["error"]))
    # Every row carries the row number of the entry it came from.
    per_entry = pc.value_counts(got["row"]).to_pylist()
    assert sorted(c["values"] for c in per_entry) == sorted(set(got["row"].to_pylist()))
    for r in got.to_pylist():
        src = table.slice(r["row"], 1).to_pylist()[0]
        assert (r["ledger_id"], r["entry_id"]) == (src["ledger_id"], src["entry_id"])
    assert got.filter(pc.equal(got["row"], 5))["error"].to_pylist() == ["block 3 unreadable"]
    assert got.filter(pc.equal(got["row"], 40)).num_rows == got.filter(pc.equal(got["row"], 39)).num_rows > 0
    with pytest.raises(pe.InputSchemaError, match="'key'"):
        decode_carrying(table.append_column("key", pa.array(["x"] * table.num_rows)))


# ----------------------------------------------------------------------------- 3. errors


@pytest.mark.parametrize("engine", ENGINES)
def test_a_corrupt_parquet_file_is_one_line_naming_it(topic_dir, tmp_path, engine, request):
    (topic_dir / "c.parquet").write_bytes(b"PAR1 this is not parquet")
    out = tmp_path / ("m.parquet" if engine == "local" else "m")
    line = error_line(cli_on(engine, request, "decode", str(topic_dir), str(out)))
    assert f"{topic_dir / 'c.parquet'}: cannot read a Parquet file" in line
    assert not out.exists()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_zero_byte_offload_object_gives_an_error_row_naming_it(tmp_path, engine, request):
    d = tmp_path / "offload"
    objects = write_offloaded_ledgers(generate_topic(40, seed=1).entries, d)
    Path(objects[0].data_path).write_bytes(b"")
    out = tmp_path / ("m.parquet" if engine == "local" else "m")
    assert cli_on(engine, request, "decode", str(d), str(out)).returncode == 0
    errors = [e for e in pq.read_table(out)["error"].to_pylist() if e]
    assert f"{objects[0].data_path}: the offload object is empty (0 bytes)" in errors


@pytest.mark.spark
def test_spark_worker_failure_is_one_line_and_debug_shows_more(topic_dir, tmp_path):
    table = pq.read_table(topic_dir / "a.parquet")
    pq.write_table(table.append_column("key", pa.array(["x"] * table.num_rows)), topic_dir / "a.parquet")
    line = error_line(cli("--engine", "spark", "decode", str(topic_dir), str(tmp_path / "m")))
    assert "'key' would hide the decoded column" in line
    run = cli("--debug", "--engine", "spark", "decode", str(topic_dir), str(tmp_path / "m"))
    assert run.returncode != 0 and len(run.stderr.splitlines()) > 5 and "Traceback" in run.stderr


@pytest.mark.spark
def test_spark_corrupt_file_in_a_worker_is_one_line(topic_dir, tmp_path):
    # The driver reads the schema from the footers; break a file after that
    # point is impossible here, so break its body: the footer stays readable.
    f = topic_dir / "b.parquet"
    data = bytearray(f.read_bytes())
    for i in range(8, len(data) // 2):
        data[i] = 0xFF
    f.write_bytes(bytes(data))
    line = error_line(cli("--engine", "spark", "decode", str(topic_dir), str(tmp_path / "m")))
    assert str(f) in line and "cannot read a Parquet file" in line


def test_local_engine_never_needs_pyspark_and_spark_says_what_to_install(topic_dir, tmp_path):
    blocked = "import sys; sys.modules['pyspark'] = None; from pulsar_entries.cli import main; sys.exit(main())"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", blocked.replace("main())", f"main({list(args)!r}))")],
            capture_output=True,
            text=True,
        )

    for args in (
        ["--engine", "local", "inspect", str(topic_dir)],
        ["--engine", "local", "decode", str(topic_dir), str(tmp_path / "m.parquet")],
        ["--engine", "local", "compact", str(topic_dir), str(tmp_path / "c")],
        ["--engine", "local", "seek", str(topic_dir), "--time", "0"],
        ["--engine", "local", "last-id", str(tmp_path / "c" / "compacted")],
        ["generate", str(tmp_path / "g"), "--entries", "20"],
    ):
        done = run(*args)
        assert done.returncode == 0, (args, done.stderr)
    # The default engine stays in process when pyspark is missing; asked for, Spark says what to install.
    auto = run("decode", str(topic_dir), str(tmp_path / "auto.parquet"))
    assert auto.returncode == 0 and auto.stderr == "engine: local, in process (auto: pyspark is not installed)\n"
    line = error_line(run("--engine", "spark", "decode", str(topic_dir), str(tmp_path / "s")))
    # The hint fits how this package was installed (by name from a wheel, by its directory from a checkout).
    from pulsar_entries._install import install_hint

    assert line.endswith(f"the spark engine needs pyspark: {install_hint('spark')}, or use --engine local")


@pytest.mark.spark
def test_missing_java_gets_a_hint(topic_dir, tmp_path):
    line = error_line(cli("--engine", "spark", "inspect", str(topic_dir), env={"JAVA_HOME": str(tmp_path / "no-java")}))
    assert "could not start Spark" in line and "JAVA_HOME" in line and "--engine local" in line


@pytest.mark.spark
def test_missing_package_on_the_workers_gets_a_hint(topic_dir, tmp_path):
    # /usr/bin/python3 is a Python without pulsar-entries (nor pyarrow): a worker as on a bare cluster.
    bare = "/usr/bin/python3"
    check = subprocess.run([bare, "-c", "import pulsar_entries"], capture_output=True)
    assert check.returncode != 0, "this test needs a Python without pulsar_entries"
    line = error_line(
        cli("--engine", "spark", "decode", str(topic_dir), str(tmp_path / "m"), env={"PYSPARK_PYTHON": bare})
    )
    assert "the Python on the Spark workers cannot import" in line and "Shipping to a cluster" in line


# ----------------------------------------------------------------------------- 4. the small ones


def test_engine_is_accepted_after_the_command(topic_dir):
    run = cli("inspect", str(topic_dir), "--engine", "local", "--quiet")
    assert run.returncode == 0 and "messages decoded" in run.stdout
    # Given before the command, it is not reset by the subcommand's defaults.
    assert main(["--engine", "local", "inspect", str(topic_dir)]) == 0


def test_generate_zero_entries_is_a_clear_error(tmp_path):
    line = error_line(cli("generate", str(tmp_path / "g"), "--entries", "0"))
    assert "--entries must be at least 1" in line
    assert not (tmp_path / "g").exists()


def test_inspect_escapes_non_printable_text(tmp_path):
    data = pe.encode_entry([{"value": b"v"}], producer_name="evil\x1b[2J\x07name", publish_time=1_000)
    d = tmp_path / "t"
    d.mkdir()
    pq.write_table(pe.entries_table([data], ledger_id=1), d / "e.parquet")
    run = cli("--engine", "local", "inspect", str(d))
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout
    assert "evil\\x1b[2J\\x07name" in run.stdout


def test_zero_row_input_works_on_the_local_engine(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    empty = pa.table(
        {"ledger_id": pa.array([], pa.int64()), "entry_id": pa.array([], pa.int64()), "data": pa.array([], pa.binary())}
    )
    pq.write_table(empty, d / "e.parquet")
    run = cli("--engine", "local", "decode", str(d), str(tmp_path / "m.parquet"))
    assert run.returncode == 0, run.stderr
    assert pq.read_table(tmp_path / "m.parquet").num_rows == 0
    run = cli("--engine", "local", "compact", str(d), str(tmp_path / "c"))
    assert run.returncode == 0, run.stderr
    assert pq.read_table(tmp_path / "c" / "compacted").num_rows == 0
    run = cli("--engine", "local", "inspect", str(d))
    assert run.returncode == 0 and "messages decoded            0" in run.stdout


def test_duplicate_data_column_is_an_error(tmp_path):
    entries = generate_topic(10, seed=1).entries
    twice = pa.Table.from_arrays(
        [entries["ledger_id"], entries["entry_id"], entries["data"], entries["data"]],
        names=["ledger_id", "entry_id", "data", "data"],
    )
    with pytest.raises(pe.InputSchemaError, match="more than one `data` column"):
        pe.decode(twice)
    d = tmp_path / "t"
    d.mkdir()
    pq.write_table(twice, d / "e.parquet")
    line = error_line(cli("--engine", "local", "decode", str(d), str(tmp_path / "m.parquet")))
    assert str(d / "e.parquet") in line and "more than one column named 'data'" in line


def test_null_and_out_of_range_ids_never_become_minus_one():
    entries = pe.entries_table([_keyed(f"k{i}", b"v", 1_000 + i) for i in range(4)], ledger_id=1000)
    ledgers = pa.array([1000, None, 1000, 1000], pa.int64())
    out = pe.decode(entries.set_column(0, "ledger_id", ledgers))
    bad = out.filter(pc.is_valid(out["error"]))
    assert bad["error"].to_pylist() == ["ledger_id or entry_id is null"]
    assert out.filter(pc.is_null(out["error"]))["ledger_id"].to_pylist() == [1000, 1000, 1000]
    assert out.filter(pc.is_null(out["error"]))["key"].to_pylist() == ["k0", "k2", "k3"]
    huge = pa.array([1000, 2**63 + 5, 1000, 1000], pa.uint64())
    with pytest.raises(pe.InputSchemaError, match="out of range"):
        pe.decode(entries.set_column(0, "ledger_id", huge))


def test_processor_typed_dicts_are_importable():
    from typing import get_type_hints

    from pulsar_entries.kafka import KafkaRecordDict
    from pulsar_entries.processors import DecodedMessageDict, MessageDict, OutputMessageDict

    assert "value" in get_type_hints(OutputMessageDict) and OutputMessageDict.__total__ is False
    assert DecodedMessageDict.__required_keys__ >= {"key", "value", "batch_index"}
    assert {"key", "value", "properties"} <= set(MessageDict.__annotations__)
    assert "offset_delta" in KafkaRecordDict.__annotations__
    msg: OutputMessageDict = {"value": b"x"}
    assert msg == {"value": b"x"}


def test_seek_and_table_view_refuse_unsorted_input():
    entries = generate_topic(50, seed=2).entries
    shuffled = entries.take(pa.array([3, 1, 2, 0, *list(range(4, 50))]))
    with pytest.raises(pe.OrderError, match="not in topic order"):
        pe.compact(shuffled)
    with pytest.raises(pe.OrderError, match="not in topic order"):
        pe.find_position_by_time(shuffled, 0)
    with pytest.raises(pe.OrderError, match="not in topic order"):
        pe.find_position_by_offset(shuffled, 0)
    with pytest.raises(pe.OrderError, match="not in topic order"):
        pe.TableView.from_entries(shuffled)
    view = pe.TableView.from_entries(entries.slice(10))
    with pytest.raises(pe.OrderError, match="not in topic order"):
        view.update(entries.slice(0, 10))  # older entries after newer ones
    # Sorted input is unaffected, and partitions are checked each on its own.
    pe.find_position_by_time(entries, 0)
    two = pa.concat_tables(
        [entries.append_column("partition", pa.array([p] * entries.num_rows, pa.int32())) for p in (0, 1)]
    )
    assert len(pe.TableView.from_entries(two)) >= 1

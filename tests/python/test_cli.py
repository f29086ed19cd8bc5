"""The pulsar-entries CLI, on both engines, and the sample topic behind the demo."""

import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
import pytest

import pulsar_entries as pe
from pulsar_entries._sample import generate_topic
from pulsar_entries._standalone import free_port
from pulsar_entries.cli import main
from pulsar_entries.cli._report import render_html, stats_from_arrow

from support.cli import run_cli


def test_sample_topic_reconciles_with_decode():
    topic = generate_topic(300, seed=3)
    out = pe.decode(topic.entries)
    errors = out.filter(out["error"].is_valid())
    assert errors.num_rows == topic.corrupt_entries == 3
    # A row per message, with a chunked message's chunk entries as rows of their own.
    rows = topic.messages - topic.chunked_messages + topic.chunk_entries
    assert out["error"].null_count == rows - topic.corrupt_messages
    assert set(out["compression"].to_pylist()) >= {"none", "lz4", "zlib", "zstd", "snappy", "gzip"}
    good = out.filter(out["error"].is_null())
    assert good["broker_index"].null_count == 0  # every entry was stamped
    # A KoP entry with a flipped byte fails its Kafka batch CRC after its metadata
    # was read, so its error row keeps the entry columns; a Pulsar one fails first.
    kinds = sorted(
        "kafka batch crc" if "crc32c mismatch" in e and e.startswith("Kafka") else e.split(":")[0]
        for e in errors["error"].to_pylist()
    )
    assert kinds == ["checksum mismatch", "checksum mismatch", "kafka batch crc"]
    kafka_rows = good.filter(pa.compute.equal(good["processor"], "kafka"))
    kafka_errors = [r["num_messages"] for r in errors.to_pylist() if r["error"].startswith("Kafka")]
    assert kafka_rows.num_rows + sum(kafka_errors) == topic.kafka_messages > 0
    assert {"committed", "aborted"} <= set(good["txn_status"].to_pylist())
    # The continuous index counts every offset: Pulsar messages, Kafka offsets
    # (control records included) and one per marker, as a 4.2.4 broker does.
    assert max(i for i in out["broker_index"].to_pylist() if i is not None) == topic.offsets - 1
    offsets = [o for o in good["offset"].to_pylist()]
    assert len(set(offsets)) == len(offsets)  # no two messages share an offset
    assert max(offsets) < topic.offsets
    # Chunked messages (one chunk stored twice) reassemble whole.
    assert topic.chunked_messages >= 2 and topic.duplicate_chunks == 1
    whole = pe.reassemble_chunks(out)
    statuses = whole["status"].drop_null().to_pylist()
    assert sorted(set(statuses)) == ["complete", "duplicate"]
    assert statuses.count("complete") == topic.chunked_messages
    assert whole["error"].null_count == topic.messages - topic.corrupt_messages
    assert generate_topic(300, seed=3).entries.equals(topic.entries)  # deterministic


#: Both engines, for tests whose Spark run takes tens of seconds.
SLOW_ON_SPARK = ["local", pytest.param("spark", marks=[pytest.mark.spark, pytest.mark.slow])]


@pytest.fixture(params=["local", pytest.param("spark", marks=pytest.mark.spark)])
def engine(request):
    """Each CLI engine; for Spark, the shared session starts first and the CLI reuses it."""
    if request.param == "spark":
        request.getfixturevalue("spark")
    return request.param


@pytest.mark.parametrize("engine", SLOW_ON_SPARK, indirect=True)
def test_demo_runs_end_to_end(tmp_path, capsys, engine):
    argv = ["--engine", engine, "--quiet", "demo", "--dir", str(tmp_path), "--entries", "200", "--no-real-pulsar"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "== real Pulsar: skipped (--no-real-pulsar); the demo ran on generated sample data only" in out
    assert "reconciled:" in out and "checksum mismatch" in out and "codecs (entries)" in out
    assert "<svg" in (tmp_path / "report.html").read_text()
    assert "seek to " in out and "processors (rows)" in out and "kafka" in out
    assert "chunked messages: " in out and " reassembled from " in out and "complete " in out
    assert "identical to the Parquet copy: yes" in out
    if engine == "spark":
        assert "the same seek on Spark: entry " in out and "(agrees)" in out
    # The demo also compacts the topic and prints its last-message position.
    topic = generate_topic(200, seed=7)
    want = pe.compact(topic.entries)
    if engine == "local":
        compacted = pq.read_table(tmp_path / "compacted.parquet")
    else:
        compacted = pq.read_table(tmp_path / "compacted").select(want.column_names)
    assert compacted.equals(want)
    view = pe.TableView.from_entries(want)
    assert f"compacted view: {len(view):,} keys" in out
    # Every output the README names is written, and the demo ends by saying where they are and what next.
    suffix = ".parquet" if engine == "local" else ""
    for name in ("entries", "offload", "messages", "compacted", "ledger-records", "view", "report.html"):
        assert (tmp_path / (name if "." in name or name in ("entries", "offload") else name + suffix)).exists(), name
    written = pq.read_table(tmp_path / ("view.parquet" if engine == "local" else "view"))
    assert written.num_rows == len(view)
    tail = out.split("== done: everything is in ")[1]
    assert tail.count("pulsar-entries ") == 3 and "sql " in tail
    position = pe.last_message_position(want)
    assert (
        f"{position.ledger_id}:{position.entry_id}:{position.batch_index}" in out.split("== last message position")[1]
    )


@pytest.mark.parametrize("engine", SLOW_ON_SPARK, indirect=True)
def test_compact_and_last_id(tmp_path, capsys, engine):
    topic = generate_topic(120, seed=5)
    (tmp_path / "topic").mkdir()
    pq.write_table(topic.entries.slice(0, 60), tmp_path / "topic" / "a.parquet")
    pq.write_table(topic.entries.slice(60), tmp_path / "topic" / "b.parquet")
    out = tmp_path / "out"
    assert main(["--engine", engine, "compact", str(tmp_path / "topic"), str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("compacted ") and str(out / "compacted") in printed
    want = pe.compact(topic.entries)
    got = pq.read_table(out / "compacted").select(want.column_names)
    assert got.equals(want)
    records = pq.read_table(out / "ledger-records").sort_by([("ledger_id", "ascending"), ("entry_id", "ascending")])
    assert records.select(["ledger_id", "entry_id", "record"]).equals(pe.to_ledger_records(want))
    view = pq.read_table(out / "view")
    assert (
        view.select(["key", "value"]).to_pylist()
        == pe.TableView.from_entries(want).to_arrow().select(["key", "value"]).to_pylist()
    )
    assert main(["--engine", engine, "last-id", str(out / "compacted")]) == 0
    expected = pe.last_message_position(want)
    assert capsys.readouterr().out.startswith(f"{expected.ledger_id}:{expected.entry_id}:{expected.batch_index} ")
    if engine == "local":
        args = ["compact", str(tmp_path / "topic"), str(out), "--order", "event_time", "--retain-null-key"]
        args.append("--overwrite")  # a rerun into the same OUT replaces it only when asked
        assert main(["--engine", engine, *args]) == 0
        got = pq.read_table(out / "compacted").select(want.column_names)
        assert got.equals(pe.compact(topic.entries, order="event_time", retain_null_key=True))
    args = ["compact", str(tmp_path / "topic"), str(out), "--strategy", "first-wins", "--overwrite"]
    assert main(["--engine", engine, *args]) == 0
    got = pq.read_table(out / "compacted").select(want.column_names)
    assert got.equals(pe.compact(topic.entries, strategy=pe.strategies.FirstWins()))
    assert main(["compact", str(tmp_path / "topic"), str(out), "--strategy", "nope"]) == 1
    capsys.readouterr()
    # Without readCompacted the topic's own tail answers.
    args = ["last-id", str(out / "compacted"), "--topic", str(tmp_path / "topic" / "b.parquet"), "--no-read-compacted"]
    assert main(["--engine", engine, *args]) == 0
    assert capsys.readouterr().out.startswith("1000:119:")
    assert main(["last-id", str(out), "--horizon", "oops"]) == 1


def test_seek(tmp_path, capsys, engine):
    topic = generate_topic(150, seed=2)
    assert main(["generate", str(tmp_path / "topic"), "--entries", "150", "--seed", "2"]) == 0
    capsys.readouterr()
    first = pe.parse_entry(topic.entries["data"][0].as_py())["broker_entry_metadata"]["broker_timestamp"]
    t = first + 2_500
    want = pe.find_position_by_time(topic.entries, t)
    for source in ("entries", "offload"):
        assert main(["--engine", engine, "seek", str(tmp_path / "topic" / source), "--time", str(t)]) == 0
        assert capsys.readouterr().out.startswith(f"{want.ledger_id}:{want.entry_id}")
    import datetime as dt

    iso = dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc).isoformat().replace("+00:00", "Z")
    assert main(["--engine", engine, "seek", str(tmp_path / "topic" / "entries"), "--time", iso]) == 0
    assert capsys.readouterr().out.startswith(f"{want.ledger_id}:{want.entry_id}")
    assert main(["seek", str(tmp_path / "topic" / "entries"), "--time", "yesterday"]) == 1


def test_generate_writes_parquet_and_offload_objects(tmp_path, capsys):
    assert main(["generate", str(tmp_path / "t"), "--entries", "120"]) == 0
    topic = generate_topic(120)
    from pulsar_entries._inputs import list_inputs, read_file

    for source, kind in (("entries", "parquet"), ("offload", "offload")):
        inputs = list_inputs(str(tmp_path / "t" / source))
        assert {i[1] for i in inputs} == {kind} and len(inputs) == len(set(topic.entries["ledger_id"].to_pylist()))
        read = pa.Table.from_batches([b for i in inputs for b in read_file(*i)])
        assert read.select(["ledger_id", "entry_id", "data"]).equals(
            topic.entries.select(["ledger_id", "entry_id", "data"])
        )


@pytest.mark.spark
def test_spark_and_local_stats_agree(tmp_path, capsys, spark):
    assert main(["generate", str(tmp_path / "topic"), "--entries", "150"]) == 0
    assert main(["--engine", "local", "inspect", str(tmp_path / "topic" / "entries")]) == 0
    local = capsys.readouterr().out
    offload = str(tmp_path / "topic" / "offload")
    assert main(["--engine", "spark", "inspect", offload, "--html", str(tmp_path / "r.html")]) == 0
    on_spark = capsys.readouterr().out
    # Exact figures agree; quantile lines are approximate on Spark, so compare the exact ones.
    exact = (
        "entries ",
        "messages decoded",
        "entries with error",
        "codecs",
        "distinct keys",
        "publish_time",
        "broker index",
    )
    pick = lambda text: [ln for ln in text.splitlines() if ln.startswith(exact)]  # noqa: E731
    assert pick(local) == pick(on_spark)
    assert (tmp_path / "r.html").exists()


@pytest.mark.spark
def test_decode_both_engines(tmp_path, capsys, spark):
    assert main(["generate", str(tmp_path / "topic"), "--entries", "50"]) == 0
    entries = str(tmp_path / "topic" / "entries")
    assert main(["--engine", "local", "decode", entries, str(tmp_path / "m.parquet")]) == 0
    assert main(["--engine", "spark", "decode", entries, str(tmp_path / "m-spark")]) == 0
    local = pq.read_table(tmp_path / "m.parquet")
    on_spark = pq.read_table(tmp_path / "m-spark")
    assert local.num_rows == on_spark.num_rows > 50


def test_html_report_has_charts():
    topic = generate_topic(100, seed=1)
    page = render_html(stats_from_arrow(topic.entries, pe.decode(topic.entries)))
    assert page.count("<svg") == 7 and "Publish rate" in page and "checksum mismatch" in page


def test_errors_are_one_line_and_nonzero(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "pulsar_entries", "--engine", "local", "inspect", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        f"pulsar-entries: error: {tmp_path / 'missing'}: no such file or directory"
    ]


@pytest.mark.parametrize("listening", [False, True])
def test_an_unreachable_zookeeper_is_one_line_within_the_timeout(listening):
    """kazoo logged its connection failures ("Connection dropped: ...", "Failed connecting to Zookeeper
    ...") on stderr before our one-line error; now stderr holds the error alone, and the connect ends
    by --timeout both on a closed port and on a port that accepts and never answers."""
    import socket
    import time

    with socket.socket() as silent:
        if listening:
            silent.bind(("127.0.0.1", 0))
            silent.listen(4)
            port = silent.getsockname()[1]
        else:
            port = free_port()
        started = time.monotonic()
        run = run_cli(
            "inspect",
            "persistent://public/default/orders",
            "--metadata-url",
            f"zk:127.0.0.1:{port}",
            "--timeout",
            "2",
            ok=False,
        )
        took = time.monotonic() - started
    # A port that accepts and never answers may be a TLS-only one: the line says so; a closed port does not.
    hint = (
        "; the port accepts connections, so it may take TLS only: give its CA (ZooKeeperAccess ca_file, --zk-ca-file)"
    )
    assert run.stderr.splitlines() == [
        f"pulsar-entries: error: metadata store zk:127.0.0.1:{port}: no ZooKeeper answered within 2 s"
        + (hint if listening else "")
    ], run.stderr
    assert took < 10, took


def test_help_lists_every_command():
    run = subprocess.run([sys.executable, "-m", "pulsar_entries", "--help"], capture_output=True, text=True)
    assert run.returncode == 0
    for word in ("generate", "decode", "inspect", "compact", "last-id", "seek", "demo", "--master", "--engine"):
        assert word in run.stdout


def test_demo_without_java_and_maven_falls_back_to_generated_data(tmp_path):
    """With neither java nor mvn on PATH the real-Pulsar step says why it is skipped, in one line,
    and the demo still succeeds on its generated topic."""
    empty = tmp_path / "bin"
    empty.mkdir()
    out = tmp_path / "demo"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pulsar_entries",
            "--quiet",
            "--engine",
            "local",
            "demo",
            "--dir",
            str(out),
            "--entries",
            "60",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": str(empty)},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [line for line in run.stdout.splitlines() if "real Pulsar" in line]
    assert lines == ["== real Pulsar: skipped (java and mvn not on PATH); the demo ran on generated sample data only"]
    assert "reconciled:" in run.stdout and (out / "report.html").exists()
    assert not (out / "real-pulsar-topic.parquet").exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["decode", "--topic", "persistent://t/ns/a", "out.parquet"], ("persistent://t/ns/a", "out.parquet")),
        (["decode", "persistent://t/ns/a", "out.parquet"], ("persistent://t/ns/a", "out.parquet")),
        (["decode", "in.parquet", "out.parquet"], ("in.parquet", "out.parquet")),
        (["compact", "out", "--topic", "persistent://t/ns/a"], ("persistent://t/ns/a", "out")),
        (["inspect", "--topic", "persistent://t/ns/a"], ("persistent://t/ns/a", None)),
        (["seek", "--topic", "persistent://t/ns/a", "--time", "5"], ("persistent://t/ns/a", None)),
        # The forms read_topic takes, as read_topic names them.
        (["decode", "--topic", "t/ns/a", "out"], ("persistent://t/ns/a", "out")),
        (["inspect", "--topic", "orders"], ("persistent://public/default/orders", None)),
    ],
)
def test_topic_option_stands_for_in(monkeypatch, argv, expected):
    """``--topic T`` is IN: the command runs with the same arguments as with the topic as IN."""
    seen = {}
    import pulsar_entries.cli as cli

    def record(a):
        seen.update(input=a.input, out=getattr(a, "out", None))

    for command in ("cmd_decode", "cmd_compact", "cmd_inspect", "cmd_seek"):
        monkeypatch.setattr(cli, command, record)
    assert main(argv) == 0
    assert (seen["input"], seen["out"]) == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["decode"], "the following arguments are required: IN (or --topic), OUT"),
        (["decode", "--topic", "persistent://t/ns/a"], "the following arguments are required: OUT"),
        (["decode", "in", "out", "--topic", "persistent://t/ns/a"], "give the topic either as IN or with --topic"),
        (["inspect", "x", "--topic", "persistent://t/ns/a"], "give the topic either as IN or with --topic"),
        (["decode", "--topic", "t/a", "out"], "--topic t/a: topic `t/a`: expected persistent://tenant/namespace/topic"),
        (["decode", "--topic", "non-persistent://t/ns/a", "out"], "non-persistent topics keep no storage to read"),
        (["inspect"], "the following arguments are required: IN (or --topic)"),
    ],
)
def test_topic_option_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.strip().splitlines()[-1].startswith(f"pulsar-entries {argv[0]}: error:")


def test_last_id_keeps_its_own_topic_option():
    """last-id's --topic is the topic's entries (how GetLastMessageId chooses the source), not IN."""
    from pulsar_entries.cli import build_parser

    args = build_parser().parse_args(["last-id", "compacted.parquet", "--topic", "entries.parquet"])
    assert (args.input, args.topic) == ("compacted.parquet", "entries.parquet")


def test_a_short_topic_name_with_cluster_options_is_a_topic(tmp_path, monkeypatch):
    """With --metadata-url, IN may be ``orders`` or ``tenant/ns/orders`` (as read_topic takes them) unless such a
    path exists; an existing path with cluster options is one clear error."""
    from pulsar_entries.cli import _topic, build_parser

    monkeypatch.chdir(tmp_path)
    parser = build_parser()
    for given, full in (("orders", "persistent://public/default/orders"), ("t/ns/o", "persistent://t/ns/o")):
        args = parser.parse_args(["inspect", given, "--metadata-url", "zk:127.0.0.1:1"])
        assert isinstance(_topic.source(args), _topic.ClusterTopic) and args.input == full
    (tmp_path / "orders").write_bytes(b"")
    args = parser.parse_args(["inspect", "orders", "--metadata-url", "zk:127.0.0.1:1"])
    with pytest.raises(_topic.CliError, match="not the path orders"):
        _topic.source(args)


def test_install_hints_fit_how_the_package_was_installed(monkeypatch):
    """A source checkout is told to install the extra from its directory; an index install by name."""
    import json

    from pulsar_entries import _install

    class Dist:
        def __init__(self, direct: object) -> None:
            self.direct = direct

        def read_text(self, name: str) -> str | None:
            return None if self.direct is None else json.dumps(self.direct)

    for direct, want in [
        (None, "pip install 'pulsar-entries[cluster]'"),
        (
            {"url": "https://files/pulsar_entries-0.1.0.whl", "archive_info": {}},
            "pip install 'pulsar-entries[cluster]'",
        ),
        ({"url": "file:///src/pulsar%20entries", "dir_info": {}}, "pip install '/src/pulsar entries[cluster]'"),
        ({"url": "file:///src/pe", "dir_info": {"editable": True}}, "pip install -e '/src/pe[cluster]'"),
    ]:
        monkeypatch.setattr(_install, "distribution", lambda _name, d=direct: Dist(d))
        assert _install.install_hint("cluster") == want


def test_the_default_engine_runs_a_small_input_in_process_and_says_so(tmp_path, capsys):
    assert main(["generate", str(tmp_path / "t"), "--entries", "50"]) == 0
    capsys.readouterr()
    assert main(["decode", str(tmp_path / "t" / "entries"), str(tmp_path / "m.parquet")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("engine: local, in process (auto: input ") and "--engine spark runs it on Spark" in err
    assert pq.read_table(tmp_path / "m.parquet").num_rows > 50  # one Parquet file: the local engine's output
    assert main(["--quiet", "decode", str(tmp_path / "t" / "entries"), str(tmp_path / "q.parquet")]) == 0
    assert "engine:" not in capsys.readouterr().err


def test_the_engine_rule(tmp_path, monkeypatch):
    """auto: Spark past the local limit, with --master and for the demo; in process otherwise, and
    always without pyspark. A topic is measured by its ledgers' sizes in the metadata store."""
    import importlib.util

    from pulsar_entries._cluster.layout import Ledger, Partition, TopicLayout
    from pulsar_entries.cli import _engines
    from pulsar_entries.cli._topic import ClusterTopic

    assert main(["generate", str(tmp_path / "t"), "--entries", "50"]) == 0
    src = str(tmp_path / "t" / "entries")
    size = sum(p.stat().st_size for p in (tmp_path / "t" / "entries").rglob("*") if p.is_file())
    pick = _engines.pick_engine
    assert _engines.input_size(src) == (size, "input")
    assert pick("auto", command="decode", master_given=False, source=src)[0] == "local"
    monkeypatch.setattr(_engines, "LOCAL_MAX_BYTES", size - 1)
    name, why = pick("auto", command="decode", master_given=False, source=src)
    assert name == "spark" and why.startswith(f"auto: input {size / 2**20:,.1f} MiB, over ")
    monkeypatch.setattr(_engines, "LOCAL_MAX_BYTES", size)
    assert pick("auto", command="inspect", master_given=False, source=src)[0] == "local"
    assert pick("auto", command="decode", master_given=True, source=src) == ("spark", "--master given")
    assert pick("auto", command="demo", master_given=False, source=None)[0] == "spark"
    assert pick("local", command="demo", master_given=True, source=None) == ("local", "--engine local")
    ledgers = [Ledger(7, 10, 600, None), Ledger(8, 0, 0, None)]  # the open ledger: size 0 until it closes
    topic = ClusterTopic("persistent://a/b/c", {}, {}, _layout=TopicLayout("c", [Partition("c", -1, ledgers)], {}))
    assert _engines.input_size(topic) == (600, "topic of 2 ledgers")
    monkeypatch.setattr(_engines, "LOCAL_MAX_BYTES", 599)
    assert pick("auto", command="compact", master_given=False, source=topic)[0] == "spark"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else object())
    assert pick("auto", command="decode", master_given=False, source=topic) == (
        "local",
        "auto: pyspark is not installed",
    )


def _on_a_terminal(*args: str) -> tuple[int, str]:
    """The CLI with stderr on a pseudo-terminal: (exit status, what it drew there)."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))  # 40 rows, 160 columns
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pulsar_entries", *args],
            stdout=subprocess.DEVNULL,
            stderr=follower,
            timeout=300,
        )
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child side is closed and everything was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    return run.returncode, drawn.decode("utf-8", "replace")


def test_progress_bars_on_a_terminal_and_quiet_otherwise(tmp_path):
    assert main(["generate", str(tmp_path / "t"), "--entries", "300"]) == 0
    entries = str(tmp_path / "t" / "entries")
    rc, drawn = _on_a_terminal("--engine", "local", "decode", entries, str(tmp_path / "m.parquet"))
    assert rc == 0 and "decode: 100%|" in drawn and "300/300 [" in drawn and " MiB/s]" in drawn, drawn
    rc, drawn = _on_a_terminal("--engine", "local", "compact", entries, str(tmp_path / "c"))
    for step in ("compact 1/3: transactions: ", "compact 2/3: latest per key: 100%|", "compact 3/3: write: 100%|"):
        assert step in drawn, drawn
    rc, drawn = _on_a_terminal("--quiet", "--engine", "local", "decode", entries, str(tmp_path / "q.parquet"))
    assert rc == 0 and drawn == "", drawn
    run = run_cli("decode", entries, str(tmp_path / "p.parquet"))  # stderr is a pipe: no bar
    assert run.stderr == ""


@pytest.mark.spark
def test_spark_statistics_equal_the_in_process_ones(tmp_path, spark):
    """inspect on Spark (seven jobs over cached data) gives the in-process figures; quantiles are
    approximate there, so only their ends are compared."""
    from dataclasses import asdict

    from pulsar_entries.cli._engines import LocalEngine, SparkEngine

    assert main(["generate", str(tmp_path / "t"), "--entries", "400", "--seed", "4"]) == 0
    src = str(tmp_path / "t" / "entries")
    local, on_spark = asdict(LocalEngine(False).stats(src)), asdict(SparkEngine(False, "local[2]").stats(src))
    for q in ("entry_size_q", "batch_size_q"):
        assert (local[q][0], local[q][-1]) == (on_spark[q][0], on_spark[q][-1]), q
        del local[q], on_spark[q]
    assert local["errors_per_ledger"] and local["transactions"] and local["value_size_hist"]
    assert on_spark == local


def test_report_charts_show_keys_from_the_data_as_text():
    """Keys are the data's: a "$" does not start matplotlib's math text (which failed on an unknown
    command), and markup is escaped in the SVG."""
    import datetime as dt

    keys = [r"a $\undefinedcmd$ b", "<script>alert(1)</script>", "$x^2$"]
    t = dt.datetime(2026, 11, 28, tzinfo=dt.timezone.utc)
    real = pa.table({"publish_time": pa.array([t] * 3, pa.timestamp("us", "UTC")), "key": keys})
    topic = generate_topic(50, seed=1)
    page = render_html(stats_from_arrow(topic.entries, pe.decode(topic.entries)), real=real)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert r">a $\undefinedcmd$ b<" in page and ">$x^2$<" in page

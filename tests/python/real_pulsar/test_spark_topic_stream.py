"""``spark.readStream.format("pulsar")`` against a real Apache Pulsar 4.2.4: producers write
(batches and chunked messages, and through Pulsar's Java client committed and aborted
transactions, over ledger rollovers, and a partition added mid-stream) while a streaming query
writes a Parquet sink; its driver is killed with SIGKILL and restarted from the checkpoint. The
sink then holds exactly what Java Readers receive, once each."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import pulsar_entries as pe
from pulsar_entries._cluster import topic_layout
from pulsar_entries.spark import register

from .conftest import NS, RUN_SH, _java
from .real_pulsar_compare import assert_same_messages
from support.streams import available_now

pytestmark = [pytest.mark.real_pulsar, pytest.mark.spark]

DRIVER = Path(__file__).with_name("stream_driver.py")


def metadata_url(rp: Any) -> str:
    return f"rocksdb:{rp.standalone.metadata_dir}"


class Producer:
    """Batches and chunked messages, ``pause`` seconds apart, on a thread; every send checked."""

    def __init__(self, service_url: str, topic: str, pause: float = 0.01) -> None:
        import pulsar

        self.client = pulsar.Client(service_url, operation_timeout_seconds=30)
        self.topic = topic
        self.pause = pause
        self.halt = threading.Event()
        self.thread: threading.Thread | None = None
        self.errors: list[str] = []
        self.sent = 0
        self.i = 0
        self.producers: list[Any] = []

    def start(self) -> None:
        """New producers (which see the topic's partitions as they are now), sending on a thread."""
        for p in self.producers:
            p.close()
        self.producers = [
            self.client.create_producer(
                self.topic, batching_enabled=True, batching_max_messages=5, batching_max_publish_delay_ms=20
            ),
            self.client.create_producer(self.topic, batching_enabled=False, chunking_enabled=True),
        ]
        self.halt.clear()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.halt.set()
        if self.thread is not None:
            self.thread.join(60)
        for p in self.producers:
            p.flush()

    def _run(self) -> None:
        batched, chunker = self.producers
        while not self.halt.is_set():
            i = self.i
            try:
                batched.send_async(f"m{i}".encode(), self._done, partition_key=f"k{i % 7}")
                self.sent += 1
                if i % 12 == 0:
                    chunker.send((f"big{i}-".encode() * 40_000)[: 150_000 + i], partition_key=f"c{i % 5}")
                    self.sent += 1
            except Exception as e:  # any failure is the test's finding
                self.errors.append(repr(e))
            self.i += 1
            time.sleep(self.pause)

    def _done(self, res: Any, _msg_id: Any) -> None:
        import pulsar

        if res != pulsar.Result.Ok:
            self.errors.append(str(res))

    def close(self) -> None:
        self.stop()
        for p in self.producers:
            p.close()
        self.client.close()


class TxnWriter:
    """Pulsar's Java client writing transactions to the topic (``Corpus txnstream``), each open for
    about a second, every third aborted, until :meth:`stop`; then what it committed and aborted."""

    def __init__(self, rp: Any, topic: str, tmp: Path) -> None:
        self.out, self.flag, self.log = tmp / "txns.json", tmp / "txns.stop", tmp / "txns.log"
        env = dict(os.environ, CORPUS_JAVA_OPTS=f"-Djdk.net.hosts.file={rp.standalone.hosts_path}")
        args = ["corpus", "txnstream", rp.standalone.service_url, rp.standalone.web_url, str(self.out), topic]
        with open(self.log, "ab") as sink:
            self.proc = subprocess.Popen(
                [str(RUN_SH), *args, str(self.flag)], stdout=sink, stderr=sink, env=env, start_new_session=True
            )

    def stop(self) -> dict[str, list[str]]:
        """Ends the last transaction (committed) and the JVM; what was written."""
        self.flag.touch()
        try:
            self.proc.wait(120)
        finally:
            self.kill()
        assert self.proc.returncode == 0, self.log.read_text(errors="replace")[-3000:]
        return json.loads(self.out.read_text())

    def kill(self) -> None:
        """The JVM and its group stopped, if still running (a test that failed before :meth:`stop`)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)


def driver(rp: Any, topic: str, out: Path, ckpt: Path, done: Path, log: Path, *options: str) -> subprocess.Popen[bytes]:
    """The driver in its own session (SIGKILL to its group kills its JVM too), output to ``log``."""
    with open(log, "ab") as sink:
        return subprocess.Popen(
            [sys.executable, str(DRIVER), metadata_url(rp), topic, str(out), str(ckpt), str(done), *options],
            start_new_session=True,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def committed_batches(ckpt: Path) -> int:
    commits = ckpt / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def batch_ends(ckpt: Path) -> list[dict[str, Any]]:
    """Each micro-batch's end offset, from the checkpoint's offset log."""
    out = []
    for p in sorted((ckpt / "offsets").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1):
        if p.name.isdigit():
            out.append(json.loads(p.read_text().splitlines()[-1]))
    return out


def test_a_stream_killed_and_restarted_holds_every_message_once(
    real_pulsar: Any, spark: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    rp = real_pulsar
    name = "stream-live"
    topic = NS + name
    rp.standalone.admin("PUT", f"/persistent/public/default/{name}/partitions", 2)
    out, ckpt, done = tmp_path / "sink", tmp_path / "checkpoint", tmp_path / "done"
    producer = Producer(rp.standalone.service_url, topic)
    producer.start()
    txns = TxnWriter(rp, topic, tmp_path)
    request.addfinalizer(txns.kill)
    log = tmp_path / "driver.log"
    first = driver(rp, topic, out, ckpt, done, log, "maxEntriesPerTrigger=15")
    try:
        deadline = time.monotonic() + 240
        while committed_batches(ckpt) < 4:
            assert first.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "no micro-batch committed in 240 s"
            time.sleep(0.5)
        # A partition is added mid-stream; the stream finds it and reads it from its start.
        rp.standalone.admin("POST", f"/persistent/public/default/{name}/partitions", 3)
        producer.stop()
        producer.start()
        time.sleep(3)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
        time.sleep(3)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(30)
    producer.close()
    written = txns.stop()
    assert producer.errors == [], producer.errors[:5]
    assert written["errors"] == [], written["errors"][:5]
    done.touch()
    # The restarted driver catches up on what was written while it was down in larger micro-batches, as one
    # restarted with a new limit would: the limit is read at each trigger, not kept in the checkpoint.
    second = driver(rp, topic, out, ckpt, done, log, "maxEntriesPerTrigger=200")
    try:
        second.wait(480)
    finally:
        if second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait(30)
    assert second.returncode == 0, log.read_text(errors="replace")[-3000:]

    register(spark)
    got = spark.read.parquet(str(out)).toArrow()
    got = got.sort_by(
        [
            ("partition", "ascending"),
            ("ledger_id", "ascending"),
            ("entry_id", "ascending"),
            ("batch_index", "ascending"),
        ]
    )
    rows = got.to_pylist()
    assert all(r["error"] is None for r in rows), [r["error"] for r in rows if r["error"]][:3]
    specs = [f"{name}-partition-{p}" for p in range(3)]
    truth_path = tmp_path / "truth.json"
    _java(
        ["corpus", "truth", rp.standalone.service_url, rp.standalone.web_url, str(truth_path), *specs],
        tmp_path / "java.log",
        hosts=rp.standalone.hosts_path,
    )
    truth = json.loads(truth_path.read_text())
    total = 0
    for p in range(3):
        mine = [r for r in rows if r["partition"] == p]
        assert_same_messages(truth[f"{name}-partition-{p}"]["messages"], mine)
        total += len(mine)
        # Ledger rollover: the partition spans several ledgers.
        assert len({r["ledger_id"] for r in mine}) > 1
    assert total == producer.sent + len(written["committed"])
    # Chunked messages whose chunks a micro-batch boundary split came out whole, once.
    ends = batch_ends(ckpt)
    spanned = 0
    for r in rows:
        if r["first_chunk_ledger_id"] is None:
            continue
        first_pos = (r["first_chunk_ledger_id"], r["first_chunk_entry_id"])
        last_pos = (r["ledger_id"], r["entry_id"])
        part = f"{topic}-partition-{r['partition']}"
        for end in ends:
            pos = end.get(part)
            if pos and first_pos < (pos["ledgerId"], pos["entryId"]) <= last_pos:
                spanned += 1
                break
    assert spanned > 0
    assert len(ends) > 8
    # Transactions: every committed message once (above: what the Java Readers receive), each with
    # txn_status 'committed', some of the transactions cut by a micro-batch's end; no aborted message.
    assert len(written["committed"]) >= 24 and written["aborted"]
    values = [r["value"] for r in rows]
    assert not set(values) & {v.encode() for v in written["aborted"]}
    in_txns = sorted(r["value"].decode() for r in rows if r["txnid_most_bits"] is not None)
    assert in_txns == sorted(written["committed"])
    txns_at: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    for r in rows:
        if r["txnid_most_bits"] is not None:
            assert r["txn_status"] == "committed", r
            key = (r["partition"], r["txnid_most_bits"], r["txnid_least_bits"])
            txns_at.setdefault(key, []).append((r["ledger_id"], r["entry_id"]))
    cut = 0
    for (p, *_), positions in txns_at.items():
        part = f"{topic}-partition-{p}"
        lo, hi = min(positions), max(positions)
        if any(lo < (e[part]["ledgerId"], e[part]["entryId"]) <= hi for e in ends if part in e):
            cut += 1
    assert cut > 0


def _entries_between(positions: list[tuple[int, int]], start: dict[str, int] | None, end: dict[str, int]) -> int:
    """How many of the topic's entry ``positions`` lie from offset ``start`` to offset ``end``."""
    lo = (start["ledgerId"], start["entryId"]) if start else (-1, -1)
    hi = (end["ledgerId"], end["entryId"])
    return sum(1 for p in positions if lo <= p < hi)


def test_available_now_reads_what_existed_in_batches_capped_by_max_entries(
    real_pulsar: Any, spark: Any, tmp_path: Path
) -> None:
    """``Trigger.AvailableNow`` with ``maxEntriesPerTrigger=3`` on ``py-chunked`` (a known size): every
    micro-batch reads at most 3 entries, as the query's progress shows, and the sink equals the Java Reader."""
    rp = real_pulsar
    register(spark)
    topic = NS + "py-chunked"
    query = available_now(
        spark.readStream.format("pulsar")
        .option("metadataUrl", metadata_url(rp))
        .option("topic", topic)
        .option("maxEntriesPerTrigger", "3")
        .load(),
        tmp_path,
    )
    entries = pe.read_topic(topic, metadata_url=metadata_url(rp))
    positions = list(zip(entries["ledger_id"].to_pylist(), entries["entry_id"].to_pylist()))
    total = len(positions)
    sizes = []
    for p in query.recentProgress:
        src = p["sources"][0]
        # Offsets come as JSON text; the first batch's start is "null" (or absent).
        begin, end = (json.loads(src[k]) if src.get(k) else None for k in ("startOffset", "endOffset"))
        if end is None:
            continue
        sizes.append(_entries_between(positions, begin[topic] if begin else None, end[topic]))
    assert sum(sizes) == total and max(sizes) <= 3 and len(sizes) >= -(-total // 3), sizes
    got = spark.read.parquet(str(tmp_path / "sink")).toArrow()
    got = got.sort_by([("ledger_id", "ascending"), ("entry_id", "ascending"), ("batch_index", "ascending")])
    assert_same_messages(rp.truth["py-chunked"]["messages"], got.to_pylist())


def test_max_messages_per_trigger_caps_each_batch_by_the_brokers_message_index(
    real_pulsar: Any, spark: Any, tmp_path: Path
) -> None:
    """``Trigger.AvailableNow`` with ``maxMessagesPerTrigger`` on ``py-mixed`` (batches of several
    messages; the standalone stamps PIP-70 message indexes): every micro-batch holds at most that many
    messages, counted by the brokers' index, as the query's progress shows, and the sink equals the
    Java Reader."""
    rp = real_pulsar
    register(spark)
    topic = NS + "py-mixed"
    entries = pe.read_topic(topic, metadata_url=metadata_url(rp))
    largest = max(pe.entry_metadata(entries["data"].combine_chunks())["num_messages"].to_pylist())
    cap = 2 * largest + 1
    query = available_now(
        spark.readStream.format("pulsar")
        .option("metadataUrl", metadata_url(rp))
        .option("topic", topic)
        .option("maxMessagesPerTrigger", str(cap))
        .load(),
        tmp_path,
    )
    truth = rp.truth["py-mixed"]["messages"]
    rows = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    # Every row is a message here (no chunks, no transactions): each batch within the cap, and each but the
    # last could not take its next entry (the cut is the most that fits), so it holds more than cap - largest.
    assert sum(rows) == len(truth) and max(rows) <= cap, rows
    assert all(n > cap - largest for n in rows[:-1]), rows
    got = spark.read.parquet(str(tmp_path / "sink")).toArrow()
    got = got.sort_by([("ledger_id", "ascending"), ("entry_id", "ascending"), ("batch_index", "ascending")])
    assert_same_messages(truth, got.to_pylist())


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"startingOffsets": "{oops"}, "option startingOffsets: not 'earliest', 'latest' or JSON"),
        ({"startingOffsets": '{"persistent://public/default/nope": "1:0"}'}, "option startingOffsets: no partition"),
        ({"maxEntriesPerTrigger": "0"}, "option maxEntriesPerTrigger='0': must be at least 1"),
        ({"maxMessagesPerTrigger": "x"}, "option maxMessagesPerTrigger='x': expected an integer"),
        ({"transactionTimeoutMs": "0"}, "option transactionTimeoutMs='0': must be at least 1"),
        ({"endingMessageId": "latest"}, "option endingMessageId is for spark.read, not readStream"),
        ({"startingTime": "yesterday"}, "option startingTime='yesterday'"),
    ],
)
def test_bad_stream_options_are_one_line_on_the_driver(
    real_pulsar: Any, spark: Any, tmp_path: Path, options: dict[str, str], says: str
) -> None:
    register(spark)
    reader = (
        spark.readStream.format("pulsar")
        .option("metadataUrl", metadata_url(real_pulsar))
        .option("topic", NS + "py-chunked")
    )
    for k, v in options.items():
        reader = reader.option(k, v)
    with pytest.raises(Exception, match=says):
        q = reader.load().writeStream.format("noop").option("checkpointLocation", str(tmp_path / "c")).start()
        try:
            q.processAllAvailable()
        finally:
            q.stop()


def test_fail_on_data_loss_when_retention_deletes_unread_ledgers(real_pulsar: Any, spark: Any, tmp_path: Path) -> None:
    """A stream stopped after its first micro-batch; retention then deletes every closed ledger. Restarted from
    its checkpoint it fails with one line naming the lost ledger; with ``failOnDataLoss=false`` it reports the
    loss in an error row and reads on from what is left."""
    import pulsar

    rp = real_pulsar
    name = "stream-loss"
    topic = NS + name
    client = pulsar.Client(rp.standalone.service_url, operation_timeout_seconds=30)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(45):
            producer.send(f"v{i}".encode())
        producer.close()
    finally:
        client.close()
    register(spark)
    out, ckpt = str(tmp_path / "sink"), str(tmp_path / "ckpt")

    def start(trigger: dict[str, Any], **options: str) -> Any:
        reader = spark.readStream.format("pulsar").option("metadataUrl", metadata_url(rp)).option("topic", topic)
        for k, v in options.items():
            reader = reader.option(k, v)
        writer = reader.load().writeStream.format("parquet").option("checkpointLocation", ckpt)
        return writer.trigger(**trigger).start(out)

    first = start({"processingTime": "1 second"}, maxEntriesPerTrigger="5")
    try:
        deadline = time.monotonic() + 120
        while committed_batches(Path(ckpt)) < 1:
            assert time.monotonic() < deadline and first.exception() is None
            time.sleep(0.2)
    finally:
        first.stop()
    read_before = spark.read.parquet(out).count()
    assert 0 < read_before < 45

    before = rp.standalone.admin("GET", f"/persistent/public/default/{name}/internalStats")["ledgers"]
    rp.standalone.admin(
        "POST", f"/persistent/public/default/{name}/retention", {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}
    )
    deadline = time.monotonic() + 60
    while len(rp.standalone.admin("GET", f"/persistent/public/default/{name}/internalStats")["ledgers"]) > 1:
        assert time.monotonic() < deadline, "retention did not trim the topic in 60 s"
        rp.standalone.admin("POST", f"/persistent/public/default/{name}/trim")
        time.sleep(1)
    left = rp.standalone.admin("GET", f"/persistent/public/default/{name}/internalStats")["ledgers"]
    assert len(before) > 2 and len(left) == 1
    # The broker writes the trimmed ledger list to the metadata store after it answers.
    while len(topic_layout(topic, metadata_url=metadata_url(rp)).partitions[0].ledgers) > 1:
        assert time.monotonic() < deadline, "the metadata store kept the trimmed ledgers for 60 s"
        time.sleep(0.5)

    failing = start({"availableNow": True})
    with pytest.raises(Exception, match=r"data loss: .*entries \d+:\d+ up to \d+:0 are gone.*failOnDataLoss=false"):
        failing.awaitTermination(120)
    failing.stop()

    skipping = start({"availableNow": True}, failOnDataLoss="false")
    assert skipping.awaitTermination(120)
    rows = spark.read.parquet(out).toArrow().to_pylist()
    errors = sorted(r["error"] for r in rows if r["error"] is not None)
    # One row per span lost (a batch planned before the loss and re-run reports its part): the spans
    # chain from where the first run stopped to the first entry left.
    spans = [re.search(r"entries (\d+):(\d+) up to (\d+):(\d+) are gone", e) for e in errors]
    assert all(e.startswith(f"data loss: {topic}: ") for e in errors) and all(spans), errors
    chain = sorted((int(m[1]), int(m[2]), int(m[3]), int(m[4])) for m in spans if m)
    for a, b in zip(chain, chain[1:]):
        assert a[2:] == b[:2], chain
    assert chain[-1][2:] == (left[0]["ledgerId"], 0), chain
    values = sorted(int(r["value"][1:]) for r in rows if r["error"] is None)
    current = 45 - sum(led["entries"] for led in before if led["ledgerId"] != left[0]["ledgerId"])
    # What the first run read, then the current ledger's entries: nothing twice.
    assert values == list(range(read_before)) + list(range(45 - current, 45))

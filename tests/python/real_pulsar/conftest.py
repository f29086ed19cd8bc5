"""A real Apache Pulsar 4.2.4 standalone, started once per session, and a corpus written through it.

``real_pulsar`` (RocksDB metadata store) and ``real_pulsar_zk`` (ZooKeeper) each start moto's S3 on
127.0.0.1 and a standalone from the Maven Central jars of ``tests/real_pulsar`` (built by its
``run.sh`` on first use), then write the corpus with real clients through the real broker:

* ``pulsar-client`` (Python/C++): topics ``py-mixed`` (five codecs x batching on/off, keys, null
  values, properties, event times) and ``py-chunked`` (chunked messages);
* Pulsar's Java client (``Corpus produce``): ``java-mixed``, ``java-chunked``, ``java-txn``
  (committed and aborted transactions), ``java-partitioned`` (3 partitions), ``java-tombstoned``
  (every key's last message a tombstone) and ``java-encrypted`` (end-to-end encrypted with an RSA pair the
  tool writes to the working directory; its Readers decrypt with it); and the schema topics
  (``Schemas.java``): ``schema-avro`` (two AVRO versions, then a message no version decodes),
  ``schema-json``, ``schema-int64``, ``schema-kv-inline``, ``schema-kv-separated`` and
  ``schema-protobuf-native`` (two PROTOBUF_NATIVE versions, then a truncated message), whose ground
  truth adds what an ``AUTO_CONSUME`` Reader decodes (``typed_messages``). They are unloaded (their
  ledgers close) but neither compacted nor offloaded.

Then, through the admin REST API: compaction of the keyed topics (waited for), an unload of every
topic (its last ledger closes) and an offload of every closed ledger to the loopback S3 (waited
for). Last, ``Corpus truth`` records what Java Readers receive, plain and ``readCompacted``, the
compacted reader's ``getLastMessageIds``, seek-by-timestamp results and internal-stats.

A test that needs a fixture which cannot start fails; nothing here skips.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from pulsar_entries import offload
from pulsar_entries._standalone import (
    S3_ACCESS_KEY,
    S3_REGION,
    S3_SECRET_KEY,
    MotoServer,
    Standalone,
)

REPO = Path(__file__).resolve().parents[3]
MODULE = REPO / "tests" / "real_pulsar"
RUN_SH = MODULE / "run.sh"
NS = "persistent://public/default/"
BUCKET = "pulsar-offload"
EVENT_TIME_BASE = 1_700_000_000_000
CODECS = ("NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY")
#: pulsar-client's spelling of each codec.
PY_CODEC = {"NONE": "NONE", "LZ4": "LZ4", "ZLIB": "ZLib", "ZSTD": "ZSTD", "SNAPPY": "SNAPPY"}

#: Topics written by the Java tool; ``java-partitioned`` is read per partition.
JAVA_TOPICS = ("java-mixed", "java-chunked", "java-txn", "java-tombstoned", "java-encrypted")
PARTITIONS = tuple(f"java-partitioned-partition-{i}" for i in range(3))
PY_TOPICS = ("py-mixed", "py-chunked")
#: Topics with schemas (Schemas.java), read by typed Readers too.
SCHEMA_TOPICS = (
    "schema-avro",
    "schema-json",
    "schema-int64",
    "schema-kv-inline",
    "schema-kv-separated",
    "schema-protobuf-native",
)
#: Topics compacted by the broker (chunked topics are not: its compacted readers stall on them).
COMPACTED = ("java-mixed", "java-txn", "py-mixed", "java-tombstoned", "java-encrypted", *PARTITIONS)
#: Compacted topics without seek-by-time ground truth (transactions; nothing live; encrypted values).
NO_SEEK = ("java-txn", "java-tombstoned", "java-encrypted")

#: Seconds each phase took, per fixture, shown at the end of the run.
TIMINGS: dict[str, dict[str, float]] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "real_pulsar: needs the real Apache Pulsar standalone fixture (a few minutes; fails if it cannot start)",
    )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for name, phases in TIMINGS.items():
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in phases.items())
        terminalreporter.write_line(f"real Pulsar fixture {name}: {parts}")


# ------------------------------------------------------------------------------------ the fixture


@dataclass
class RealPulsar:
    """A running standalone with its corpus and ground truth."""

    standalone: Standalone
    moto: MotoServer
    workdir: Path
    #: Java ``Corpus produce`` output (producer-side message ids).
    produced: dict[str, Any]
    #: Java ``Corpus truth`` output, per topic (partitions by their own names).
    truth: dict[str, Any]
    #: The ledgers the admin API offloaded, per topic.
    offloaded: dict[str, list[int]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def bucket(self) -> str:
        return BUCKET

    def s3(self) -> pafs.S3FileSystem:
        """pyarrow's S3 filesystem on the loopback moto endpoint."""
        return pafs.S3FileSystem(
            access_key=S3_ACCESS_KEY,
            secret_key=S3_SECRET_KEY,
            region=S3_REGION,
            endpoint_override=f"127.0.0.1:{self.moto.port}",
            scheme="http",
        )

    def offloaded_objects(self) -> dict[int, offload.OffloadedObject]:
        """Every offloaded ledger's objects in the bucket, by ledger id."""
        objects = offload.discover(BUCKET, filesystem=self.s3())
        return {o.ledger_id: o for o in objects if o.ledger_id is not None}

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        return self.standalone.admin(method, path, body)

    def read_ledger(self, ledger_id: int) -> dict[str, Any]:
        """A closed ledger's raw entries, read by BookKeeper's Java client (ZooKeeper mode only):
        ``{"ledger_id", "last_add_confirmed", "digest_type", "custom_metadata", "entries": [bytes]}``."""
        assert self.standalone.zookeeper_port is not None, "read_ledger needs the ZooKeeper-mode standalone"
        out = self.workdir / f"ledger-{ledger_id}.json"
        _java(
            ["corpus", "ledger", str(self.standalone.zookeeper_port), str(ledger_id), str(out)],
            self.workdir / "corpus-java.log",
            hosts=self.standalone.hosts_path,
        )
        got = json.loads(out.read_text())
        got["entries"] = [base64.b64decode(e["data"]) for e in got["entries"]]
        return got

    def read_offloaded(self, ledgers: list[int]) -> pa.Table:
        """The ledgers' entries, read from moto with pulsar-entries' offload reader, in order."""
        objects = self.offloaded_objects()
        missing = [ledger for ledger in ledgers if ledger not in objects]
        assert not missing, f"ledgers {missing} have no offload objects in s3://{BUCKET}/ (found {sorted(objects)})"
        fs = self.s3()
        return pa.concat_tables(
            [offload.read_offloaded_ledger(objects[ledger].data_path, filesystem=fs) for ledger in ledgers]
        )


def _java(args: list[str], log: Path, *, hosts: Path, timeout: float = 600, token: str | None = None) -> None:
    """``run.sh corpus ...``; the JVM resolves names through the standalone's loopback-only hosts file.
    ``token``: the broker requires token authentication (passed in the environment, never argv)."""
    env = dict(os.environ, CORPUS_JAVA_OPTS=f"-Djdk.net.hosts.file={hosts}")
    if token is not None:
        env["CORPUS_AUTH_TOKEN"] = token
    with open(log, "ab") as err:
        proc = subprocess.run([str(RUN_SH), *args], stdout=err, stderr=err, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{RUN_SH} {' '.join(args[:2])} failed with {proc.returncode}; log {log}:\n"
            + log.read_text(errors="replace")[-3000:]
        )


def build_classpath() -> tuple[Path, Path, Path]:
    """``tests/real_pulsar/run.sh build``: (lib dir, offloaders dir, classes dir)."""
    proc = subprocess.run([str(RUN_SH), "build"], capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{RUN_SH} build failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    target = MODULE / "target"
    return target / "lib", target / "offloaders", target / "classes"


def _produce_python(service_url: str) -> dict[str, Any]:
    """``py-mixed`` and ``py-chunked`` through pulsar-client (the C++ client under Python)."""
    import pulsar

    sent: dict[str, list[dict[str, Any]]] = {"py-mixed": [], "py-chunked": []}
    client = pulsar.Client(
        service_url, operation_timeout_seconds=60, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn)
    )
    try:
        producers = []
        for codec in CODECS:
            for batching in (True, False):
                name = f"py-{codec.lower()}-{'batched' if batching else 'single'}"
                producers.append(
                    (
                        name,
                        client.create_producer(
                            NS + "py-mixed",
                            producer_name=name,
                            compression_type=getattr(pulsar.CompressionType, PY_CODEC[codec]),
                            batching_enabled=batching,
                            batching_max_messages=8,
                            batching_max_publish_delay_ms=50,
                        ),
                    )
                )
        results: list[Any] = []
        for name, producer in producers:
            for i in range(20):
                keyed = i % 5 != 4
                kwargs: dict[str, Any] = {}
                if keyed:
                    kwargs["partition_key"] = f"k{i % 7}"
                if i % 3 == 0:
                    kwargs["properties"] = {"i": str(i), "producer": name}
                if i % 2 == 0:
                    kwargs["event_timestamp"] = EVENT_TIME_BASE + i
                value = None if keyed and i % 6 == 5 else f"{name}#{i};".encode() * (1 + i % 4 * 8)
                producer.send_async(value, lambda res, msg_id: results.append((res, msg_id)), **kwargs)
                sent["py-mixed"].append(
                    {"producer": name, "i": i, "key": kwargs.get("partition_key"), "null_value": value is None}
                )
            producer.flush()
        for _, producer in producers:
            producer.close()
        failed = [r for r, _ in results if r != pulsar.Result.Ok]
        if len(results) != len(sent["py-mixed"]) or failed:
            raise RuntimeError(
                f"pulsar-client: {len(results)} of {len(sent['py-mixed'])} sends acknowledged, failures: {failed[:5]}"
            )

        rng = random.Random(7)
        chunkers = [
            client.create_producer(
                NS + "py-chunked",
                producer_name=f"py-chunker-{codec.lower()}",
                compression_type=getattr(pulsar.CompressionType, PY_CODEC[codec]),
                batching_enabled=False,
                chunking_enabled=True,
            )
            for codec in ("NONE", "ZSTD")
        ]
        for i in range(5):
            for p, producer in enumerate(chunkers):
                big = i % 2 == 0
                value = rng.randbytes(140_000 + 9_000 * i) if big else f"small-{p}-{i}".encode() * 3
                producer.send(
                    value,
                    properties={"size": str(len(value))},
                    partition_key=f"c{i % 3}",
                    event_timestamp=EVENT_TIME_BASE + 3000 + i,
                )
                sent["py-chunked"].append({"producer": p, "i": i, "size": len(value)})
        for producer in chunkers:
            producer.close()
    finally:
        client.close()
    return sent


def _wait(what: str, poll: Any, timeout: float, log: Path) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        status = poll()
        state = status.get("status")
        if state == "SUCCESS":
            return status
        if state == "ERROR":
            raise RuntimeError(f"{what} failed: {status}; broker log {log}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} still {state} after {timeout:.0f} s: {status}; broker log {log}")
        time.sleep(0.3)


def _compact(sa: Standalone, topics: tuple[str, ...]) -> None:
    for t in topics:
        sa.admin("PUT", f"/persistent/public/default/{t}/compaction")
    for t in topics:
        _wait(
            f"compaction of {t}",
            lambda t=t: sa.admin("GET", f"/persistent/public/default/{t}/compaction"),
            300,
            sa.log_path,
        )


def _offload(sa: Standalone, topics: tuple[str, ...]) -> dict[str, list[int]]:
    """Unload each topic (its ledger closes; a new, empty one opens on reload), then offload every
    ledger before the new one. Returns the offloaded ledger ids per topic."""
    for t in topics:
        sa.admin("PUT", f"/persistent/public/default/{t}/unload")
    expected: dict[str, list[int]] = {}
    for t in topics:
        stats = sa.admin("GET", f"/persistent/public/default/{t}/internalStats")
        ledgers = [ledger["ledgerId"] for ledger in stats["ledgers"]]
        current = ledgers[-1]
        if stats["currentLedgerEntries"] != 0:
            raise RuntimeError(f"{t}: after unload the current ledger {current} holds entries: {stats}")
        expected[t] = ledgers[:-1]
        sa.admin(
            "PUT", f"/persistent/public/default/{t}/offload", {"ledgerId": current, "entryId": 0, "partitionIndex": -1}
        )
    for t in topics:
        _wait(
            f"offload of {t}", lambda t=t: sa.admin("GET", f"/persistent/public/default/{t}/offload"), 300, sa.log_path
        )
    return expected


def start_real_pulsar(
    name: str, metadata: str, workdir: Path, *, python_clients: bool, config: dict[str, Any] | None = None
) -> RealPulsar:
    timings: dict[str, float] = {}
    TIMINGS[name] = timings
    t0 = time.monotonic()
    lib, offloaders, _ = build_classpath()
    timings["jars"] = time.monotonic() - t0

    moto = MotoServer(workdir / "moto").start()
    sa: Standalone | None = None
    try:
        moto.create_bucket(BUCKET)
        t = time.monotonic()
        sa = Standalone(
            lib,
            workdir / "pulsar",
            offloaders_dir=offloaders,
            metadata=metadata,
            s3_endpoint=moto.endpoint,
            bucket=BUCKET,
            config=config,
        )
        sa.start()
        timings["broker start"] = time.monotonic() - t

        t = time.monotonic()
        java_log = workdir / "corpus-java.log"
        sent = _produce_python(sa.service_url) if python_clients else {}
        produced_path = workdir / "produced.json"
        _java(["corpus", "produce", sa.service_url, sa.web_url, str(produced_path)], java_log, hosts=sa.hosts_path)
        produced = json.loads(produced_path.read_text())
        produced["python"] = sent
        timings["produce"] = time.monotonic() - t

        topics = JAVA_TOPICS + PARTITIONS + (PY_TOPICS if python_clients else ())
        compacted = tuple(c for c in COMPACTED if c in topics)
        t = time.monotonic()
        _compact(sa, compacted)
        timings["compaction"] = time.monotonic() - t

        t = time.monotonic()
        offloaded = _offload(sa, topics)
        timings["offload"] = time.monotonic() - t

        for x in SCHEMA_TOPICS:
            # Their last ledger closes, so every entry is readable outside the broker.
            sa.admin("PUT", f"/persistent/public/default/{x}/unload")

        t = time.monotonic()
        truth_path = workdir / "truth.json"
        # Seek by time on the topics whose every entry is dispatchable and whole (no transactions
        # or chunks), where the broker's answer is an entry position.
        specs = [
            x + (":compacted" if x in compacted else "") + (":seek" if x in compacted and x not in NO_SEEK else "")
            for x in topics
        ] + [x + ":typed" for x in SCHEMA_TOPICS]
        _java(["corpus", "truth", sa.service_url, sa.web_url, str(truth_path), *specs], java_log, hosts=sa.hosts_path)
        truth = json.loads(truth_path.read_text())
        timings["ground truth"] = time.monotonic() - t
        timings["total"] = time.monotonic() - t0
        return RealPulsar(sa, moto, workdir, produced, truth, offloaded, timings)
    except BaseException:
        if sa is not None:
            sa.stop()
        moto.stop()
        raise


@pytest.fixture(scope="session")
def real_pulsar_workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="pulsar-entries-real-pulsar-"))
    yield path
    if os.environ.get("PULSAR_ENTRIES_KEEP_REAL_PULSAR") != "1":
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def real_pulsar(real_pulsar_workdir: Path) -> Iterator[RealPulsar]:
    """The standalone in its default (RocksDB) metadata mode, with the full corpus."""
    rp = start_real_pulsar("rocksdb", "rocksdb", real_pulsar_workdir / "rocksdb", python_clients=True)
    try:
        yield rp
    finally:
        rp.standalone.stop()
        rp.moto.stop()


@pytest.fixture(scope="session")
def real_pulsar_zk(real_pulsar_workdir: Path) -> Iterator[RealPulsar]:
    """The standalone on ZooKeeper (``PULSAR_STANDALONE_USE_ZOOKEEPER=1``), Java corpus only."""
    rp = start_real_pulsar("zookeeper", "zookeeper", real_pulsar_workdir / "zookeeper", python_clients=False)
    try:
        yield rp
    finally:
        rp.standalone.stop()
        rp.moto.stop()

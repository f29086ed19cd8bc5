"""Run a real Apache Pulsar standalone (and a loopback S3 for its offloader) on this machine.

Used by the test suite to hold pulsar-entries against a running Pulsar, and by the CLI
(``pulsar-entries standalone``, the demo's real-Pulsar step). Nothing here needs a Pulsar
distribution: the broker runs from the Maven Central jars in a ``lib`` directory, which
:func:`resolve_lib` fills from the pom shipped in this package (``mvn dependency:copy-dependencies``
into a per-user cache), or ``tests/real_pulsar/run.sh build`` for the tests (with the blob-store
offloader ``tiered-storage-jcloud`` as a ``.nar`` in an ``offloaders`` directory).

Everything binds 127.0.0.1 (ZooKeeper, in ZooKeeper mode, binds all interfaces: it has no option;
it gets a free, unusual port). The JVM resolves host names through a file that maps only loopback
names (``-Djdk.net.hosts.file``), so the broker cannot reach any other host. Processes are
stopped by their PID: SIGTERM, then SIGKILL after a grace period.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from ._servers import (
    LOOPBACK,
    S3_ACCESS_KEY,
    S3_REGION,
    S3_SECRET_KEY,
    MotoServer,
    StandaloneError,
    _http,
    _stop_pid,
    _tail,
    free_port,
    free_ports,
)

__all__ = [
    "LOOPBACK",
    "PULSAR_VERSION",
    "S3_ACCESS_KEY",
    "S3_REGION",
    "S3_SECRET_KEY",
    "MotoServer",
    "Standalone",
    "StandaloneError",
    "default_cache_dir",
    "free_port",
    "missing_tools",
    "resolve_lib",
]

#: The Pulsar release the shipped pom resolves.
PULSAR_VERSION = "4.2.4"
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"

_PIP70_INTERCEPTORS = ",".join(
    [
        "org.apache.pulsar.common.intercept.AppendBrokerTimestampMetadataInterceptor",
        "org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor",
    ]
)

# As Pulsar's own bin/pulsar passes them on Java 17.
_JVM_OPENS = [
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util.zip=ALL-UNNAMED",
    "--add-opens=java.base/sun.net=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.platform=ALL-UNNAMED",
    "--add-opens=java.management/sun.management=ALL-UNNAMED",
    "--add-opens=jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
]

_LOG4J2 = """\
<Configuration status="WARN">
  <Appenders>
    <Console name="out" target="SYSTEM_OUT">
      <PatternLayout pattern="%d{ISO8601} [%t] %-5level %logger{36} - %msg%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="info"><AppenderRef ref="out"/></Root>
  </Loggers>
</Configuration>
"""


#: The bookie's disk thresholds (BookKeeper's ``diskUsageThreshold`` and ``diskUsageWarnThreshold``,
#: read from ``broker.conf``). BookKeeper's default of 0.95 turns a bookie read-only on a large,
#: busy disk that still has gigabytes free (a 250 GiB disk at 96 % has 9 GiB); like Pulsar's own
#: test bookies (``BKCluster``), this one stops taking writes only at 99.9 %.
BOOKIE_DISK_USAGE_THRESHOLD = 0.999
BOOKIE_DISK_USAGE_WARN_THRESHOLD = 0.99

#: Below this much free space a starting standalone is refused: the bookie would soon stop
#: taking writes, and the broker would report only "Not enough non-faulty bookies".
MIN_FREE_BYTES = 2 * 2**30


def missing_tools(tools: tuple[str, ...] = ("java", "mvn")) -> list[str]:
    """The tools of ``tools`` not found on PATH."""
    return [t for t in tools if shutil.which(t) is None]


def default_cache_dir() -> Path:
    """Where :func:`resolve_lib` keeps the jars: ``$XDG_CACHE_HOME/pulsar-entries/pulsar-<version>``
    (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pulsar-entries" / f"pulsar-{PULSAR_VERSION}"


def resolve_lib(
    cache_dir: Path | None = None,
    *,
    mvn: str = "mvn",
    progress: Callable[[str], None] | None = None,
    timeout: float = 1800.0,
) -> Path:
    """The standalone's classpath directory, ``<cache_dir>/lib``: reused when present, else resolved
    from the pom shipped in this package with ``mvn -q -B dependency:copy-dependencies`` (Maven
    Central, through the user's ``~/.m2``; the first run downloads about 330 jars, ~240 MiB). The
    jars land in a temporary directory renamed into place once complete, so an interrupted run
    leaves nothing half-done. Raises :class:`StandaloneError` when Maven fails."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    lib = cache / "lib"
    if any(lib.glob("pulsar-broker-*.jar")):
        return lib
    if shutil.which(mvn) is None:
        raise StandaloneError(f"'{mvn}' not found on PATH (Maven resolves the Pulsar jars)")
    cache.mkdir(parents=True, exist_ok=True)
    if progress is not None:
        progress(
            f"resolving Apache Pulsar {PULSAR_VERSION}'s jars with Maven into {lib} (once; minutes when ~/.m2 is cold)"
        )
    pom = cache / "pom.xml"
    pom.write_bytes(resources.files("pulsar_entries").joinpath("_pulsar/pom.xml").read_bytes())
    staging = Path(tempfile.mkdtemp(prefix="lib-", dir=cache))
    try:
        started = time.monotonic()
        try:
            run = subprocess.run(
                [
                    mvn,
                    "-q",
                    "-B",
                    "-f",
                    str(pom),
                    _DEPENDENCY_PLUGIN,
                    f"-DoutputDirectory={staging}",
                    "-DincludeScope=runtime",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=timeout,
                cwd=cache,
            )
        except subprocess.TimeoutExpired:
            raise StandaloneError(f"mvn did not resolve the Pulsar jars within {timeout:.0f} s") from None
        if run.returncode != 0 or not any(staging.glob("pulsar-broker-*.jar")):
            tail = run.stdout.decode(errors="replace").strip().splitlines()[-20:]
            raise StandaloneError(f"mvn could not resolve the Pulsar jars (exit {run.returncode}):\n" + "\n".join(tail))
        try:
            staging.rename(lib)
        except OSError:
            # Another process resolved it first.
            if not any(lib.glob("pulsar-broker-*.jar")):
                raise
        if progress is not None:
            jars = sum(1 for _ in lib.glob("*.jar"))
            progress(f"resolved {jars} jars in {time.monotonic() - started:.0f}s")
        return lib
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class Standalone:
    """One Apache Pulsar standalone (broker + bookie + metadata store), all on loopback.

    ``metadata`` is ``"rocksdb"`` (the standalone's default store) or ``"zookeeper"``
    (``PULSAR_STANDALONE_USE_ZOOKEEPER=1``); ``metadata_url`` (``zk:127.0.0.1:PORT``) puts broker
    and bookie on a metadata store run outside it instead (``jvm_options`` can carry its
    client's settings, e.g. ZooKeeper's TLS). ``s3_endpoint`` and ``bucket`` configure the
    offloader (driver ``S3``, jclouds' generic S3 API; never ``aws-s3``, which asks a public AWS
    host for the bucket's region). ``config`` entries override the written ``broker.conf``.
    """

    def __init__(
        self,
        lib_dir: Path,
        workdir: Path | None = None,
        *,
        offloaders_dir: Path | None = None,
        metadata: str = "rocksdb",
        s3_endpoint: str | None = None,
        bucket: str = "pulsar-offload",
        max_entries_per_ledger: int = 10,
        max_message_size: int = 65536,
        config: Mapping[str, Any] | None = None,
        java: str = "java",
        heap: str = "1g",
        startup_timeout: float = 240.0,
        extra_classpath: tuple[Path, ...] = (),
        num_bookies: int = 1,
        admin_token: str | None = None,
        metadata_url: str | None = None,
        jvm_options: tuple[str, ...] = (),
    ) -> None:
        if metadata not in ("rocksdb", "zookeeper"):
            raise ValueError(f"metadata must be 'rocksdb' or 'zookeeper', not {metadata!r}")
        if metadata_url is not None and metadata != "rocksdb":
            raise ValueError("metadata_url is a store run outside the standalone: leave metadata as 'rocksdb'")
        self.metadata_url = metadata_url
        self.jvm_options = tuple(jvm_options)
        self.lib_dir = Path(lib_dir).resolve()
        if not any(self.lib_dir.glob("pulsar-broker-*.jar")):
            raise StandaloneError(
                f"no pulsar-broker jar in {self.lib_dir} (resolve_lib() fills one; the tests: tests/real_pulsar/run.sh build)"
            )
        self._own_workdir = workdir is None
        self.workdir = (
            Path(workdir).resolve() if workdir is not None else Path(tempfile.mkdtemp(prefix="pulsar-standalone-"))
        )
        self.offloaders_dir = Path(offloaders_dir).resolve() if offloaders_dir is not None else None
        self.metadata = metadata
        self.s3_endpoint = s3_endpoint
        self.bucket = bucket
        self.max_entries_per_ledger = max_entries_per_ledger
        self.max_message_size = max_message_size
        self.overrides = dict(config or {})
        #: The token this object's own admin calls send (a broker with authentication on).
        self.admin_token = admin_token
        self.java = java
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.extra_classpath = extra_classpath
        if num_bookies < 1 or (num_bookies > 1 and metadata != "zookeeper"):
            raise ValueError("num_bookies must be 1, or more with the ZooKeeper metadata store")
        self.num_bookies = num_bookies
        self.broker_port = self.web_port = self.bookie_port = 0
        self.zookeeper_port: int | None = None
        self._pick_ports()
        self.data_dir = self.workdir / "data"
        self.config_path = self.workdir / "broker.conf"
        self.hosts_path = self.workdir / "hosts"
        self.log_path = self.workdir / "standalone.log"
        self.proc: subprocess.Popen[bytes] | None = None
        #: Seconds from start to ready, once started.
        self.ready_seconds: float | None = None

    # ------------------------------------------------------------------ addresses

    @property
    def service_url(self) -> str:
        return f"pulsar://{LOOPBACK}:{self.broker_port}"

    @property
    def web_url(self) -> str:
        return f"http://{LOOPBACK}:{self.web_port}"

    @property
    def bookkeeper_dir(self) -> Path:
        return self.data_dir / "bookkeeper"

    @property
    def metadata_dir(self) -> Path:
        return self.data_dir / "metadata"

    @property
    def zookeeper_dir(self) -> Path:
        return self.data_dir / "zookeeper"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    # ------------------------------------------------------------------ configuration

    def broker_config(self) -> dict[str, str]:
        """The ``broker.conf`` entries this standalone runs with."""
        conf: dict[str, Any] = {
            "clusterName": "standalone",
            "bindAddress": LOOPBACK,
            "advertisedAddress": LOOPBACK,
            # The bookie reads this too; without it, it binds 0.0.0.0.
            "listeningInterface": "lo",
            "brokerServicePort": self.broker_port,
            "webServicePort": self.web_port,
            "managedLedgerDefaultEnsembleSize": 1,
            "managedLedgerDefaultWriteQuorum": 1,
            "managedLedgerDefaultAckQuorum": 1,
            # Nothing is ever deleted behind the tests' back.
            "defaultRetentionTimeInMinutes": -1,
            "defaultRetentionSizeInMB": -1,
            "brokerDeleteInactiveTopicsEnabled": "false",
            # PIP-70 broker entry metadata, exposed to clients (getIndex / getBrokerPublishTime).
            "brokerEntryMetadataInterceptors": _PIP70_INTERCEPTORS,
            "exposingBrokerEntryMetadataToClientEnabled": "true",
            "transactionCoordinatorEnabled": "true",
            "systemTopicEnabled": "true",
            # Small ledgers, so topics span several.
            "managedLedgerMaxEntriesPerLedger": self.max_entries_per_ledger,
            "managedLedgerMinLedgerRolloverTimeMinutes": 0,
            # An outside reader sees the newest entry.
            "bookkeeperExplicitLacIntervalInMills": 100,
            # Small messages limit, so producers chunk.
            "maxMessageSize": self.max_message_size,
            "allowAutoTopicCreationType": "non-partitioned",
            "webSocketServiceEnabled": "false",
            # The bookie reads these too (see BOOKIE_DISK_USAGE_THRESHOLD).
            "diskUsageThreshold": BOOKIE_DISK_USAGE_THRESHOLD,
            "diskUsageWarnThreshold": BOOKIE_DISK_USAGE_WARN_THRESHOLD,
            "diskUsageLwmThreshold": BOOKIE_DISK_USAGE_WARN_THRESHOLD,
        }
        if self.s3_endpoint is not None:
            if self.offloaders_dir is None:
                raise StandaloneError("an S3 endpoint needs offloaders_dir (the tiered-storage-jcloud .nar)")
            conf.update(
                {
                    "offloadersDirectory": str(self.offloaders_dir),
                    "managedLedgerOffloadDriver": "S3",
                    "managedLedgerOffloadBucket": self.bucket,
                    "managedLedgerOffloadRegion": S3_REGION,
                    "managedLedgerOffloadServiceEndpoint": self.s3_endpoint,
                    "managedLedgerOffloadMaxBlockSizeInBytes": 5 * 1024 * 1024,
                    # Keep the BookKeeper copy, to compare the two.
                    "managedLedgerOffloadDeletionLagMs": 7 * 24 * 3600 * 1000,
                }
            )
        conf.update(self.overrides)
        return {k: str(v) for k, v in conf.items()}

    def _write_files(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.broker_config().items()))
        names = sorted({"localhost", "localhost.localdomain", socket.gethostname(), socket.getfqdn()})
        self.hosts_path.write_text(f"127.0.0.1 {' '.join(names)}\n::1 localhost ip6-localhost ip6-loopback\n")
        (self.workdir / "log4j2.xml").write_text(_LOG4J2)

    def command(self) -> list[str]:
        classpath = os.pathsep.join([*(str(p) for p in self.extra_classpath), f"{self.lib_dir}/*"])
        cmd = [
            self.java,
            "-Xms256m",
            f"-Xmx{self.heap}",
            "-XX:MaxDirectMemorySize=512m",
            f"-Djdk.net.hosts.file={self.hosts_path}",
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.xml'}",
            "-Dzookeeper.admin.enableServer=false",
            "-Djava.net.preferIPv4Stack=true",
            *_JVM_OPENS,
            *self.jvm_options,
            "-cp",
            classpath,
            "org.apache.pulsar.PulsarStandaloneStarter",
            "--config",
            str(self.config_path),
            "--no-functions-worker",
            "--no-stream-storage",
            "--bookkeeper-dir",
            str(self.bookkeeper_dir),
            "--bookkeeper-port",
            str(self.bookie_port),
            "--metadata-dir",
            str(self.metadata_dir),
        ]
        if self.metadata == "zookeeper":
            cmd += ["--zookeeper-dir", str(self.zookeeper_dir), "--zookeeper-port", str(self.zookeeper_port)]
        if self.metadata_url is not None:
            cmd += ["--metadata-url", self.metadata_url]
        if self.num_bookies > 1:
            cmd += ["--num-bookies", str(self.num_bookies)]
        return cmd

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("PULSAR_STANDALONE_USE_ZOOKEEPER", None)
        if self.metadata == "zookeeper":
            env["PULSAR_STANDALONE_USE_ZOOKEEPER"] = "1"
        # The jclouds S3 offloader reads its credentials from these.
        env["ACCESS_KEY_ID"] = S3_ACCESS_KEY
        env["ACCESS_KEY_SECRET"] = S3_SECRET_KEY
        return env

    # ------------------------------------------------------------------ lifecycle

    def _pick_ports(self) -> None:
        self.broker_port = free_port()
        self.web_port = free_port()
        self.bookie_port = free_ports(self.num_bookies)
        self.zookeeper_port = free_port() if self.metadata == "zookeeper" else None

    def start(self, attempts: int = 3) -> Standalone:
        """Starts the standalone and waits until it is ready. A port is picked free and bound by the
        JVM a few seconds later, when another process may have taken it: a start that fails with
        "Address already in use" is retried on new ports, from an empty data directory (bookie
        cookies record their port). Only a first start is retried: data written before is never
        removed."""
        fresh = not self.data_dir.exists() or not any(self.data_dir.iterdir())
        for attempt in range(1, attempts + 1):
            try:
                return self._start_once()
            except StandaloneError:
                lost_port = "Address already in use" in _tail(self.log_path, 200)
                if attempt == attempts or not fresh or not lost_port:
                    raise
                shutil.rmtree(self.data_dir, ignore_errors=True)
                self._pick_ports()
        raise AssertionError("unreachable")

    def _check_disk(self) -> None:
        """A bookie marks its directories full, and refuses every write, once its disk passes
        ``diskUsageThreshold``; the broker then reports only "Not enough non-faulty bookies".
        Say so before starting, while there is still room for a test corpus."""
        usage = shutil.disk_usage(self.data_dir)
        used = (usage.total - usage.free) / usage.total if usage.total else 0.0
        if usage.free < MIN_FREE_BYTES or used > BOOKIE_DISK_USAGE_THRESHOLD:
            raise StandaloneError(
                f"the disk holding {self.data_dir} has {usage.free / 2**30:.1f} GiB free ({used:.1%} full): a "
                f"standalone needs {MIN_FREE_BYTES / 2**30:.0f} GiB, and its bookie refuses writes above "
                f"{BOOKIE_DISK_USAGE_THRESHOLD:.1%} (diskUsageThreshold); free some space first"
            )

    def _start_once(self) -> Standalone:
        self._write_files()
        self._check_disk()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.workdir,
                env=self.environment(),
            )
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self) -> None:
        """Wait until ``GET /admin/v2/brokers/health`` answers ``ok`` and the standalone's
        namespaces and transaction coordinator exist."""
        started = time.monotonic()
        deadline = started + self.startup_timeout
        last = "no answer"
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise StandaloneError(
                    f"Pulsar standalone exited with {self.proc.returncode} before it was ready; "
                    f"log {self.log_path}:\n{_tail(self.log_path)}"
                )
            try:
                missing = self._not_ready()
                if missing is None:
                    self.ready_seconds = time.monotonic() - started
                    return
                last = missing
            except (OSError, ValueError) as e:
                last = str(e)
            if time.monotonic() > deadline:
                raise StandaloneError(
                    f"Pulsar standalone not healthy after {self.startup_timeout:.0f} s ({last}); "
                    f"log {self.log_path}:\n{_tail(self.log_path)}"
                )
            time.sleep(0.5)

    def _not_ready(self) -> str | None:
        """None when ready, else what is still missing. The standalone answers its health check
        before it has created the ``public/default`` namespace and the transaction coordinator's
        topic, so those are waited for too."""
        status, body = _http("GET", f"{self.web_url}/admin/v2/brokers/health", timeout=10, token=self.admin_token)
        if status != 200 or body.strip() != b"ok":
            return f"health: HTTP {status}: {body[:200]!r}"
        status, body = _http("GET", f"{self.web_url}/admin/v2/namespaces/public", timeout=10, token=self.admin_token)
        if status != 200 or "public/default" not in json.loads(body):
            return f"namespaces of public: HTTP {status}: {body[:200]!r}"
        if self.broker_config().get("transactionCoordinatorEnabled") == "true":
            path = "/admin/v2/persistent/pulsar/system/transaction_coordinator_assign/partitions"
            status, body = _http("GET", f"{self.web_url}{path}", timeout=10, token=self.admin_token)
            if status != 200 or json.loads(body).get("partitions", 0) < 1:
                return f"transaction coordinator topic: HTTP {status}: {body[:200]!r}"
        return None

    def stop(self, grace: float = 30.0) -> None:
        _stop_pid(self.proc, grace)

    def cleanup(self) -> None:
        """Stop, and delete the work directory if this object created it."""
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Standalone:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ admin REST

    def admin(self, method: str, path: str, body: Any = None, timeout: float = 60) -> Any:
        """Call the admin REST API (``path`` below ``/admin/v2``); JSON in, JSON (or text) out."""
        data = None if body is None else json.dumps(body).encode()
        status, raw = _http(
            method, f"{self.web_url}/admin/v2{path}", body=data, timeout=timeout, token=self.admin_token
        )
        if status >= 300:
            raise StandaloneError(f"{method} /admin/v2{path}: HTTP {status}: {raw[:500]!r} (log {self.log_path})")
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

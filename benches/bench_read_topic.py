"""Reading a topic from the bookie: ``pulsar_entries.read_topic`` + ``decode`` against a Java
Reader and a pulsar-client Reader draining the same topic through the broker, in one run.

    . .venv/bin/activate && python benches/bench_read_topic.py [--messages 200000] [--rounds 7]

Starts one real Apache Pulsar 4.2.4 standalone (ZooKeeper metadata store, one bookie, all on
127.0.0.1; the jars of ``tests/real_pulsar``, built by its ``run.sh`` on first use), writes one
topic with Pulsar's Java producer (``ReaderBench produce``: seeded JSON-like values of
``--value-bytes`` bytes, batches of up to ``--batch`` messages, LZ4; the broker rolls its ledger
every ``--entries-per-ledger`` entries), unloads it (its last ledger closes), then times, each
side single-threaded on the reading end:

* ``ours``: ``pe.read_topic(topic, metadata_url="zk:...")`` (layout from ZooKeeper, entries from
  the bookie over BookKeeper's v2 protocol, pipelined) then ``pe.decode`` of the entries;
* ``bookie read``: ``pe.read_topic`` alone, the bookie's read rate as our client sees it (what
  bounds ``ours``);
* ``decode``: ``pe.decode`` alone, on entries read before the round;
* with ``--depths 1,8``: the bookie read again with that many reads in flight per connection
  (``read_topic``'s default is 64), to see what pipelining buys;
* ``java reader``: a Java ``Reader`` from the earliest position through the broker (``ReaderBench
  serve``, one JVM kept warm; ``readNext`` on one thread, every value copied to a ``byte[]``; the
  client has one IO and one listener thread);
* ``pulsar-client``: the Python client's Reader (``read_next``, ``msg.data()``; one IO and one
  listener thread), in this process.

Every side is checked in every round against the producer's totals (messages, value bytes) and
the topic's entry count, outside its timing. ``--warmup`` untimed rounds of every side come
first, then ``--rounds`` timed ones, each in a rotated order. Rates use the topic's totals:
entries/s, messages/s, MB/s of message values (1 MB = 1e6 bytes); "stored MB/s" uses the entries'
bytes as the bookie stores them (compressed). Ratios are per round, ours÷Java, then median
[min–max]. CPU seconds (medians, from ``/proc``): the reading process (this one; the JVM for the
Java reader), all threads, and of it the kernel's share (page faults on fresh memory show
there); the standalone's JVM (broker + bookie + ZooKeeper); and their sum. On a loaded machine,
wall times mostly measure the share of the cores each side got.

Servers are stopped by PID at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import pulsar_entries as pe
from pulsar_entries import _cluster, _native
from pulsar_entries._standalone import Standalone

REPO = Path(__file__).resolve().parents[1]
MODULE = REPO / "tests" / "real_pulsar"
RUN_SH = MODULE / "run.sh"
TOPIC = "persistent://public/default/reader-bench"


@dataclass
class Round:
    messages: int
    value_bytes: int
    entries: int
    seconds: float
    client_cpu: float
    client_sys: float
    server_cpu: float


@dataclass
class Expected:
    messages: int
    value_bytes: int
    entries: int
    stored_bytes: int


def sh(cmd: str) -> str:
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.rstrip()
    except (OSError, subprocess.TimeoutExpired) as e:  # pragma: no cover - depends on the machine
        return f"({cmd}: {e})"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def proc_cpu(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process, all its threads, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def proc_cpu_seconds(pid: int) -> float:
    return sum(proc_cpu(pid))


def build() -> tuple[Path, Path]:
    proc = subprocess.run([str(RUN_SH), "build"], capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{RUN_SH} build failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return MODULE / "target" / "lib", MODULE / "target" / "classes"


def java_cmd(lib: Path, classes: Path, sa: Standalone, *args: str) -> list[str]:
    return [
        "java",
        "-Xms512m",
        "-Xmx1g",
        f"-Djdk.net.hosts.file={sa.hosts_path}",
        f"-Dlog4j2.configurationFile={MODULE / 'tool-log4j2.xml'}",
        "-cp",
        f"{classes}{os.pathsep}{lib}/*",
        "io.pulsarentries.realpulsar.ReaderBench",
        *args,
    ]


class JavaReader:
    """``ReaderBench serve``: one warm JVM draining the topic on request."""

    def __init__(self, cmd: list[str], log: Path) -> None:
        self._log = open(log, "ab")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1
        )
        line = self._line()
        if line != "ready":
            raise RuntimeError(f"ReaderBench serve said {line!r}; log {log}")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"ReaderBench serve exited ({self.proc.poll()}); log {self._log.name}")
        return line.strip()

    def drain(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("drain\n")
        self.proc.stdin.flush()
        got: dict[str, Any] = json.loads(self._line())
        if got.get("more") or got.get("timed_out"):
            raise RuntimeError(f"Java reader: {got}")
        return got

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=30)
        self._log.close()


def value_bytes(decoded: pa.Table) -> int:
    total = pc.sum(pc.binary_length(decoded["value"])).as_py()
    return int(total or 0)


def check(side: str, got: Round, want: Expected) -> None:
    have = (got.messages, got.value_bytes, got.entries)
    need = (want.messages, want.value_bytes, want.entries)
    if have != need:
        raise RuntimeError(f"{side}: (messages, value bytes, entries) = {have}, expected {need}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--value-bytes", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=100, help="messages per batch at most")
    ap.add_argument("--entries-per-ledger", type=int, default=400, help="the broker's managedLedgerMaxEntriesPerLedger")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=3, help="untimed rounds of every side first")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--depths",
        default="",
        help="comma-separated pipeline depths: extra 'bookie read' sides with that many reads in flight (default 64)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, data)")
    args = ap.parse_args()
    if args.rounds < 3:
        ap.error("--rounds must be at least 3")

    import pulsar

    machine = {
        "cpu": cpu_model(),
        "nproc": sh("nproc"),
        "free -h": sh("free -h"),
        "uptime (start)": sh("uptime"),
        "python": platform.python_version(),
        "java": sh("java -version 2>&1 | head -1"),
    }
    lib, classes = build()
    workdir = Path(tempfile.mkdtemp(prefix="bench-read-topic-"))
    sa = Standalone(
        lib,
        workdir / "pulsar",
        metadata="zookeeper",
        max_entries_per_ledger=args.entries_per_ledger,
        max_message_size=5 * 1024 * 1024,
    )
    java: JavaReader | None = None
    client: Any = None
    try:
        t = time.monotonic()
        sa.start()
        print(f"standalone ready in {time.monotonic() - t:.1f} s (pid {sa.pid}, work dir {workdir})", flush=True)
        java_log = workdir / "reader-bench-java.log"
        produced_raw = subprocess.run(
            java_cmd(
                lib,
                classes,
                sa,
                "produce",
                sa.service_url,
                TOPIC,
                str(args.messages),
                str(args.value_bytes),
                str(args.batch),
                str(args.seed),
            ),
            stdout=subprocess.PIPE,
            stderr=open(java_log, "ab"),  # noqa: SIM115 - the child holds it
            text=True,
            timeout=3600,
            check=True,
        ).stdout
        produced = json.loads(produced_raw.strip().splitlines()[-1])
        print(
            f"produced {produced['messages']:,} messages, {produced['value_bytes'] / 1e6:.1f} MB of values "
            f"in {produced['seconds']:.1f} s",
            flush=True,
        )
        path = TOPIC.removeprefix("persistent://")
        sa.admin("PUT", f"/persistent/{path}/unload")
        stats = sa.admin("GET", f"/persistent/{path}/internalStats")
        ledgers = [led for led in stats["ledgers"] if led.get("entries", 0) > 0]
        url = f"zk:127.0.0.1:{sa.zookeeper_port}"
        server_pid = sa.pid
        assert server_pid is not None

        # The reference read: the topic's entries and totals as stored.
        entries = pe.read_topic(TOPIC, metadata_url=url)
        errors = entries.filter(entries["error"].is_valid())
        if errors.num_rows:
            raise RuntimeError(f"read_topic gave error rows: {errors.slice(0, 3).to_pylist()}")
        want = Expected(
            messages=produced["messages"],
            value_bytes=produced["value_bytes"],
            entries=entries.num_rows,
            stored_bytes=int(pc.sum(pc.binary_length(entries["data"])).as_py()),
        )
        if sum(led["entries"] for led in ledgers) != want.entries:
            raise RuntimeError(f"internal stats count {sum(led['entries'] for led in ledgers)} entries, read {want}")
        print(
            f"topic: {want.entries:,} entries in {len(ledgers)} ledgers, {want.stored_bytes / 1e6:.1f} MB stored",
            flush=True,
        )
        kept = entries.drop_columns(["error"])

        java = JavaReader(
            java_cmd(lib, classes, sa, "serve", sa.service_url, TOPIC, str(want.messages)), workdir / "java-serve.log"
        )
        client = pulsar.Client(
            sa.service_url,
            io_threads=1,
            message_listener_threads=1,
            operation_timeout_seconds=60,
            logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
        )

        def timed(work: Callable[[], tuple[int, int, int]]) -> Round:
            s0 = proc_cpu_seconds(server_pid)
            u0, k0 = proc_cpu(os.getpid())
            t0 = time.perf_counter()
            result = work()
            seconds = time.perf_counter() - t0
            u1, k1 = proc_cpu(os.getpid())
            return Round(
                *result,
                seconds=seconds,
                client_cpu=u1 - u0 + k1 - k0,
                client_sys=k1 - k0,
                server_cpu=proc_cpu_seconds(server_pid) - s0,
            )

        def ours() -> Round:
            box: list[Any] = []

            def work() -> tuple[int, int, int]:
                table = pe.read_topic(TOPIC, metadata_url=url)
                box.append(table)
                box.append(pe.decode(table.drop_columns(["error"])))
                return 0, 0, 0

            r = timed(work)
            table, decoded = box
            r.entries, r.messages, r.value_bytes = table.num_rows, decoded.num_rows, value_bytes(decoded)
            return r

        def bookie_read() -> Round:
            box: list[Any] = []

            def work() -> tuple[int, int, int]:
                box.append(pe.read_topic(TOPIC, metadata_url=url))
                return 0, 0, 0

            r = timed(work)
            (table,) = box
            if not table.equals(entries):
                raise RuntimeError("bookie read: the entries differ from the reference read")
            r.entries, r.messages, r.value_bytes = want.entries, want.messages, want.value_bytes
            return r

        def bookie_read_at(depth: int) -> Callable[[], Round]:
            def side() -> Round:
                box: list[Any] = []

                def work() -> tuple[int, int, int]:
                    store = _cluster.open_store(url)
                    try:
                        layout = _cluster.resolve_topic(TOPIC, store)
                    finally:
                        store.close()
                    reader = _native.BookieReader(
                        layout.bookies, options=_native.BookieClientOptions(pipeline_depth=depth)
                    )
                    box.append(pa.concat_tables(list(_cluster.iter_layout(layout, reader=reader))))
                    return 0, 0, 0

                r = timed(work)
                (table,) = box
                if not table.equals(entries):
                    raise RuntimeError(f"bookie read at depth {depth}: the entries differ from the reference read")
                r.entries, r.messages, r.value_bytes = want.entries, want.messages, want.value_bytes
                return r

            return side

        def decode_alone() -> Round:
            box: list[Any] = []

            def work() -> tuple[int, int, int]:
                box.append(pe.decode(kept))
                return 0, 0, 0

            r = timed(work)
            (decoded,) = box
            r.entries, r.messages, r.value_bytes = kept.num_rows, decoded.num_rows, value_bytes(decoded)
            return r

        def java_reader() -> Round:
            assert java is not None
            s0 = proc_cpu_seconds(server_pid)
            u0, k0 = proc_cpu(java.proc.pid)
            got = java.drain()
            u1, k1 = proc_cpu(java.proc.pid)
            return Round(
                messages=got["messages"],
                value_bytes=got["value_bytes"],
                entries=got["entries"],
                seconds=got["seconds"],
                client_cpu=u1 - u0 + k1 - k0,
                client_sys=k1 - k0,
                server_cpu=proc_cpu_seconds(server_pid) - s0,
            )

        def pulsar_client() -> Round:
            def work() -> tuple[int, int, int]:
                reader = client.create_reader(TOPIC, pulsar.MessageId.earliest, receiver_queue_size=1000)
                n = size = n_entries = 0
                last = (-1, -1)
                while n < want.messages:
                    msg = reader.read_next(timeout_millis=30_000)
                    size += len(msg.data())
                    n += 1
                    mid = msg.message_id()
                    pos = (mid.ledger_id(), mid.entry_id())
                    if pos != last:
                        n_entries += 1
                        last = pos
                more = reader.has_message_available()
                reader.close()
                if more:
                    raise RuntimeError("pulsar-client: the broker has messages past the producer's count")
                return n, size, n_entries

            return timed(work)

        sides: dict[str, Callable[[], Round]] = {
            "ours (read_topic + decode)": ours,
            "bookie read (read_topic alone)": bookie_read,
            "decode alone": decode_alone,
            "java reader (broker)": java_reader,
            "pulsar-client reader (broker)": pulsar_client,
        }
        for depth in (int(d) for d in args.depths.split(",") if d.strip()):
            sides[f"bookie read, pipeline depth {depth}"] = bookie_read_at(depth)
        names = list(sides)
        results: dict[str, list[Round]] = {n: [] for n in names}
        for r in range(args.warmup + args.rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            label = f"warm-up {r + 1}" if r < args.warmup else f"round {r - args.warmup + 1}"
            line = []
            for name in order:
                got = sides[name]()
                check(name, got, want)
                if r >= args.warmup:
                    results[name].append(got)
                short = f"depth-{name.rsplit(' ', 1)[1]}" if "depth" in name else name.split(" ")[0]
                line.append(f"{short} {got.seconds:.2f} s")
            print(f"{label}: " + ", ".join(line), flush=True)
        machine["uptime (end)"] = sh("uptime")
        report(args, machine, produced, want, len(ledgers), results)
    finally:
        if client is not None:
            client.close()
        if java is not None:
            java.close()
        sa.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} [{format(min(values), fmt)}–{format(max(values), fmt)}]"


def report(
    args: argparse.Namespace,
    machine: dict[str, str],
    produced: dict[str, Any],
    want: Expected,
    n_ledgers: int,
    results: dict[str, list[Round]],
) -> None:
    print()
    print(f"Machine: {machine['cpu']}, nproc {machine['nproc']}, Python {machine['python']}, {machine['java']}")
    print("free -h:")
    print(machine["free -h"])
    print(f"load at start: {machine['uptime (start)']}")
    print(f"load at end:   {machine['uptime (end)']}")
    print(
        f"Topic: {want.messages:,} messages of {args.value_bytes} B (JSON-like, seed {args.seed}), batches of "
        f"<= {args.batch}, LZ4: {want.entries:,} entries in {n_ledgers} ledgers; values {want.value_bytes / 1e6:.1f} MB, "
        f"stored {want.stored_bytes / 1e6:.1f} MB; produced in {produced['seconds']:.1f} s. "
        f"{args.rounds} timed rounds after {args.warmup} warm-up rounds; median [min–max]."
    )
    print()
    java = results["java reader (broker)"]
    print(
        "| side | wall s | entries/s | messages/s | MB/s (values) | stored MB/s | ÷ Java reader "
        "| reader CPU s (of it system) | server CPU s | total CPU s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, rounds in results.items():
        secs = [x.seconds for x in rounds]
        ratios = [j.seconds / x.seconds for x, j in zip(rounds, java)]
        print(
            f"| {name} | {spread(secs, '.2f')} | {want.entries / statistics.median(secs):,.0f} | "
            f"{spread([want.messages / s for s in secs], ',.0f')} | "
            f"{spread([want.value_bytes / 1e6 / s for s in secs], ',.1f')} | "
            f"{want.stored_bytes / 1e6 / statistics.median(secs):,.1f} | {spread(ratios, '.2f')}x | "
            f"{statistics.median(x.client_cpu for x in rounds):.2f} "
            f"({statistics.median(x.client_sys for x in rounds):.2f}) | "
            f"{statistics.median(x.server_cpu for x in rounds):.2f} | "
            f"{statistics.median(x.client_cpu + x.server_cpu for x in rounds):.2f} |"
        )


if __name__ == "__main__":
    sys.exit(main())

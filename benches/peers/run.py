"""Peer benchmark: our decoder against Apache Pulsar 4.2.4's own Java decode path.

    .venv/bin/python benches/peers/run.py [--rounds 7] [--target-s 0.3] [--no-pulsar-client]

Builds what it needs (the Java interop harness's classpath, ``PeerBench.java`` beside it, the Rust
side ``benches/peers/ours.rs`` with the bench profile), writes the four corpora once to files
(``target/peers/corpus``; kept when their parameters are unchanged), then drives every side as a
long-lived process over the same files:

* ``java``: Pulsar's path per entry -- ``Commands.skipBrokerEntryMetadataIfExist``, the CRC32C check,
  ``parseMessageMetadata``, the codec's ``decode``, ``deSerializeSingleMessageInBatch`` per record, and
  per message the key, the properties (a map), the event time and the value copied to a ``byte[]``
  (projected: the key, the value and the publish time only);
* ``rust``: ``Decoder`` to Arrow (all 36 columns, or ``Decoder::project`` to the six projected ones);
* ``python``: ``pulsar_entries.decode`` of an entry table (``columns=`` when projected);
* ``pulsar-client``: ``MessageBatch.parse_from`` on the batch payloads (uncompressed first by
  python-lz4 / zstandard), reading every message's key, properties, event time and data -- with no
  checksum and no metadata parse (the payloads are located before timing), so a lower bound for it;
* floors (Rust): ``memcpy`` of every entry, ``crc32c`` over every entry, ``codec`` = every payload
  decompressed alone, ``parse`` = every entry checksummed, its metadata parsed, its payload
  decompressed and split into records (the work before any output), ``values`` = ``parse`` plus every
  value copied with its offset into reused buffers (the ``value`` column alone).

Every side first reproduces the same totals (messages, value bytes, key bytes, properties, CRC-32 of
all values, in entry order); the script stops if they differ. Then the rounds: each round times every
side on every corpus and column set, in an order rotated per round; Java is warmed up first. Each
measurement repeats the whole corpus enough times for ~``--target-s`` seconds. Ratios are Java's
time / ours per round (> 1: ours is faster), by process CPU time and by wall time; the table gives
their median and range over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "target" / "peers"
JAVA_HARNESS = ROOT / "tests" / "interop" / "java"
PROJECTION = ["ledger_id", "entry_id", "batch_index", "key", "value", "publish_time"]
CORPUS_VERSION = 1

# name: (description, codec, messages per entry, value size range, key, properties, broker prefix, entries)
CORPORA: dict[str, tuple[str, str, int, tuple[int, int], bool, int, bool, int]] = {
    "lz4_b100": (
        "LZ4, batches of 100, 1 KB keyed values + 2 properties + broker prefix",
        "lz4",
        100,
        (800, 1200),
        True,
        2,
        True,
        200,
    ),
    "none_b1000": (
        "uncompressed, batches of 1,000, 100 B values, no key",
        "none",
        1000,
        (80, 120),
        False,
        0,
        False,
        100,
    ),
    "zstd_b10": ("ZSTD, batches of 10, 10 KB values", "zstd", 10, (9000, 11000), False, 0, False, 200),
    "single": (
        "uncompressed single-message entries, 1 KB, key + 1 property",
        "none",
        1,
        (800, 1200),
        True,
        1,
        False,
        20000,
    ),
}

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "sensor",
    "temperature",
    "ok",
    "warn",
    "error",
    "user",
    "order",
    "payment",
    "eu-west-1",
    "us-east-2",
    "true",
    "false",
    "null",
    "checkout",
]


def json_value(rng: random.Random, n: int) -> bytes:
    """A JSON-like value of exactly ``n`` bytes (LZ4 ~2.3:1, as benches/bench_decode.py)."""
    parts = [
        '{"id":%d,"ts":%d,"user":"u%d","events":['
        % (rng.randrange(10**9), 1_700_000_000_000 + rng.randrange(10**8), rng.randrange(10**5))
    ]
    size = len(parts[0])
    while size < n:
        p = '{"k":"%s","v":%d,"s":"%s"},' % (rng.choice(WORDS), rng.randrange(10**6), rng.choice(WORDS))
        parts.append(p)
        size += len(p)
    return "".join(parts).encode()[:n]


def write_corpora() -> dict[str, Path]:
    import pulsar_entries as pe

    OUT.joinpath("corpus").mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, spec in CORPORA.items():
        _, codec, per_entry, (lo, hi), keyed, props, prefix, entries = spec
        path = OUT / "corpus" / f"{name}.bin"
        stamp = path.with_suffix(".json")
        meta = {"version": CORPUS_VERSION, "spec": list(spec)}
        paths[name] = path
        if path.exists() and stamp.exists() and json.loads(stamp.read_text()) == meta:
            continue
        rng = random.Random(f"peers-{name}")
        with path.open("wb") as f:
            for e in range(entries):
                msgs: list[dict[str, Any]] = []
                for i in range(per_entry):
                    m: dict[str, Any] = {"value": json_value(rng, rng.randint(lo, hi))}
                    if keyed:
                        m["key"] = f"user-{rng.randrange(10**5)}"
                        m["event_time"] = 1_700_000_000_000 + e * 1000 + i
                    if props:
                        m["properties"] = {f"prop{j}": f"v{rng.randrange(1000)}" for j in range(props)}
                    msgs.append(m)
                data = pe.encode_entry(
                    msgs,
                    batch=per_entry > 1,
                    compression=codec,
                    producer_name="peer-bench",
                    sequence_id=e * per_entry,
                    publish_time=1_700_000_000_000 + e,
                    broker_timestamp=(1_700_000_000_500 + e) if prefix else None,
                    broker_index=(e + 1) * per_entry - 1 if prefix else None,
                )
                f.write(struct.pack(">I", len(data)))
                f.write(data)
        stamp.write_text(json.dumps(meta))
    return paths


def read_corpus(path: Path) -> list[bytes]:
    raw = path.read_bytes()
    out, at = [], 0
    while at < len(raw):
        (n,) = struct.unpack_from(">I", raw, at)
        out.append(raw[at + 4 : at + 4 + n])
        at += 4 + n
    return out


# ---------------------------------------------------------------- Python sides (run as servers)


def serve_python(kind: str) -> None:
    """The ``python`` (pulsar_entries.decode) or ``pulsar-client`` side, on stdin/stdout."""
    import pyarrow as pa

    import pulsar_entries as pe

    corpora: dict[str, Any] = {}
    keep = 0

    def decode(c: Any, proj: bool) -> Any:
        if proj:
            return pe.decode(c, columns=PROJECTION)
        return pe.decode(c)

    def pc_prepare(entries: list[bytes]) -> list[tuple[str, bytes, int, int]]:
        out = []
        for data in entries:
            info = pe.parse_entry(data)
            md = info["metadata"]
            codec = str(md.get("compression", "none")).lower()
            if codec not in ("none", "lz4", "zstd"):
                raise SystemExit(f"pulsar-client side: codec {codec} not handled")
            out.append((codec, info["payload"], md.get("uncompressed_size", 0), md.get("num_messages_in_batch", 0)))
        return out

    def pc_decode(prepared: list[tuple[str, bytes, int, int]], crc: list[int] | None) -> tuple[int, ...]:
        import lz4.block
        import pulsar
        import zstandard

        zd = zstandard.ZstdDecompressor()
        messages = values = keys = props = 0
        for i, (codec, payload, size, n) in enumerate(prepared):
            if codec == "lz4":
                payload = lz4.block.decompress(payload, uncompressed_size=size)
            elif codec == "zstd":
                payload = zd.decompress(payload, max_output_size=size)
            # The MessageBatch must outlive its messages (they point into it).
            holder = pulsar.MessageBatch().with_message_id(pulsar.MessageId(-1, 1, i, -1))
            for m in holder.parse_from(payload, n):
                v = m.data()
                k = m.partition_key()
                p = m.properties()
                m.event_timestamp()
                messages += 1
                values += len(v)
                keys += len(k.encode())
                props += len(p)
                if crc is not None:
                    crc[0] = zlib.crc32(v, crc[0])
        return messages, values, keys, props

    for line in sys.stdin:
        w = line.split()
        if w[0] == "load":
            entries = read_corpus(Path(w[2]))
            if kind == "python":
                corpora[w[1]] = pe.entries_table(entries, ledger_id=1)
            else:
                corpora[w[1]] = pc_prepare(entries)
            reply = f"ok {len(entries)}"
        elif w[0] == "check":
            proj = w[2] == "proj"
            if kind == "python":
                t = decode(corpora[w[1]], proj)
                assert t.column_names == (PROJECTION if proj else t.column_names)
                if not proj:
                    assert t["error"].null_count == t.num_rows, "error rows"
                crc = 0
                vb = 0
                for chunk in t["value"].chunks:
                    for v in chunk.to_pylist():
                        vb += len(v)
                        crc = zlib.crc32(v, crc)
                kb = sum(len(k.encode()) for k in t["key"].to_pylist() if k is not None)
                props = -1 if proj else sum(len(p) for p in t["properties"].to_pylist() if p is not None)
                reply = f"totals {t.num_rows} {vb} {kb} {props} {crc}"
            else:
                crc_box = [0]
                m, v, k, p = pc_decode(corpora[w[1]], crc_box)
                reply = f"totals {m} {v} {k} {-1 if proj else p} {crc_box[0]}"
        elif w[0] == "time":
            c, proj, reps = corpora[w[1]], w[2] == "proj", int(w[3])
            cpu0, wall0 = time.process_time_ns(), time.perf_counter_ns()
            for _ in range(reps):
                if kind == "python":
                    keep += decode(c, proj).num_rows
                else:
                    keep += pc_decode(c, None)[0]
            wall = time.perf_counter_ns() - wall0
            reply = f"time {time.process_time_ns() - cpu0} {wall}"
        elif w[0] == "quit":
            break
        else:
            raise SystemExit(f"unknown command {line!r}")
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()
    del pa


# ---------------------------------------------------------------- driver


class Side:
    def __init__(self, name: str, argv: list[str]):
        self.name = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)

    def ask(self, line: str) -> list[str]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().split()
        if not reply:
            raise SystemExit(f"{self.name}: no reply to {line!r} (exit {self.proc.poll()})")
        return reply

    def time(self, corpus: str, mode: str, reps: int) -> tuple[float, float]:
        _, cpu, wall = self.ask(f"time {corpus} {mode} {reps}")
        return int(cpu) / reps / 1e6, int(wall) / reps / 1e6

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def build() -> tuple[list[str], list[str]]:
    env = dict(os.environ)
    subprocess.run(["bash", str(JAVA_HARNESS / "run.sh"), "build"], check=True, cwd=ROOT)
    classes = OUT / "java"
    classes.mkdir(parents=True, exist_ok=True)
    cp = f"{JAVA_HARNESS / 'target' / 'classes'}:{JAVA_HARNESS / 'target' / 'lib'}/*"
    src = ROOT / "benches" / "peers" / "java" / "PeerBench.java"
    if (
        not (classes / "PeerBench.class").exists()
        or src.stat().st_mtime > (classes / "PeerBench.class").stat().st_mtime
    ):
        subprocess.run(["javac", "-d", str(classes), "-cp", cp, str(src)], check=True)
    out = subprocess.run(
        ["cargo", "bench", "-p", "pulsar-entries-core", "--bench", "peers", "--no-run", "--message-format=json"],
        check=True,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    exe = [
        json.loads(line)["executable"]
        for line in out.splitlines()
        if '"executable"' in line
        and json.loads(line).get("executable")
        and json.loads(line)["target"]["name"] == "peers"
    ]
    if not exe:
        raise SystemExit("cargo did not report the peers bench executable")
    java = ["java", "-Xms2g", "-Xmx2g", "-cp", f"{classes}:{cp}", "PeerBench"]
    return java, [exe[0]]


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f}x ({min(xs):.2f}–{max(xs):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--target-s", type=float, default=0.3, help="seconds per measurement (Java, all columns)")
    ap.add_argument("--warmup-s", type=float, default=8.0, help="Java warm-up per corpus and column set")
    ap.add_argument("--no-pulsar-client", action="store_true")
    ap.add_argument("--corpora", default=",".join(CORPORA))
    ap.add_argument("--serve", choices=("python", "pulsar-client"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve_python(args.serve)
        return

    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load0 = os.getloadavg()
    java_argv, rust_argv = build()
    names = args.corpora.split(",")
    paths = write_corpora()
    me = [sys.executable, str(Path(__file__).resolve()), "--serve"]
    sides = {
        "java": Side("java", java_argv),
        "rust": Side("rust", rust_argv),
        "python": Side("python", [*me, "python"]),
    }
    pc_corpora = [n for n in names if CORPORA[n][2] > 1]
    if not args.no_pulsar_client:
        sides["pulsar-client"] = Side("pulsar-client", [*me, "pulsar-client"])
    try:
        for name in names:
            for s in sides.values():
                if s.name != "pulsar-client" or name in pc_corpora:
                    s.ask(f"load {name} {paths[name]}")

        # Same work first.
        for name in names:
            for mode in ("all", "proj"):
                got = {
                    s.name: s.ask(f"check {name} {mode}")[1:]
                    for s in sides.values()
                    if s.name != "pulsar-client" or (name in pc_corpora and mode == "all")
                }
                if len({tuple(v) for v in got.values()}) != 1:
                    raise SystemExit(f"totals differ on {name} {mode}: {got}")
                m, v, k, p, crc = got["java"]
                print(
                    f"{name:<11} {mode:<4} totals agree ({', '.join(got)}): {m} messages, {v} value bytes, "
                    f"{k} key bytes, {p if p != '-1' else '-'} properties, values CRC-32 {int(crc):08x}"
                )

        # Warm Java up (JIT), and everyone else once; size the measurements.
        reps: dict[str, int] = {}
        for name in names:
            for mode in ("all", "proj"):
                t_end = time.perf_counter() + args.warmup_s
                while time.perf_counter() < t_end:
                    sides["java"].time(name, mode, 1)
            _, wall = sides["java"].time(name, "all", 1)
            reps[name] = max(1, round(args.target_s * 1e3 / wall))
            for s in sides.values():
                if s.name != "java" and (s.name != "pulsar-client" or name in pc_corpora):
                    s.time(name, "all", 1)

        # Rounds.
        cases = [(n, m) for n in names for m in ("all", "proj")]
        floors = ("memcpy", "crc32c", "codec", "parse", "values")
        res: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
        order = list(sides)
        for r in range(args.rounds):
            rot = order[r % len(order) :] + order[: r % len(order)]
            for name, mode in cases:
                for side in rot:
                    if side == "pulsar-client" and (mode != "all" or name not in pc_corpora):
                        continue
                    res.setdefault((name, mode, side), []).append(sides[side].time(name, mode, reps[name]))
                if mode == "all":
                    for f in floors:
                        res.setdefault((name, f, "rust"), []).append(sides["rust"].time(name, f, reps[name]))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
        load1 = os.getloadavg()
    finally:
        for s in sides.values():
            s.close()

    def med(key: tuple[str, str, str], i: int) -> float:
        return statistics.median(x[i] for x in res[key])

    def ratios(name: str, mode: str, side: str, i: int) -> list[float]:
        return [j[i] / o[i] for j, o in zip(res[(name, mode, "java")], res[(name, mode, side)])]

    print()
    print(
        f"peer benchmark, {started}; {platform.machine()} {os.cpu_count()} CPUs; load average "
        f"{load0[0]:.1f} at start, {load1[0]:.1f} at end; {args.rounds} rounds"
    )
    print(
        "ms per pass over the corpus (median process CPU); ratio = Java time / ours (> 1: ours faster), median (range)"
    )
    hdr = (
        "| corpus | columns | Java ms | ours (Rust) ms | Rust vs Java, CPU | Rust vs Java, wall | "
        "pe.decode ms | pe.decode vs Java, CPU | pe.decode vs Java, wall |"
    )
    print(hdr)
    print("|" + "---|" * hdr.count(" | ") + "---|")
    for name, mode in cases:
        print(
            f"| {name} | {'all' if mode == 'all' else 'projected'} | {med((name, mode, 'java'), 0):.1f} | "
            f"{med((name, mode, 'rust'), 0):.1f} | {spread(ratios(name, mode, 'rust', 0))} | "
            f"{spread(ratios(name, mode, 'rust', 1))} | {med((name, mode, 'python'), 0):.1f} | "
            f"{spread(ratios(name, mode, 'python', 0))} | {spread(ratios(name, mode, 'python', 1))} |"
        )
    print()
    print("Floors and pulsar-client (ms per pass, median process CPU); messages per pass; ns per message")
    print(
        "| corpus | messages | memcpy | crc32c | codec alone | parse | parse + values | Java | ours (Rust) "
        "| ours ns/msg | Java ns/msg | pulsar-client parse_from | pulsar-client vs Java, CPU |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        n = CORPORA[name][2] * CORPORA[name][7]
        j, o = med((name, "all", "java"), 0), med((name, "all", "rust"), 0)
        pc = (name, "all", "pulsar-client")
        pcs = f"{med(pc, 0):.1f} | {spread(ratios(name, 'all', 'pulsar-client', 0))}" if pc in res else "– | –"
        print(
            f"| {name} | {n} | {med((name, 'memcpy', 'rust'), 0):.2f} | {med((name, 'crc32c', 'rust'), 0):.2f} | "
            f"{med((name, 'codec', 'rust'), 0):.2f} | {med((name, 'parse', 'rust'), 0):.2f} | "
            f"{med((name, 'values', 'rust'), 0):.2f} | {j:.1f} | {o:.1f} | {o * 1e6 / n:.0f} | {j * 1e6 / n:.0f} | {pcs} |"
        )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(
        json.dumps(
            {
                "started": started,
                "load": [load0, load1],
                "reps": reps,
                "results": {"/".join(k): v for k, v in res.items()},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()

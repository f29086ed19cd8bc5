"""Python-level decode benchmark: pulsar_entries vs pulsar-client vs python-lz4.

    . .venv/bin/activate && python benches/bench_decode.py [--repeats 7] [--messages 20000]

Corpus (fixed seed): for each batch size 1/10/100/1000 and codec NONE/LZ4,
entries built with ``pulsar_entries.encode_entry`` (batch framing, batches of
one included) holding ~20 000 JSON-like messages of 100 B–1 KB in total.

Timed, each ``--repeats`` times after one warm-up, with time.perf_counter:

* ours: ``pulsar_entries.decode(table)`` -> one Arrow row per message;
* pulsar-client: ``pulsar.MessageBatch().with_message_id(..).parse_from(payload, n)``
  per entry on the uncompressed batch payloads (payload = ``parse_entry(e)["payload"]``,
  extracted before timing), optionally also reading every ``msg.data()``;
  for LZ4 entries, ``lz4.block.decompress`` then ``parse_from``;
* lz4 alone: ``lz4.block.decompress(payload, uncompressed_size=...)`` per LZ4
  entry -- the floor any LZ4 decoder pays.

Throughput is messages/s and MB/s of message values (1 MB = 1e6 bytes).
Ratios use the median by default (``--stat best`` for the minimum).
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import time

import lz4
import lz4.block
import pulsar
import pyarrow as pa

import pulsar_entries
from pulsar_entries import entries_table

BATCH_SIZES = (1, 10, 100, 1000)
CODECS = ("none", "lz4")
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


def json_message(rng: random.Random, n: int) -> bytes:
    parts = [
        '{"id":%d,"ts":%d,"user":"u%d","amount":%d.%02d,"events":['
        % (
            rng.randrange(10**9),
            1_700_000_000_000 + rng.randrange(10**8),
            rng.randrange(10**5),
            rng.randrange(10**4),
            rng.randrange(100),
        )
    ]
    size = len(parts[0])
    while size < n:
        p = '{"k":"%s","v":%d,"s":"%s"},' % (rng.choice(WORDS), rng.randrange(10**6), rng.choice(WORDS))
        parts.append(p)
        size += len(p)
    return "".join(parts).encode()[:n]


class Config:
    def __init__(self, codec: str, batch: int, total: int, rng: random.Random):
        self.codec, self.batch = codec, batch
        self.entries, self.payloads, self.sizes = [], [], []
        self.messages = self.value_bytes = 0
        for _ in range(max(1, total // batch)):
            msgs = [
                {"value": json_message(rng, rng.randint(100, 1000)), "key": f"user-{rng.randrange(10**4)}"}
                for _ in range(batch)
            ]
            e = pulsar_entries.encode_entry(msgs, batch=True, compression=codec, publish_time=1_700_000_000_000)
            info = pulsar_entries.parse_entry(e)
            self.entries.append(e)
            self.payloads.append(info["payload"])
            self.sizes.append(info["metadata"].get("uncompressed_size", len(info["payload"])))
            self.messages += batch
            self.value_bytes += sum(len(m["value"]) for m in msgs)
        self.table = entries_table(self.entries, ledger_id=42)
        self.stored_bytes = sum(len(e) for e in self.entries)


def timeit(fn, repeats: int) -> tuple[float, float]:
    fn()  # warm-up (and a sanity run)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--messages", type=int, default=20_000, help="messages per (codec, batch size)")
    ap.add_argument("--stat", choices=("median", "best"), default="median")
    args = ap.parse_args()
    pick = 1 if args.stat == "median" else 0
    start = time.perf_counter()

    rng = random.Random(20240601)
    configs = {(c, b): Config(c, b, args.messages, rng) for c in CODECS for b in BATCH_SIZES}
    print(
        f"python {platform.python_version()}, pulsar_entries {pulsar_entries.__version__}, "
        f"pulsar-client {pulsar.__version__ if hasattr(pulsar, '__version__') else '?'}, "
        f"python-lz4 {lz4.__version__}, pyarrow {pa.__version__}"
    )
    print(f"corpus built in {time.perf_counter() - start:.1f}s; {args.repeats} repeats, ratios from the {args.stat}\n")

    rows = []  # (batch, codec, method, best, median, cfg)

    def run(cfg: Config, method: str, fn) -> float:
        best, med = timeit(fn, args.repeats)
        rows.append((cfg.batch, cfg.codec, method, best, med, cfg))
        return (best, med)[pick]

    ratios = []
    for b in BATCH_SIZES:
        none, lz = configs[("none", b)], configs[("lz4", b)]

        # Sanity: our decode yields one error-free row per message.
        t = pulsar_entries.decode(none.table)
        assert t.num_rows == none.messages and t["error"].null_count == t.num_rows

        def ours(cfg=none):
            return pulsar_entries.decode(cfg.table)

        def pc_parse(cfg=none):
            for i, p in enumerate(cfg.payloads):
                pulsar.MessageBatch().with_message_id(pulsar.MessageId(-1, 42, i, -1)).parse_from(p, cfg.batch)

        def pc_parse_data(cfg=none):
            for i, p in enumerate(cfg.payloads):
                msgs = pulsar.MessageBatch().with_message_id(pulsar.MessageId(-1, 42, i, -1)).parse_from(p, cfg.batch)
                for m in msgs:
                    m.data()

        def lz4_alone(cfg=lz):
            for p, size in zip(cfg.payloads, cfg.sizes):
                lz4.block.decompress(p, uncompressed_size=size)

        def lz4_pc_parse(cfg=lz):
            for i, (p, size) in enumerate(zip(cfg.payloads, cfg.sizes)):
                buf = lz4.block.decompress(p, uncompressed_size=size)
                pulsar.MessageBatch().with_message_id(pulsar.MessageId(-1, 42, i, -1)).parse_from(buf, cfg.batch)

        t_ours_none = run(none, "pulsar_entries.decode", ours)
        t_pc = run(none, "pulsar-client parse_from", pc_parse)
        t_pc_data = run(none, "pulsar-client parse_from + data()", pc_parse_data)
        t_ours_lz4 = run(lz, "pulsar_entries.decode", lambda: ours(lz))
        t_lz4 = run(lz, "lz4.block.decompress alone", lz4_alone)
        t_lz4_pc = run(lz, "lz4 decompress + pulsar-client parse_from", lz4_pc_parse)
        ratios.append((b, t_pc / t_ours_none, t_pc_data / t_ours_none, t_lz4_pc / t_ours_lz4, t_lz4 / t_ours_lz4))

    hdr = f"{'batch':>5} {'codec':<5} {'method':<42} {'best ms':>9} {'median ms':>10} {'M msg/s':>8} {'MB/s':>8}"
    print(hdr)
    print("-" * len(hdr))
    for batch, codec, method, best, med, cfg in rows:
        t = (best, med)[pick]
        print(
            f"{batch:>5} {codec:<5} {method:<42} {best * 1e3:>9.2f} {med * 1e3:>10.2f} "
            f"{cfg.messages / t / 1e6:>8.2f} {cfg.value_bytes / t / 1e6:>8.0f}"
        )

    print(f"\nRatios ({args.stat}); speedup = their time / our time; LZ4 ratio = our throughput / lz4-alone throughput")
    hdr = (
        f"{'batch':>5} {'ours vs pulsar-client':>22} {'vs pc + data()':>15} {'LZ4: vs lz4+pc':>15} "
        f"{'LZ4: ours/lz4-alone':>20}  target >= 0.80"
    )
    print(hdr)
    print("-" * len(hdr))
    for b, r_pc, r_pcd, r_lz4pc, r_lz4 in ratios:
        verdict = "MET" if r_lz4 >= 0.80 else "MISSED"
        print(f"{b:>5} {r_pc:>21.1f}x {r_pcd:>14.1f}x {r_lz4pc:>14.1f}x {r_lz4:>20.2f}  {verdict}")
    print(f"\ntotal wall time {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()

"""Topic statistics (the CLI's `inspect`), computed in-process from Arrow
tables or on Spark with aggregations that return only small results, then
rendered as text or as a self-contained HTML page with charts (:mod:`._charts`)."""

from __future__ import annotations

import datetime as dt
import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ._output import HTML_MARK

QUANTILES = (0.0, 0.5, 0.9, 1.0)
#: At most this many publish-time bins; each is a round width (:data:`ROUND_MS`) aligned to the epoch.
RATE_BUCKETS = 60
ROUND_MS = tuple(
    [m * 10**e for e in range(3) for m in (1, 2, 5)]
    + [1_000 * s for s in (1, 2, 5, 10, 15, 30)]
    + [60_000 * m for m in (1, 2, 5, 10, 15, 30)]
    + [3_600_000 * h for h in (1, 2, 3, 6, 12, 24)]
)


@dataclass
class Stats:
    entries: int = 0
    entry_bytes: int = 0
    messages: int = 0
    error_rows: int = 0
    entries_with_rows: int = 0
    codecs: dict[str, int] = field(default_factory=dict)
    batch_entries: int = 0
    batch_size_q: list[int] = field(default_factory=list)
    entry_size_q: list[int] = field(default_factory=list)
    producers: list[str] = field(default_factory=list)
    distinct_keys: int = 0
    null_values: int = 0
    publish_range: tuple[int | None, int | None] = (None, None)
    broker_range: tuple[int | None, int | None] = (None, None)
    index_range: tuple[int | None, int | None] = (None, None)
    chunk_entries: int = 0
    chunked_messages: int = 0  # distinct uuids among the chunk rows
    processors: dict[str, int] = field(default_factory=dict)  # rows per payload processor
    transactions: dict[str, int] = field(default_factory=dict)  # rows per transaction status
    errors: list[tuple[int, int, str]] = field(default_factory=list)
    errors_per_ledger: dict[int, int] = field(default_factory=dict)  # error rows per ledger
    # Histograms: entry sizes and value sizes by power of two; messages per publish-time bucket.
    entry_size_hist: dict[int, int] = field(default_factory=dict)
    value_size_hist: dict[int, int] = field(default_factory=dict)
    rate: list[tuple[int, int]] = field(default_factory=list)  # (bin start, ms since the epoch; messages)
    rate_bucket_ms: int = 0


def _log2_bucket(n: int) -> int:
    return 0 if n <= 0 else int(math.log2(n))


def _exact_quantiles(values: list[int]) -> list[int]:
    if not values:
        return []
    s = sorted(values)
    return [s[min(len(s) - 1, int(q * len(s)))] if q < 1 else s[-1] for q in QUANTILES]


def _bucket_ms(lo: int | None, hi: int | None) -> int:
    """The narrowest round bin width that covers ``lo..hi`` (ms) in at most :data:`RATE_BUCKETS`
    epoch-aligned bins; whole days beyond the widest round width."""
    if lo is None or hi is None:
        return 0
    for w in ROUND_MS:
        if hi // w - lo // w + 1 <= RATE_BUCKETS:
            return w
    day = ROUND_MS[-1]
    return day * max(1, math.ceil((hi // day - lo // day + 1) / RATE_BUCKETS))


def stats_from_arrow(entries: pa.Table, messages: pa.Table) -> Stats:
    """Exact statistics of a decoded topic held in memory."""
    st = Stats(entries=entries.num_rows)
    sizes = pc.binary_length(entries["data"]).fill_null(0).to_pylist()
    st.entry_bytes = sum(sizes)
    st.entry_size_q = _exact_quantiles(sizes)
    for s in sizes:
        st.entry_size_hist[_log2_bucket(s)] = st.entry_size_hist.get(_log2_bucket(s), 0) + 1
    good = messages.filter(pc.is_null(messages["error"]))
    bad = messages.filter(pc.is_valid(messages["error"]))
    st.messages, st.error_rows = good.num_rows, bad.num_rows
    st.entries_with_rows = len(set(zip(messages["ledger_id"].to_pylist(), messages["entry_id"].to_pylist())))
    per_entry = good.group_by(["ledger_id", "entry_id"]).aggregate(
        [("compression", "min"), ("num_messages", "max"), ("batch_index", "max")]
    )
    for codec in per_entry["compression_min"].to_pylist():
        st.codecs[codec] = st.codecs.get(codec, 0) + 1
    batches = per_entry.filter(pc.greater_equal(per_entry["batch_index_max"], 0))["num_messages_max"].to_pylist()
    st.batch_entries, st.batch_size_q = len(batches), _exact_quantiles(batches)
    st.producers = sorted(p for p in good["producer_name"].unique().to_pylist() if p)
    st.distinct_keys = pc.count_distinct(good["key"]).as_py()
    st.null_values = good.num_rows - pc.count(good["value"]).as_py()
    for v in pc.binary_length(good["value"]).drop_null().to_pylist():
        st.value_size_hist[_log2_bucket(v)] = st.value_size_hist.get(_log2_bucket(v), 0) + 1

    def rng(col: str) -> tuple[int | None, int | None]:
        mm = pc.min_max(pc.cast(good[col], pa.int64()))
        return mm["min"].as_py(), mm["max"].as_py()

    st.publish_range, st.broker_range, st.index_range = (
        rng("publish_time"),
        rng("broker_timestamp"),
        rng("broker_index"),
    )
    chunks = good.filter(pc.is_valid(good["uuid"]))
    st.chunk_entries, st.chunked_messages = chunks.num_rows, pc.count_distinct(chunks["uuid"]).as_py()
    for name, col in (("processors", "processor"), ("transactions", "txn_status")):
        counts = getattr(st, name)
        for v in good[col].to_pylist():
            if v is not None:
                counts[v] = counts.get(v, 0) + 1
    st.rate_bucket_ms, st.rate = rate_bins(pc.cast(good["publish_time"], pa.int64()).to_pylist())
    st.errors = [
        (r["ledger_id"], r["entry_id"], r["error"])
        for r in bad.select(["ledger_id", "entry_id", "error"]).to_pylist()[:10]
    ]
    for ledger in bad["ledger_id"].to_pylist():
        st.errors_per_ledger[ledger] = st.errors_per_ledger.get(ledger, 0) + 1
    return st


def rate_bins(times_ms: Sequence[int | None]) -> tuple[int, list[tuple[int, int]]]:
    """The bin width (:func:`_bucket_ms`) and the (bin start, count) pairs of ``times_ms``."""
    known = [t for t in times_ms if t is not None]
    if not known:
        return 0, []
    width = _bucket_ms(min(known), max(known))
    bins: dict[int, int] = {}
    for t in known:
        b = t // width * width
        bins[b] = bins.get(b, 0) + 1
    return width, sorted(bins.items())


def stats_from_spark(entries: Any, messages: Any) -> Stats:
    """Statistics computed by Spark; only aggregates come back to the driver.
    Quantiles are approximate (``percentile_approx``).

    Seven jobs in all: the entries' sizes are read once and cached (two jobs), the messages are
    cached and answer in five: the totals, one ``groupBy`` for every histogram and count by category
    (value sizes, publish-time bins, transaction statuses, processors, error rows per ledger), two
    over the per-entry figures, and the first error rows."""
    from pyspark.sql import functions as F

    st = Stats()
    sizes = entries.select(F.length("data").alias("size")).cache()
    e = sizes.agg(
        F.count("*").alias("n"),
        F.coalesce(F.sum("size"), F.lit(0)).alias("bytes"),
        F.percentile_approx("size", list(QUANTILES)).alias("q"),
    ).first()
    st.entries, st.entry_bytes, st.entry_size_q = e["n"], e["bytes"], list(e["q"] or [])
    for r in sizes.groupBy(F.floor(F.log2(F.greatest("size", F.lit(1)))).alias("b")).count().collect():
        st.entry_size_hist[int(r["b"])] = r["count"]
    sizes.unpersist()
    messages = messages.cache()
    ok = F.col("error").isNull()

    def good(c: Any) -> Any:
        return F.when(ok, c)

    m = messages.agg(
        F.count(good(F.lit(1))).alias("n"),
        F.count(F.when(~ok, 1)).alias("errors"),
        F.countDistinct(good(F.col("key"))).alias("keys"),
        F.count(F.when(ok & F.col("value").isNull(), 1)).alias("nulls"),
        F.min(good(F.col("publish_time").cast("double"))).alias("p_lo"),
        F.max(good(F.col("publish_time").cast("double"))).alias("p_hi"),
        F.min(good(F.col("broker_timestamp").cast("double"))).alias("b_lo"),
        F.max(good(F.col("broker_timestamp").cast("double"))).alias("b_hi"),
        F.min(good(F.col("broker_index"))).alias("i_lo"),
        F.max(good(F.col("broker_index"))).alias("i_hi"),
        F.collect_set(good(F.col("producer_name"))).alias("producers"),
        F.count(F.when(ok & F.col("uuid").isNotNull(), 1)).alias("chunks"),
        F.countDistinct(F.when(ok, F.col("uuid"))).alias("uuids"),
    ).first()
    ms = lambda v: None if v is None else round(v * 1000)  # noqa: E731  (seconds -> ms)
    st.messages, st.distinct_keys, st.null_values = m["n"], m["keys"], m["nulls"] or 0
    st.error_rows = m["errors"]
    st.publish_range, st.broker_range = (ms(m["p_lo"]), ms(m["p_hi"])), (ms(m["b_lo"]), ms(m["b_hi"]))
    st.index_range = (m["i_lo"], m["i_hi"])
    st.producers = sorted(p for p in m["producers"] if p)
    st.chunk_entries, st.chunked_messages = m["chunks"], m["uuids"]
    # Every histogram and count by category in one groupBy: a (kind, bucket) pair per row and kind.
    st.rate_bucket_ms = _bucket_ms(*st.publish_range)
    width = st.rate_bucket_ms or 1
    ms_col = F.round(F.col("publish_time").cast("double") * 1000)
    kinds = {
        "value": F.when(ok & F.col("value").isNotNull(), F.floor(F.log2(F.greatest(F.length("value"), F.lit(1))))).cast(
            "string"
        ),
        "rate": good(F.floor(ms_col / width) * width).cast("bigint").cast("string"),
        "txn": good(F.col("txn_status")),
        "processor": good(F.col("processor")),
        "error_ledger": F.when(~ok, F.col("ledger_id").cast("string")),
    }
    facts = messages.select(
        F.explode(F.array(*[F.struct(F.lit(k).alias("kind"), v.alias("bucket")) for k, v in kinds.items()])).alias("f")
    ).select("f.kind", "f.bucket")
    found: dict[str, dict[str, int]] = {k: {} for k in kinds}
    for r in facts.filter(F.col("bucket").isNotNull()).groupBy("kind", "bucket").count().collect():
        found[r["kind"]][r["bucket"]] = r["count"]
    st.value_size_hist = {int(b): n for b, n in found["value"].items()}
    st.rate = sorted((int(b), n) for b, n in found["rate"].items()) if st.rate_bucket_ms else []
    st.transactions, st.processors = found["txn"], found["processor"]
    st.errors_per_ledger = {int(b): n for b, n in found["error_ledger"].items()}
    # Per entry: its codec and batch size (from its readable rows); every entry with a row counts.
    per_entry = (
        messages.groupBy("ledger_id", "entry_id")
        .agg(
            F.min(good(F.col("compression"))).alias("codec"),
            F.max(good(F.col("num_messages"))).alias("n"),
            F.max(good(F.col("batch_index"))).alias("bi"),
        )
        .cache()
    )
    p = per_entry.agg(
        F.count("*").alias("rows"),
        F.count(F.when(F.col("bi") >= 0, 1)).alias("batches"),
        F.percentile_approx(F.when(F.col("bi") >= 0, F.col("n")), list(QUANTILES)).alias("q"),
    ).first()
    st.entries_with_rows, st.batch_entries, st.batch_size_q = p["rows"], p["batches"], list(p["q"] or [])
    rows = per_entry.filter(F.col("codec").isNotNull()).groupBy("codec").count().collect()
    st.codecs = {r["codec"]: r["count"] for r in rows}
    per_entry.unpersist()
    bad = messages.filter(~ok)
    st.errors = [
        (r["ledger_id"], r["entry_id"], r["error"]) for r in bad.orderBy("ledger_id", "entry_id").limit(10).collect()
    ]
    messages.unpersist()
    return st


def _fmt_ms(ms: int | None) -> str:
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _fmt_q(q: list[int]) -> str:
    if not q:
        return "-"
    return f"min {q[0]:,}, p50 {q[1]:,}, p90 {q[2]:,}, max {q[3]:,}"


def printable(text: object) -> str:
    """``text`` safe for a terminal: control and other non-printable characters
    (an escape sequence in a producer name, say) shown as ``\\x1b``-style escapes."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s)


def render_text(st: Stats) -> str:
    """The inspect figures as text; names and messages taken from the data are escaped (:func:`printable`)."""
    lines = [
        f"entries            {st.entries:>10,}",
        f"messages decoded   {st.messages:>10,}",
        f"entries with error {st.error_rows:>10,}",
        f"entries skipped    {st.entries - st.entries_with_rows:>10,}  (markers)",
        "codecs (entries)   " + ", ".join(f"{printable(c)} {n:,}" for c, n in sorted(st.codecs.items())),
        f"batch entries      {st.batch_entries:>10,}  messages per batch: {_fmt_q(st.batch_size_q)}",
        f"entry bytes        {st.entry_bytes:>10,}  per entry: {_fmt_q(st.entry_size_q)}",
        f"chunk entries      {st.chunk_entries:>10,}  of {st.chunked_messages:,} chunked messages",
        f"producers          {len(st.producers):>10,}  {', '.join(printable(p) for p in st.producers[:6])}",
        f"distinct keys      {st.distinct_keys:>10,}  null values: {st.null_values:,}",
        f"publish_time       {_fmt_ms(st.publish_range[0])} .. {_fmt_ms(st.publish_range[1])}",
        f"broker_timestamp   {_fmt_ms(st.broker_range[0])} .. {_fmt_ms(st.broker_range[1])}",
    ]
    if st.processors:
        lines.append(
            "processors (rows)  " + ", ".join(f"{printable(p)} {n:,}" for p, n in sorted(st.processors.items()))
        )
    if st.transactions:
        lines.append("transactions (rows) " + ", ".join(f"{t} {n:,}" for t, n in sorted(st.transactions.items())))
    if st.index_range[0] is not None:
        lines.append(f"broker index       {st.index_range[0]:,} .. {st.index_range[1]:,}")
    if st.errors:
        lines.append("errors:")
        lines += [f"  {ledger}:{entry}  {printable(err)}" for ledger, entry, err in st.errors]
        if st.error_rows > len(st.errors):
            lines.append(f"  ... and {st.error_rows - len(st.errors)} more")
    return "\n".join(lines)


def render_html(st: Stats, title: str = "pulsar-entries topic report", real: pa.Table | None = None) -> str:
    """One self-contained HTML page: the inspect figures, then a chart of each (:mod:`._charts`); with
    ``real``, rows read from a real Pulsar topic (``publish_time`` and ``key`` columns), charts of those too."""
    from . import _charts as c

    # The processor column names the payload format of each row (pulsar, kafka, ...).
    formats = {printable(k): v for k, v in sorted(st.processors.items())}
    if st.messages > sum(formats.values()):
        formats["(no processor)"] = st.messages - sum(formats.values())
    errors = sorted(st.errors_per_ledger.items(), key=lambda kv: (-kv[1], kv[0]))[:30]
    charts = [
        c.time_bars("rate", "Publish rate", st.rate, st.rate_bucket_ms, "messages"),
        c.size_bars("entry-sizes", "Entry sizes", st.entry_size_hist, "entries", "entry size (power-of-two classes)"),
        c.size_bars(
            "value-sizes", "Message value sizes", st.value_size_hist, "messages", "value size (power-of-two classes)"
        ),
        c.category_bars("codecs", "Codec mix (entries per compression codec)", sorted(st.codecs.items()), "entries"),
        c.category_bars(
            "formats",
            "Pulsar and Kafka rows (rows per payload format)",
            [(k, v) for k, v in formats.items() if v],
            "rows",
        ),
        c.category_bars("transactions", "Transaction outcomes", sorted(st.transactions.items()), "rows"),
        c.category_bars(
            "errors",
            "Error rows per ledger" + (" (the 30 with most)" if len(st.errors_per_ledger) > 30 else ""),
            [(f"ledger {ledger}", n) for ledger, n in errors],
            "error rows",
            color=c.ERROR,
        ),
    ]
    if real is not None:
        charts += _real_charts(real, c)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'>{HTML_MARK}"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:2em;max-width:60em}pre{background:#f4f4f4;padding:1em}"
        "figure{margin:1.5em 0}figcaption{font-weight:bold;margin-bottom:.3em}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><pre>{html.escape(render_text(st))}</pre>" + "".join(charts) + "</body></html>"
    )


def _real_charts(rows: pa.Table, c: Any) -> list[str]:
    times = pc.cast(pc.cast(rows["publish_time"], pa.timestamp("ms", "UTC")), pa.int64()).to_pylist()
    width, bins = rate_bins(times)
    keys: dict[str, int] = {}
    for k in rows["key"].to_pylist():
        label = "(no key)" if k is None else printable(k)
        keys[label] = keys.get(label, 0) + 1
    top = sorted(keys.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
    return [
        "<h2>The real Pulsar topic</h2>",
        c.time_bars("real-rate", f"Real Pulsar topic: publish rate ({rows.num_rows:,} rows)", bins, width, "messages"),
        c.category_bars(
            "real-keys",
            "Real Pulsar topic: messages per key" + (f" (the 20 with most of {len(keys)})" if len(keys) > 20 else ""),
            top,
            "messages",
        ),
    ]

"""Human summaries of entry and message tables (the CLI's `inspect`)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc


def _fmt_ms(ms: int | None) -> str:
    if ms is None:
        return "-"
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _quantiles(values: list[int]) -> str:
    if not values:
        return "-"
    s = sorted(values)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))]  # noqa: E731
    return f"min {s[0]}, p50 {pick(0.5)}, p90 {pick(0.9)}, max {s[-1]}"


def summarize(entries: pa.Table, messages: pa.Table) -> str:
    """A short report: counts that reconcile, codecs, sizes, errors, time range."""
    lines = []
    n_entries = entries.num_rows
    errors = messages.filter(pc.is_valid(messages["error"]))
    good = messages.filter(pc.is_null(messages["error"]))
    entries_with_rows = pc.count_distinct(
        pc.binary_join_element_wise(
            pc.cast(messages["ledger_id"], pa.string()), pc.cast(messages["entry_id"], pa.string()), ":"
        )
    ).as_py()
    lines.append(f"entries            {n_entries:>10,}")
    lines.append(f"messages decoded   {good.num_rows:>10,}")
    lines.append(f"entries with error {errors.num_rows:>10,}")
    lines.append(f"entries skipped    {n_entries - entries_with_rows:>10,}  (markers)")
    per_entry = good.group_by(["ledger_id", "entry_id"]).aggregate(
        [("compression", "min"), ("num_messages", "max"), ("batch_index", "max")]
    )
    codecs = Counter(per_entry["compression_min"].to_pylist())
    lines.append("codecs (entries)   " + ", ".join(f"{c} {n:,}" for c, n in sorted(codecs.items())))
    batched = pc.greater_equal(per_entry["batch_index_max"], 0)
    batch_sizes = per_entry.filter(batched)["num_messages_max"].to_pylist()
    lines.append(f"batch entries      {len(batch_sizes):>10,}  messages per batch: {_quantiles(batch_sizes)}")
    sizes = pc.binary_length(entries["data"]).to_pylist()
    lines.append(f"entry bytes        {sum(sizes):>10,}  per entry: {_quantiles(sizes)}")
    chunks = good.filter(pc.is_valid(good["uuid"]))
    if chunks.num_rows:
        uuids = pc.count_distinct(chunks["uuid"]).as_py()
        lines.append(f"chunk entries      {chunks.num_rows:>10,}  of {uuids:,} chunked messages (see reassemble_chunks)")
    producers = good["producer_name"].unique().to_pylist()
    lines.append(f"producers          {len(producers):>10,}  {', '.join(sorted(p for p in producers if p)[:6])}")
    keys = pc.count_distinct(good["key"]).as_py()
    nulls = good.num_rows - pc.count(good["value"]).as_py()
    lines.append(f"distinct keys      {keys:>10,}  null values: {nulls:,}")
    for col in ("publish_time", "broker_timestamp"):
        ts = pc.cast(good[col], pa.int64())
        mm = pc.min_max(ts)
        lines.append(f"{col:<18} {_fmt_ms(mm['min'].as_py())} .. {_fmt_ms(mm['max'].as_py())}")
    idx = pc.min_max(good["broker_index"])
    if idx["min"].is_valid:
        lines.append(f"broker index       {idx['min'].as_py():,} .. {idx['max'].as_py():,}")
    if errors.num_rows:
        lines.append("errors:")
        for row in errors.select(["ledger_id", "entry_id", "error"]).to_pylist()[:10]:
            lines.append(f"  {row['ledger_id']}:{row['entry_id']}  {row['error']}")
        if errors.num_rows > 10:
            lines.append(f"  ... and {errors.num_rows - 10} more")
    return "\n".join(lines)

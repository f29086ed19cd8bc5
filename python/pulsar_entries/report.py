"""Deprecated alias of ``pulsar_entries.cli._report``: import from pulsar_entries.cli._report (internal: the CLI's report).
This alias module goes away in the next release."""

import warnings

from .cli._report import QUANTILES, RATE_BUCKETS, Stats, render_html, render_text, stats_from_arrow, stats_from_spark

warnings.warn(
    "pulsar_entries.report is deprecated: the CLI's report is internal now (pulsar_entries.cli._report, no stable API)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "QUANTILES",
    "RATE_BUCKETS",
    "Stats",
    "render_html",
    "render_text",
    "stats_from_arrow",
    "stats_from_spark",
]

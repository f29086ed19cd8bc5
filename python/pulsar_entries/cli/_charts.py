"""The HTML report's charts, drawn by matplotlib as inline SVG (no network, no script).

Each chart is a ``<figure class="chart" id="chart-NAME">``. Every bar is an SVG group whose id is
``NAME-mark-I-vVALUE``, so a browser test can check that each bar with a value above zero is drawn with
a visible size. Counts that span two orders of magnitude or more are drawn on a log scale, and the axis
label says so; size classes run from the smallest to the largest seen, empty ones included, so the axes
of the size charts line up.
"""

from __future__ import annotations

import datetime as dt
import html
import io
import re
from collections.abc import Sequence
from typing import Any

from .._install import install_hint
from ._errors import CliError

BAR = "#4a7ab7"
ERROR = "#c0504d"
#: The span of counts, max over the smallest above zero, from which the axis is logarithmic.
LOG_SPAN = 100


def require_matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise CliError(f"the HTML report draws its charts with matplotlib: {install_hint('report')}") from None
    return matplotlib


def size_label(b: int) -> str:
    """The lower bound of power-of-two size class ``b``, in bytes with a binary unit."""
    n = 1 << b
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n} {unit}"
        n //= 1024
    return f"{n} TiB"


def duration_label(ms: int) -> str:
    for unit, size in (("h", 3_600_000), ("min", 60_000), ("s", 1_000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def _figure(name: str, height: float = 2.6) -> tuple[Any, Any]:
    require_matplotlib()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.2, height), dpi=96, layout="constrained")
    ax = fig.add_subplot()
    ax.grid(axis="both", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def _log_if_wide(ax: Any, values: Sequence[int], axis: str, unit: str) -> str:
    """Sets a log scale on ``axis`` when ``values`` span :data:`LOG_SPAN` or more; returns the axis label."""
    above = [v for v in values if v > 0]
    if above and max(above) / min(above) >= LOG_SPAN:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
        (ax.set_ylim if axis == "y" else ax.set_xlim)(0.7, max(above) * 1.6)
        return f"{unit} (log scale)"
    from matplotlib.ticker import MaxNLocator

    (ax.set_ylim if axis == "y" else ax.set_xlim)(0, max(above, default=1) * 1.12)
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_locator(MaxNLocator(integer=True))
    return unit


def _mark(name: str, bars: Any, values: Sequence[int]) -> None:
    for i, (bar, v) in enumerate(zip(bars, values)):
        bar.set_gid(f"{name}-mark-{i}-v{v}")


def _svg(name: str, title: str, fig: Any) -> str:
    matplotlib = require_matplotlib()
    buf = io.StringIO()
    # Text stays text (small, selectable); the id salt keeps clip-path ids apart between inline charts.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):
        fig.savefig(buf, format="svg")
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    # The SVG keeps its own size: its width and height in pt, scaled to the page's width.
    svg = re.sub(r"<svg ", '<svg role="img" style="max-width:100%;height:auto" ', svg, count=1)
    return f'<figure class="chart" id="chart-{name}"><figcaption>{html.escape(title)}</figcaption>{svg}</figure>'


def empty(name: str, title: str, why: str) -> str:
    return f'<p class="no-chart" id="chart-{name}">{html.escape(title)}: {html.escape(why)}</p>'


def time_bars(name: str, title: str, bins: Sequence[tuple[int, int]], width_ms: int, what: str) -> str:
    """Counts per publish-time bin (bin start in ms since the epoch, bins ``width_ms`` wide), as bars on a
    UTC time axis."""
    if not bins:
        return empty(name, title, "no data")
    from matplotlib import dates

    fig, ax = _figure(name)
    starts = [dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc) for t, _ in bins]
    values = [n for _, n in bins]
    bars = ax.bar(starts, values, width=width_ms / 86_400_000, align="edge", color=BAR)
    _mark(name, bars, values)
    locator = dates.AutoDateLocator(tz=dt.timezone.utc)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator, tz=dt.timezone.utc))
    ax.set_xlabel("publish time (UTC)")
    ax.set_ylabel(_log_if_wide(ax, values, "y", f"{what} per {duration_label(width_ms)}"))
    return _svg(name, title, fig)


def size_bars(name: str, title: str, hist: dict[int, int], what: str, axis_label: str) -> str:
    """Counts per power-of-two size class, every class between the smallest and the largest on the axis."""
    if not hist:
        return empty(name, title, "no data")
    classes = list(range(min(hist), max(hist) + 1))
    values = [hist.get(b, 0) for b in classes]
    fig, ax = _figure(name)
    bars = ax.bar(range(len(classes)), values, width=0.8, color=BAR)
    _mark(name, bars, values)
    ax.set_xticks(range(len(classes)), [size_label(b) for b in classes], rotation=45 if len(classes) > 8 else 0)
    ax.set_xlabel(axis_label)
    ax.set_ylabel(_log_if_wide(ax, values, "y", what))
    return _svg(name, title, fig)


def category_bars(name: str, title: str, counts: Sequence[tuple[str, int]], what: str, *, color: str = BAR) -> str:
    """Horizontal bars, one per category in the given order, each labelled with its count."""
    if not counts:
        return empty(name, title, "none")
    # Labels come from the data (keys, codec and processor names): a "$" would start matplotlib's math text,
    # which draws a key as a formula or fails on one that is not; escaped, it is a dollar sign.
    labels = [c.replace("$", r"\$") for c, _ in counts]
    values = [n for _, n in counts]
    fig, ax = _figure(name, height=max(1.6, 0.9 + 0.32 * len(counts)))
    bars = ax.barh(range(len(counts)), values, height=0.7, color=color)
    _mark(name, bars, values)
    ax.set_yticks(range(len(counts)), labels)
    ax.invert_yaxis()  # the first category on top
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(_log_if_wide(ax, values, "x", what))
    ax.bar_label(bars, labels=[f"{v:,}" for v in values], padding=3, fontsize=8)
    return _svg(name, title, fig)

"""The HTML report in a real browser: Debian's Chromium, headless, driven by Playwright.

Every chart must draw every bar whose count is above zero with a visible size and its colour, the page
must ask for nothing over the network, and each chart's pixels must hold its bars' colour. Chromium is
installed by scripts/setup; without it this test fails, it never skips.
"""

from __future__ import annotations

import datetime as dt
import io
import shutil
from pathlib import Path

import pyarrow as pa
from PIL import Image
from playwright.sync_api import sync_playwright

import pulsar_entries as pe
from pulsar_entries._sample import generate_topic
from pulsar_entries.cli import _charts
from pulsar_entries.cli._report import render_html, stats_from_arrow

CHARTS = ["rate", "entry-sizes", "value-sizes", "codecs", "formats", "transactions", "errors", "real-rate", "real-keys"]

MARKS = """() => [...document.querySelectorAll('figure.chart')].map(f => ({
    id: f.id.replace('chart-', ''),
    marks: [...f.querySelectorAll('g[id*="-mark-"]')].map(g => {
        const r = g.getBoundingClientRect();
        const path = g.querySelector('path');
        return {value: Number(g.id.split('-v').pop()), width: r.width, height: r.height,
                fill: path ? getComputedStyle(path).fill : 'none'};
    }),
}))"""


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return (int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16))


def _real_rows() -> pa.Table:
    """Rows shaped as the demo's typed read of its real topic: 25 keys over three minutes."""
    start = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.timezone.utc)
    times = [start + dt.timedelta(milliseconds=37 * i) for i in range(5_000)]
    keys = [f"customer-{int(25 * (i / 5_000) ** 2)}" for i in range(5_000)]
    return pa.table({"publish_time": pa.array(times, pa.timestamp("us", "UTC")), "key": keys})


def test_every_chart_draws_its_marks_in_chromium(tmp_path: Path) -> None:
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is not installed (scripts/setup installs it: apt-get install chromium)"
    topic = generate_topic(600, seed=5)
    st = stats_from_arrow(topic.entries, pe.decode(topic.entries))
    assert st.errors_per_ledger and st.transactions and len(st.processors) == 2  # every chart has data
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(st, "browser test", real=_real_rows()))
    outside: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 800})
            page.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith("file:")
                    else (outside.append(route.request.url), route.abort())[1]
                ),
            )
            page.goto(page_file.as_uri())
            charts = page.evaluate(MARKS)
            shots = {
                c["id"]: Image.open(io.BytesIO(page.locator(f"#chart-{c['id']}").screenshot())).convert("RGB")
                for c in charts
            }
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert outside == []
    assert [c["id"] for c in charts] == CHARTS
    for chart in charts:
        name, marks = chart["id"], chart["marks"]
        colour = _charts.ERROR if name == "errors" else _charts.BAR
        drawn = [m for m in marks if m["value"] > 0]
        assert drawn, f"{name}: no bar above zero"
        for m in drawn:
            assert m["width"] >= 1 and m["height"] >= 1, f"{name}: a bar of {m['value']} is not visible: {m}"
            assert m["fill"] == "rgb({}, {}, {})".format(*_rgb(colour)), f"{name}: {m}"
        painted = sum(1 for px in shots[name].get_flattened_data() if px == _rgb(colour))
        assert painted >= 20 * len(drawn), f"{name}: {painted} pixels of the bars' colour for {len(drawn)} bars"
    by_name = {c["id"]: c["marks"] for c in charts}
    # Every size class between the smallest and the largest is on the axis, empty ones included.
    assert len(by_name["value-sizes"]) == max(st.value_size_hist) - min(st.value_size_hist) + 1
    assert sum(m["value"] for m in by_name["rate"]) == st.messages
    assert len(by_name["real-keys"]) == 20


def test_time_bins_are_round_and_aligned() -> None:
    from pulsar_entries.cli._report import rate_bins

    start = 1_764_331_200_000 + 123  # 2025-11-28T12:00:00.123Z
    width, bins = rate_bins([start + 11 * i for i in range(60_000)])  # 11 minutes of messages
    assert width == 15_000 and all(t % width == 0 for t, _ in bins)
    assert sum(n for _, n in bins) == 60_000 and len(bins) <= 60
    assert rate_bins([]) == (0, []) and rate_bins([start]) == (1, [(start, 1)])

"""The SVG charts: well-formed, escaped, accessible, proportional, and calm about missing data."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from apps.findings import charts
from apps.findings.charts import Reference, Row

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def every_chart(rows: list[Row], bins: list[dict]) -> dict[str, str]:
    return {
        "interval": charts.interval_chart(rows, label="interval"),
        "leaderboard": charts.leaderboard_chart(rows, label="leaderboard"),
        "proportion": charts.proportion_chart(rows, label="proportion"),
        "turing": charts.turing_chart(rows, label="turing"),
        "fatigue": charts.fatigue_chart(bins, label="fatigue"),
    }


ROWS = [
    Row("j001", 0.8, 0.7, 0.9),
    Row("j002", 0.4, 0.3, 0.5),
    Row("j003", 0.6, None, None),
]
BINS = [
    {"start": 0.0, "end": 1.0, "n": 10, "mean": 3.5, "ci_low": 3.0, "ci_high": 4.0},
    {"start": 1.0, "end": 2.0, "n": 12, "mean": 3.2, "ci_low": 2.9, "ci_high": 3.6},
    {"start": 2.0, "end": 3.0, "n": 9, "mean": 3.0, "ci_low": None, "ci_high": None},
    {"start": 3.0, "end": 4.0, "n": 11, "mean": 2.8, "ci_low": 2.4, "ci_high": 3.1},
]


@pytest.mark.parametrize("name", ["interval", "leaderboard", "proportion", "turing", "fatigue"])
def test_every_chart_is_well_formed_accessible_svg_with_a_viewbox(name):
    svg = every_chart(ROWS, BINS)[name]
    root = parse(svg)
    assert root.get("role") == "img"
    assert root.get("aria-label") == name
    assert len(root.get("viewBox").split()) == 4
    title = root.find(f"{SVG}title")
    assert title is not None
    assert title.text == name
    # Every data mark explains itself to a pointer or a screen reader.
    assert len(root.findall(f".//{SVG}title")) > 1


@pytest.mark.parametrize("name", ["interval", "leaderboard", "proportion", "turing", "fatigue"])
def test_every_chart_handles_empty_data(name):
    root = parse(every_chart([], [])[name])
    assert root.get("role") == "img"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "No data yet." in texts
    assert not root.findall(f".//{SVG}circle")


def test_text_is_escaped_in_labels_titles_and_aria():
    hostile = "<script>alert(\"x\")</script> & 'q'"
    svg = charts.interval_chart(
        [Row(hostile, 1.0, 0.5, 1.5, detail=hostile)],
        label=hostile,
        axis_label=hostile,
        references=[Reference(1.0, hostile)],
    )
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    root = parse(svg)  # still well-formed
    assert root.get("aria-label") == hostile  # the parser undoes the escaping: nothing was lost
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert any(text and text.startswith("<script>") for text in labels)
    fatigue = charts.fatigue_chart(BINS, label=hostile, x_label=hostile, y_label=hostile)
    assert "<script>" not in fatigue
    parse(fatigue)


def dots(root: ET.Element) -> list[float]:
    return [float(c.get("cx")) for c in root.iter(f"{SVG}circle")]


def test_dots_and_bars_are_positioned_proportionally_on_a_fixed_axis():
    rows = [Row("a", 0.0), Row("b", 0.25), Row("c", 0.5), Row("d", 1.0)]
    root = parse(charts.proportion_chart(rows, label="p"))
    x0, x1 = charts.LABEL_WIDTH, charts.WIDTH - charts.VALUE_WIDTH
    assert dots(root) == pytest.approx(
        [x0, x0 + 0.25 * (x1 - x0), x0 + 0.5 * (x1 - x0), x1], abs=0.1
    )
    widths = [float(r.get("width")) for r in root.iter(f"{SVG}rect")]
    # Bars start at 0%, so their widths are proportional to the values.
    assert widths == pytest.approx([0, 0.25 * (x1 - x0), 0.5 * (x1 - x0), x1 - x0], abs=0.1)
    assert widths[3] == pytest.approx(2 * widths[2], abs=0.2)


def test_interval_whiskers_span_the_interval_and_reference_lines_sit_at_their_value():
    root = parse(charts.turing_chart([Row("m", 0.6, 0.4, 0.8)], label="t"))
    x0, x1 = charts.LABEL_WIDTH, charts.WIDTH - charts.VALUE_WIDTH

    def at(v: float) -> float:
        return x0 + v * (x1 - x0)

    whisker = next(line for line in root.iter(f"{SVG}line") if line.get("class") == "ci")
    assert float(whisker.get("x1")) == pytest.approx(at(0.4), abs=0.1)
    assert float(whisker.get("x2")) == pytest.approx(at(0.8), abs=0.1)
    refs = [g for g in root.iter(f"{SVG}g") if g.get("class") == "ref"]
    positions = sorted(float(g.find(f"{SVG}line").get("x1")) for g in refs)
    assert positions == pytest.approx([at(0.5), at(0.7)], abs=0.1)
    assert all(g.find(f"{SVG}line").get("stroke-dasharray") for g in refs)


def test_a_free_axis_spans_every_value_and_keeps_the_order():
    rows = [Row("top", 2.0, 1.0, 3.0), Row("low", -1.0, -2.0, 0.0)]
    root = parse(charts.leaderboard_chart(rows, label="bt"))
    top, low = dots(root)
    assert top > low
    whiskers = [line for line in root.iter(f"{SVG}line") if line.get("class") == "ci"]
    xs = [float(w.get(k)) for w in whiskers for k in ("x1", "x2")]
    assert min(xs) >= charts.LABEL_WIDTH
    assert max(xs) <= charts.WIDTH - charts.VALUE_WIDTH
    # The distance between dots matches the score difference on the shared scale.
    (w_top,) = [w for w in whiskers if w.get("y1") == whiskers[0].get("y1")]
    per_unit = (float(w_top.get("x2")) - float(w_top.get("x1"))) / 2.0
    assert top - low == pytest.approx(3.0 * per_unit, abs=0.2)


def test_missing_values_and_intervals_draw_no_mark_but_keep_the_row():
    rows = [Row("scored", 1.0, None, None), Row("gap", None, detail="40 items not shown")]
    svg = charts.interval_chart(rows, label="x")
    root = parse(svg)
    assert len(dots(root)) == 1
    assert not [line for line in root.iter(f"{SVG}line") if line.get("class") == "ci"]
    assert "40 items not shown" in [t.text for t in root.iter(f"{SVG}text")]


def test_fatigue_band_breaks_where_a_bin_has_no_interval():
    root = parse(charts.fatigue_chart(BINS, label="f"))
    # Bins 0-1 have intervals (one band), bin 2 has none, bin 3 alone cannot make a band.
    assert len(root.findall(f".//{SVG}polygon")) == 1
    assert len(dots(root)) == 4
    line = root.find(f".//{SVG}polyline")
    points = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
    xs = [p[0] for p in points]
    assert xs == sorted(xs)
    # Lower means sit lower on the page (larger y).
    ys = [p[1] for p in points]
    assert ys == sorted(ys)


def test_fatigue_chart_with_a_single_flat_bin_is_still_drawn():
    root = parse(charts.fatigue_chart([{"start": 0, "end": 1, "n": 1, "mean": 4.0}], label="f"))
    assert len(dots(root)) == 1


def test_number_formats():
    assert charts.fmt(2.8565) == "2.86"
    assert charts.fmt(-0.001) == "0.00"
    assert charts.fmt(None) == "—"
    assert charts.fmt(float("nan")) == "—"
    assert charts.fmt_pct(0.7435897) == "74.4%"
    assert (
        charts.fmt_ci({"value": 3.5, "ci_low": 3.0, "ci_high": 4.15, "n": 20})
        == "3.50 [3.00, 4.15]"
    )
    assert charts.fmt_ci({"value": 3.5, "ci_low": None, "ci_high": None, "n": 1}) == "3.50"
    assert charts.fmt_ci(None) == "—"
    assert (
        charts.fmt_ci({"value": 0.5, "ci_low": 0.4, "ci_high": 0.6}, 1, pct=True)
        == "50.0% [40.0%, 60.0%]"
    )

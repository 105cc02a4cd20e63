"""The inline SVG plots: well-formed, one point per value, points placed by value, thresholds marked."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from kernelgrade.service.pages.svg_plots import (
    FAST_P_THRESHOLDS,
    TIMES,
    Axis,
    _nice_ticks,
    log_ticks,
    speedup_distribution,
    timing_samples,
)

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def circles(root: ET.Element, css: str = "") -> list[ET.Element]:
    return [c for c in root.iter(f"{SVG}circle") if css in c.get("class", "")]


def x_of(circle: ET.Element) -> float:
    return float(circle.get("cx", "nan"))


def test_speedup_distribution_has_a_point_per_speedup_in_order_on_the_axis() -> None:
    speedups = [0.7, 1.2, 3.5, 1.2]
    root = parse(speedup_distribution(speedups))
    points = circles(root, "speedup")
    assert len(points) == 4
    xs = [x_of(c) for c in points]
    assert xs[0] < xs[1] == xs[3] < xs[2]
    assert [c.findtext(f"{SVG}title") for c in points][:2] == [f"speedup 0.7{TIMES}", f"speedup 1.2{TIMES}"]


def test_speedup_distribution_marks_each_fast_p_threshold_where_a_point_of_that_speedup_would_sit() -> None:
    root = parse(speedup_distribution([1.0, 2.0]))
    lines = [line for line in root.iter(f"{SVG}line") if line.get("class") == "threshold"]
    assert len(lines) == len(FAST_P_THRESHOLDS) == 5
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "threshold-label"]
    assert labels == [f"{p}{TIMES}" for p in ("0.5", "0.8", "1", "1.5", "2")]
    at_one, at_two = float(lines[2].get("x1", "0")), float(lines[4].get("x1", "0"))
    assert [x_of(c) for c in circles(root, "speedup")] == pytest.approx([at_one, at_two], abs=0.1)


def ticks(root: ET.Element) -> list[tuple[float, float]]:
    """(value, x) of each tick label under the axis."""
    return [(float(t.text or "nan"), float(t.get("x", "nan"))) for t in root.iter(f"{SVG}text")
            if t.get("class") == "tick"]


@pytest.mark.parametrize("speedups", [[0.106, 1.41], [1.41, 37.0], [0.003, 0.9, 450.0], [1.0], [0.5, 2.0]])
def test_the_speedup_axis_ticks_hold_every_point(speedups: list[float]) -> None:
    root = parse(speedup_distribution(speedups))
    marks = ticks(root)
    (lowest, lowest_x), (highest, highest_x) = min(marks), max(marks)
    assert lowest <= min(speedups) and highest >= max(speedups)
    assert all(lowest_x - 0.1 <= x_of(c) <= highest_x + 0.1 for c in circles(root, "speedup"))
    assert [x for _value, x in sorted(marks)] == sorted(x for _value, x in marks)  # log axis: in order


def test_a_point_below_the_thresholds_gets_a_tick_below_it_placed_by_value() -> None:
    root = parse(speedup_distribution([0.106, 1.41]))
    marks = dict(ticks(root))
    assert sorted(marks) == [0.1, 0.2, 0.5, 1.0, 2.0]
    low_point = circles(root, "speedup")[0]
    assert marks[0.1] < x_of(low_point) < marks[0.2]


def test_log_ticks_are_round_and_thin_out_to_powers_of_ten_over_a_wide_range() -> None:
    assert log_ticks(0.106, 2.0) == [0.1, 0.2, 0.5, 1.0, 2.0]
    assert log_ticks(0.5, 2.0) == [0.5, 1.0, 2.0]
    assert log_ticks(0.8, 2.01) == [0.5, 1.0, 2.0, 5.0]
    assert log_ticks(0.001, 1000.0) == [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]


def test_speedup_axis_is_logarithmic_so_half_and_double_are_equally_far_from_one() -> None:
    axis = Axis(0.25, 4.0, log=True)
    assert axis.x(1.0) - axis.x(0.5) == pytest.approx(axis.x(2.0) - axis.x(1.0))
    assert axis.x(0.25) < axis.x(4.0)


def test_timing_samples_draws_both_rows_and_their_medians() -> None:
    root = parse(timing_samples([2.0, 2.1, 2.2], [1.0, 1.1]))
    reference, candidate = circles(root, "reference"), circles(root, "candidate")
    assert (len(reference), len(candidate)) == (3, 2)
    assert max(x_of(c) for c in candidate) < min(x_of(c) for c in reference)  # faster is further left
    medians = [line for line in root.iter(f"{SVG}line") if "median" in line.get("class", "")]
    assert [m.get("class") for m in medians] == ["median reference", "median candidate"]
    assert float(medians[0].get("x1", "0")) == pytest.approx(x_of(reference[1]), abs=0.1)


def test_timing_samples_without_samples_draws_nothing_and_one_value_does_not_divide_by_zero() -> None:
    assert timing_samples([], []) == ""
    root = parse(timing_samples([3.0], []))
    assert len(circles(root, "reference")) == 1


def test_labels_are_escaped() -> None:
    svg = speedup_distribution([1.5], thresholds=(1.0,))
    assert "<script" not in svg and parse(svg).get("aria-label") == "speedups of 1 correct submissions"


def test_ticks_are_round_numbers_within_the_range() -> None:
    assert _nice_ticks(0.0, 1.0) == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ticks = _nice_ticks(1.37, 2.91)
    assert all(1.37 <= t <= 2.91 for t in ticks) and len(ticks) >= 3

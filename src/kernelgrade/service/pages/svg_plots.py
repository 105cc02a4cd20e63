"""Plots as inline SVG strings, drawn on the server so that a page fetches nothing to show them. Points are
<circle class="point"> with a <title> tooltip; the SVG scales to its container (viewBox, width 100%)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, MARGIN = 600, 40
FAST_P_THRESHOLDS = (0.5, 0.8, 1.0, 1.5, 2.0)
# More 1-2-5 ticks than this crowd a 520-pixel axis (labels such as 0.002 are 30 pixels wide); beyond it only
# the powers of ten are marked.
MAX_LOG_TICKS = 10
TIMES = "\u00d7"  # the multiplication sign of "1.5x"


@dataclass(frozen=True)
class Axis:
    """A map from data values to x pixels, linear or log2."""

    low: float
    high: float
    log: bool = False

    def x(self, value: float) -> float:
        low, high, v = self.low, self.high, value
        if self.log:
            low, high, v = math.log2(low), math.log2(high), math.log2(max(value, self.low))
        span = (high - low) or 1.0
        return MARGIN + (v - low) / span * (WIDTH - 2 * MARGIN)


def _svg(height: int, label: str, body: list[str]) -> str:
    return (f'<svg class="plot" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
            f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>")


def _point(x: float, y: float, title: str, css: str) -> str:
    return f'<circle class="point {css}" cx="{x:.1f}" cy="{y:.1f}" r="4"><title>{escape(title)}</title></circle>'


def _jitter(index: int, spread: float) -> float:
    # Deterministic, so the same data always draws the same picture.
    return ((index * 7919) % 11 - 5) / 5 * spread


def _vline(x: float, top: float, bottom: float, css: str) -> str:
    return f'<line class="{css}" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}"/>'


def _text(x: float, y: float, text: str, css: str = "tick", anchor: str = "middle") -> str:
    return f'<text class="{css}" x="{x:.1f}" y="{y}" text-anchor="{anchor}">{escape(text)}</text>'


def log_ticks(low: float, high: float) -> list[float]:
    """Round values (1, 2, 5 times a power of ten) from the largest at or below `low` to the smallest at or
    above `high`, so that the ticks hold every value in between; only the powers of ten where that makes more
    than MAX_LOG_TICKS."""
    for mantissas in ((1.0, 2.0, 5.0), (1.0,)):
        decade = math.floor(math.log10(low))
        ticks = [m * 10.0**d for d in range(decade - 1, math.ceil(math.log10(high)) + 1) for m in mantissas]
        below = [t for t in ticks if t <= low * (1 + 1e-9)]
        above = [t for t in ticks if t >= high * (1 - 1e-9)]
        chosen = [float(f"{t:.6g}") for t in ticks if below[-1] <= t <= above[0]]
        if len(chosen) <= MAX_LOG_TICKS:
            break
    return chosen


def speedup_axis(speedups: Sequence[float], thresholds: Sequence[float]) -> Axis:
    """A log axis from the round tick at or below the smallest value to the one at or above the largest."""
    values = [s for s in speedups if s > 0] + list(thresholds)
    ticks = log_ticks(min(values), max(values))
    return Axis(ticks[0], ticks[-1], log=True)


def speedup_distribution(speedups: Sequence[float], thresholds: Sequence[float] = FAST_P_THRESHOLDS) -> str:
    """Every correct submission's speedup as a dot on a log axis with round ticks that hold every dot, and
    the fast_p thresholds as lines."""
    height, axis_y = 150, 110
    axis = speedup_axis(speedups, thresholds)
    body = [f'<line class="axis" x1="{MARGIN}" y1="{axis_y}" x2="{WIDTH - MARGIN}" y2="{axis_y}"/>']
    for tick in log_ticks(axis.low, axis.high):
        x = axis.x(tick)
        body += [f'<line class="tick" x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 5}"/>',
                 _text(x, axis_y + 18, f"{tick:g}")]
    for p in thresholds:
        x = axis.x(p)
        body += [_vline(x, 20, axis_y, "threshold"), _text(x, 14, f"{p:g}{TIMES}", "threshold-label")]
    body += [_point(axis.x(s), 65 + _jitter(i, 25), f"speedup {s:.3g}{TIMES}", "speedup")
             for i, s in enumerate(speedups) if s > 0]
    body.append(_text(WIDTH / 2, axis_y + 36, "speedup over the reference (log scale)", "axis-label"))
    return _svg(height, f"speedups of {len(speedups)} correct submissions", body)


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    span = high - low
    if span <= 0:
        return [low]
    raw = span / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if m * step >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(count + 2) if first + i * step <= high + 1e-12]


def timing_samples(reference_ms: Sequence[float], candidate_ms: Sequence[float]) -> str:
    """The timed samples of reference and candidate, one row each, with each row's median marked."""
    rows = [("reference", list(reference_ms)), ("candidate", list(candidate_ms))]
    values = [v for _name, samples in rows for v in samples]
    if not values:
        return ""
    pad = (max(values) - min(values)) * 0.05 or max(values) * 0.05 or 1.0
    axis = Axis(max(min(values) - pad, 0.0), max(values) + pad)
    height, axis_y = 170, 130
    body = [f'<line class="axis" x1="{MARGIN}" y1="{axis_y}" x2="{WIDTH - MARGIN}" y2="{axis_y}"/>']
    body += [_text(axis.x(t), axis_y + 16, f"{t:.4g}") for t in _nice_ticks(axis.low, axis.high)]
    for row, (name, samples) in enumerate(rows):
        body += _sample_row(axis, 40 + row * 55, name, samples)
    body.append(_text(WIDTH / 2, axis_y + 34, "time per call (ms)", "axis-label"))
    return _svg(height, f"timed samples: {len(reference_ms)} reference, {len(candidate_ms)} candidate", body)


def _sample_row(axis: Axis, y: float, name: str, samples: list[float]) -> list[str]:
    parts = [_text(MARGIN, y - 16, f"{name} ({len(samples)} samples)", "row-label", "start")]
    parts += [_point(axis.x(v), y + _jitter(i, 8), f"{name} {v:.4g} ms", name) for i, v in enumerate(samples)]
    if samples:
        middle = sorted(samples)[len(samples) // 2]
        parts.append(_vline(axis.x(middle), y - 12, y + 12, f"median {name}"))
    return parts

"""Latency over time, one line per percentile: the tail's picture, for the e2e benchmark and for
`mesh status --latency`.

A p99 over ten minutes says how bad the tail is, not when: whether it is a steady backlog, a
spike every checkpoint interval, or a warm-up. So each alert's raw -> alert latency is put in
the time bucket of its raw record, and p50, p99 and max per bucket are drawn as three lines of a
plain SVG (no plotting library: nothing beyond the project's lock file), plus the buckets as
text for the docs and the terminal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from shared.percentiles import nearest_rank

#: Width of a bucket, seconds.
BUCKET_S = 5.0
_LINES = (("p50", "#1f77b4"), ("p99", "#d62728"), ("max", "#7f7f7f"))


@dataclass(frozen=True)
class Bucket:
    start_s: float
    count: int
    p50_ms: float
    p99_ms: float
    max_ms: float


def buckets(
    raw_at_ms: Sequence[int], latency_ms: Sequence[float], origin_ms: int | None = None
) -> list[Bucket]:
    """Per BUCKET_S of raw-record time since ``origin_ms`` (default: the first raw record):
    count, p50, p99 and max latency; a bucket with no record is left out."""
    if not raw_at_ms:
        return []
    first = min(raw_at_ms) if origin_ms is None else origin_ms
    grouped: dict[int, list[float]] = {}
    for at, latency in zip(raw_at_ms, latency_ms, strict=True):
        grouped.setdefault(int((at - first) // (1000 * BUCKET_S)), []).append(latency)
    return [
        Bucket(
            index * BUCKET_S,
            len(values),
            nearest_rank(values, 50) or 0.0,
            nearest_rank(values, 99) or 0.0,
            max(values),
        )
        for index, values in sorted(grouped.items())
    ]


def svg(title: str, series: list[Bucket], width: int = 900, height: int = 360) -> str:
    """The buckets as an SVG line chart: time (s) across, latency (ms, log scale) up."""

    left, right, top, bottom = 70, 20, 30, 40
    span_s = max((b.start_s for b in series), default=0.0) + BUCKET_S
    highest = max((b.max_ms for b in series), default=1.0)
    decades = max(1, math.ceil(math.log10(max(highest, 10.0))))  # 1 ms .. 10^decades ms

    def x(seconds: float) -> float:
        return left + (width - left - right) * seconds / span_s

    def y(ms: float) -> float:
        return top + (height - top - bottom) * (1 - math.log10(max(ms, 1.0)) / decades)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="18" font-size="14">{_escape(title)}</text>',
    ]
    for decade in range(decades + 1):
        ms = 10.0**decade
        label = f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.0f} s"
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(ms):.1f}" '
                     f'y2="{y(ms):.1f}" stroke="#ddd"/>')  # fmt: skip
        parts.append(f'<text x="{left - 6}" y="{y(ms) + 4:.1f}" text-anchor="end">{label}</text>')
    step = _time_step(span_s)
    for tick in range(0, int(span_s) + 1, step):
        parts.append(f'<text x="{x(tick):.1f}" y="{height - bottom + 16}" '
                     f'text-anchor="middle">{tick} s</text>')  # fmt: skip
    for position, (name, colour) in enumerate(_LINES):
        values = [(b.start_s + BUCKET_S / 2, _value(b, name)) for b in series]
        points = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in values)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
                     f'points="{points}"/>')  # fmt: skip
        legend_x = width - right - 200 + position * 65
        parts.append(f'<text x="{legend_x}" y="18" fill="{colour}">{name}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_svg(path: Path, title: str, series: list[Bucket]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(svg(title, series))
    return path


def text_rows(series: list[Bucket]) -> str:
    """The buckets as aligned text (the docs keep it beside the picture)."""
    lines = [f"{'from s':>7} {'alerts':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}"]
    lines += [f"{b.start_s:>7.0f} {b.count:>7} {b.p50_ms:>8.0f} {b.p99_ms:>8.0f} {b.max_ms:>8.0f}"
              for b in series]  # fmt: skip
    return "\n".join(lines)


def _value(bucket: Bucket, name: str) -> float:
    return {"p50": bucket.p50_ms, "p99": bucket.p99_ms, "max": bucket.max_ms}[name]


def _time_step(span_s: float) -> int:
    for step in (10, 30, 60, 120, 300):
        if span_s / step <= 12:
            return step
    return 600


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

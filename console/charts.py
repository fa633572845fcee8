"""Chart geometry for server-rendered SVG: no JavaScript, nothing for the CSP to
refuse, and colours from CSS classes (custom properties), so one chart reads in the
light and the dark theme. Each drawn mark carries the URL of the list that shows
exactly what it counts; the template wraps it in ``<a href>``.

Coordinates are in the SVG's viewBox (the template scales it to the page width).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

# The viewBox of a column chart (the width is the caller's: about the pixels it will
# take, so the 11px labels stay near 11px) and the margins of its plot area.
HEIGHT = 150
LEFT, RIGHT, TOP, BOTTOM = 44, 6, 10, 22
GAP = 0.18  # share of a column's slot left empty between columns


@dataclass(frozen=True, slots=True)
class Series:
    name: str  # CSS class suffix: seg-<name>
    label: str  # for the legend and each segment's title
    values: Sequence[int]
    href: Callable[[int], str]  # the list a bucket's segment opens


@dataclass(frozen=True, slots=True)
class Segment:
    series: str
    x: float
    y: float
    width: float
    height: float
    value: int
    href: str
    title: str


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True, slots=True)
class Cell:
    value: int
    href: str  # "" for a zero: there is nothing to open


@dataclass(frozen=True, slots=True)
class BucketRow:
    """One bucket of the chart as a table row: the picture's numbers and links for a
    screen reader or a keyboard (the SVG is hidden from both)."""

    label: str
    cells: list[Cell]  # one per series, in the legend's order


@dataclass(frozen=True, slots=True)
class ColumnChart:
    """Columns per time bucket, series stacked bottom up in the order given."""

    segments: list[Segment]
    ticks: list[Tick]
    peak: int  # the tallest column's total: the y axis runs 0..peak
    totals: dict[str, int]  # per series over the whole axis
    legend: list[tuple[str, str, int]]  # (name, label, total)
    rows: list[BucketRow]  # the buckets with anything in them, oldest first
    width: int
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM

    @property
    def right(self) -> int:
        return self.width - RIGHT

    @property
    def empty(self) -> bool:
        return not self.peak


def columns(
    series: Sequence[Series], labels: Sequence[str], ticks: Sequence[str], width: int = 600
) -> ColumnChart:
    """Stacked columns, one per bucket: ``labels`` name each bucket in the titles,
    ``ticks`` are printed under the axis ("" prints nothing). A zero value draws
    nothing: there is nothing to open."""
    count = len(labels)
    plot_w, plot_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / count
    totals = [sum(s.values[i] for s in series) for i in range(count)]
    peak = max(totals, default=0)
    scale = plot_h / peak if peak else 0.0
    segments: list[Segment] = []
    for i in range(count):
        base: float = HEIGHT - BOTTOM
        x = LEFT + i * slot + slot * GAP / 2
        for s in series:
            value = s.values[i]
            if not value:
                continue
            height = value * scale
            base -= height
            segments.append(
                Segment(
                    series=s.name,
                    x=round(x, 2),
                    y=round(base, 2),
                    width=round(slot * (1 - GAP), 2),
                    height=round(height, 2),
                    value=value,
                    href=s.href(i),
                    title=f"{s.label}: {value} ({labels[i]})",
                )
            )
    rows = [
        BucketRow(labels[i], [Cell(s.values[i], s.href(i) if s.values[i] else "") for s in series])
        for i in range(count)
        if totals[i]
    ]
    marks = [Tick(round(LEFT + (i + 0.5) * slot, 2), t) for i, t in enumerate(ticks) if t]
    return ColumnChart(
        segments=segments,
        ticks=marks,
        peak=peak,
        totals={s.name: sum(s.values) for s in series},
        legend=[(s.name, s.label, sum(s.values)) for s in series],
        rows=rows,
        width=width,
    )


@dataclass(frozen=True, slots=True)
class BarItem:
    """One bar to draw: its label, count, the list it opens ("" when no list shows
    exactly this row, e.g. Work without a Scope), a CSS class suffix and, for a
    Scope, the label's own link (its dashboard)."""

    label: str
    value: int
    href: str
    name: str = "default"
    label_href: str = ""


@dataclass(frozen=True, slots=True)
class Bar:
    row: BarItem
    share: float  # 0..100, of the longest bar


def bars(rows: Sequence[BarItem], limit: int = 0) -> tuple[list[Bar], int]:
    """Horizontal bars, largest first when ``limit`` cuts the list (the number of
    rows left out is returned beside them)."""
    chosen = list(rows)
    left_out = 0
    if limit and len(chosen) > limit:
        chosen = sorted(chosen, key=lambda r: (-r.value, r.label))
        left_out, chosen = len(chosen) - limit, chosen[:limit]
    longest = max((r.value for r in chosen), default=0)
    drawn = [Bar(r, round(100 * r.value / longest, 2) if longest else 0.0) for r in chosen]
    return drawn, left_out

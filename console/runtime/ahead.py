"""Timers to come (``/timers/ahead``): what fires in the next hour or day, of a Scope
tree and a Work kind, as a density strip over the list of those Timers.

The URL holds ``window`` (``1h``, the default, or ``24h``), ``scope`` (a Scope and its
descendants, as on ``/timers`` and a Scope dashboard), ``kind`` (the Work's kind),
``size`` and the list's keyset cursor. The strip's columns are the Timers overdue (late
by more than the grace, ``console.overdue``), those due within the grace, then one per
bucket ahead; its counts are ``count_timers`` and one ``timer_series`` (a COUNT per
bucket over its range of the ``timer_due`` index), never Timers decoded. The list
below holds every Timer the strip counts, earliest (most overdue) first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.http import QueryDict

from console.charts import ColumnChart, Series, columns
from console.urlstate import (
    DEFAULT_PAGE_SIZE,
    FilterError,
    format_key,
    parse_size,
    querystring,
    storable,
)
from storage import WorkKey

MINUTE, HOUR = 60 * 10**9, 3600 * 10**9


@dataclass(frozen=True, slots=True)
class Window:
    """How far ahead the page looks, in ``count`` buckets of ``width``."""

    value: str  # as the URL spells it
    label: str
    span: int
    width: int
    count: int
    every: int  # print a tick under one bucket in ``every``
    unit: int  # a tick counts in these (ns) ...
    suffix: str  # ... and names them so

    def tick(self, i: int) -> str:
        """The tick of bucket ``i``: how long from now it ends."""
        return f"+{(i + 1) * self.width // self.unit}{self.suffix}"

    def name(self, i: int) -> str:
        """Bucket ``i`` in words: from when to when, from now."""
        low, high = i * self.width // self.unit, (i + 1) * self.width // self.unit
        return f"in {low} to {high}{self.suffix}"


WINDOWS = {
    "1h": Window("1h", "Next hour", HOUR, 5 * MINUTE, 12, 3, MINUTE, "m"),
    "24h": Window("24h", "Next day", 24 * HOUR, HOUR, 24, 6, HOUR, "h"),
}
DEFAULT_WINDOW = "1h"
# The greatest character: a cursor at (t, this) starts a page at the first Timer due
# after t, whatever its ID (a bucket's column opens the list at its first Timer).
LAST_ID = "\U0010ffff"


@dataclass(frozen=True, slots=True)
class AheadFilter:
    window: str = DEFAULT_WINDOW
    scope: str = ""
    kind: str = ""
    size: int = DEFAULT_PAGE_SIZE

    @property
    def spec(self) -> Window:
        return WINDOWS[self.window]

    def params(self) -> list[tuple[str, str]]:
        out = [("window", self.window)] if self.window != DEFAULT_WINDOW else []
        out += [(n, getattr(self, n)) for n in ("scope", "kind") if getattr(self, n)]
        return out + ([("size", str(self.size))] if self.size != DEFAULT_PAGE_SIZE else [])

    def querystring(self, extra: Iterable[tuple[str, str]] = ()) -> str:
        return querystring([*self.params(), *extra])

    def starting_after(self, time: int) -> str:
        """This list from the first Timer due after ``time``."""
        return self.querystring([("after", format_key(WorkKey(time, LAST_ID)))])


def parse_ahead_filter(data: QueryDict) -> AheadFilter:
    """The page's URL; FilterError naming every bad parameter."""
    errors: dict[str, str] = {}
    window = data.get("window", "") or DEFAULT_WINDOW
    if window not in WINDOWS:
        errors["window"] = f"window is 1h (the next hour) or 24h (the next day), not {window!r}."
    scope = storable("scope", data.get("scope", ""), errors)
    kind = storable("kind", data.get("kind", "").strip(), errors)
    size = parse_size(data, errors)
    if errors:
        raise FilterError(errors)
    return AheadFilter(window, scope, kind, size)


def strip(
    here: str,
    f: AheadFilter,
    now: int,
    late_by: int,
    counts: tuple[int, int, list[int]],
    grace: int,
) -> ColumnChart:
    """The density strip: a column of the overdue Timers, one of those due within the
    grace, then one per bucket ahead; each opens the list (at ``here``) at its first
    Timer."""
    overdue, due, ahead = counts
    w = f.spec
    n = len(ahead)
    # Bucket i ahead is (now + i*width, now + (i+1)*width]: the list after its low end.
    starts = [here + f.querystring(), here + f.starting_after(late_by)]
    starts += [here + f.starting_after(now + i * w.width) for i in range(n)]
    href = starts.__getitem__
    series = [
        Series("overdue", f"Overdue by more than {grace} s", [overdue] + [0] * (n + 1), href),
        Series("due", f"Due, within the {grace} s grace", [0, due] + [0] * n, href),
        Series("ahead", "To come", [0, 0, *ahead], href),
    ]
    labels = ["overdue", "due now", *(w.name(i) for i in range(n))]
    ticks = ["late", "due"] + [w.tick(i) if (i + 1) % w.every == 0 else "" for i in range(n)]
    # About 36 viewBox units a column, 600 at least: "late" and "due" under their
    # columns stay apart at the day's 26 columns, as the hour's 14 at 600.
    return columns(series, labels, ticks, width=max(600, 36 * (n + 2)))

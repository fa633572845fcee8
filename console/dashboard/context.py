"""The dashboard's presentation: the figures of ``read_dashboard`` as charts, bars
and figures, every mark linked to the list showing exactly what it counts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from django.urls import reverse

from console.charts import BarItem, Series, bars, columns
from console.dashboard.reads import (
    LIST_SIZE,
    LIVE_ORDER,
    TERMINAL_ORDER,
    WINDOWS,
    Dashboard,
    Window,
)
from console.events.filters import EventFilter
from console.runtime.filters import StartedFilter
from console.saved.presets import BY_KEY as PRESETS
from console.scopes import SUBTREE_DEPTH
from console.works.filters import WorkFilter
from storage import WorkOrder, WorkState, from_ns, seconds

KIND_BARS = 8  # kinds and executors shown before "N more"


def bucket_label(width: int) -> str:
    """A bucket's width in words: "5 minutes", "hour", "6 hours", "day", "3 days"."""
    for unit, name in ((seconds(86_400), "day"), (seconds(3600), "hour"), (seconds(60), "minute")):
        if width % unit == 0:
            n = width // unit
            return name if n == 1 else f"{n} {name}s"
    return f"{width / seconds(1):g} seconds"


def window_query(window: Window, chosen: bool) -> str:
    """``?window=...`` when the page's URL named it; nothing keeps the next page on the
    window chosen by the history's age, as this one is."""
    return f"?window={window.key}" if chosen else ""


def iso(ns: int) -> str:
    """A bucket edge for a URL: UTC to the second (edges are whole minutes)."""
    return from_ns(ns).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc(ns: int, fmt: str) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime(fmt)


def _title(lo: int, hi: int, fmt: str) -> str:
    """A bar's tooltip: "Mon 01 Dec 06:00 to 12:00 UTC"; a bucket of whole days names
    its days ("Mon 01 Dec UTC", "Mon 01 Dec to Wed 03 Dec UTC")."""
    day = seconds(86_400)
    if lo % day == 0 and hi % day == 0:
        last = hi - day
        return f"{_utc(lo, fmt)} UTC" if last == lo else f"{_utc(lo, fmt)} to {_utc(last, fmt)} UTC"
    return f"{_utc(lo, fmt)} to {_utc(hi, '%H:%M')} UTC"


@dataclass(frozen=True, slots=True)
class Links:
    """URLs of the lists a dashboard's marks open, all narrowed to its Scope tree."""

    within: str

    def works(self, *states: WorkState, lo: int = 0, hi: int = 0, **more: Any) -> str:
        f = WorkFilter(states=states, **{"within": self.within, **more})
        if hi:
            f = replace(f, since=iso(lo), until=iso(hi))
        return reverse("home") + f.querystring()

    def events(self, lo: int, hi: int) -> str:
        f = EventFilter(within=self.within, since=iso(lo), until=iso(hi))
        return reverse("events") + f.querystring()

    def attempts(self, lo: int, hi: int) -> str:
        """The attempts first claimed in [lo, hi) (the Executions page's history)."""
        f = StartedFilter(
            since=iso(lo), since_ns=lo, until=iso(hi), until_ns=hi, within=self.within
        )
        return reverse("executions") + f.querystring()

    def dashboard(self, scope_id: str, window: Window, chosen: bool) -> str:
        base = reverse("dashboard_scope", kwargs={"scope_id": scope_id})
        return base + window_query(window, chosen)


def dashboard_context(d: Dashboard, path: str) -> dict[str, object]:
    """Charts, figures and links of the page (the template only draws them); the
    window picker links to ``path``, the page's own URL."""
    links = Links(d.scope.id if d.scope else "")
    b, w = d.axis, d.window
    bounds = [b.bounds(i) for i in range(b.count)]
    titles = [_title(lo, hi, w.title_format) for lo, hi in bounds]
    ticks = [
        _utc(lo, w.tick_format) if i % w.tick_every == 0 else "" for i, (lo, _) in enumerate(bounds)
    ]
    ended = columns(
        [
            Series(s.value, s.value.capitalize(), d.ended[s.value], _bucket(links, bounds, s))
            for s in (WorkState.COMPLETED, WorkState.FAILED, WorkState.CANCELLED)
        ],
        titles,
        ticks,
        width=1200,
    )
    activity = {
        "attempts": columns(
            [
                Series(
                    "attempts", "Attempts started", d.attempts, lambda i: links.attempts(*bounds[i])
                )
            ],
            titles,
            ticks,
        ),
        "events": columns(
            [Series("events", "Events accepted", d.events, lambda i: links.events(*bounds[i]))],
            titles,
            ticks,
        ),
    }
    completed, failed = sum(d.ended["completed"]), sum(d.ended["failed"])
    states = [
        BarItem(s.value, d.live.state.get(s.value, 0), links.works(s), s.value) for s in LIVE_ORDER
    ]
    states += [
        BarItem(s.value, sum(d.ended[s.value]), links.works(s, lo=b.start, hi=b.end), s.value)
        for s in TERMINAL_ORDER
    ]

    def live_href(**more: Any) -> str:
        return links.works(*LIVE_ORDER, **more)

    kinds = [BarItem(k, n, live_href(kind=k)) for k, n in d.live.kind.items()]
    executors = [
        BarItem(e or "(none)", n, live_href(executor=e) if e else "")
        for e, n in d.live.executor.items()
    ]
    scopes = [
        BarItem(
            c,
            n,
            links.works(*LIVE_ORDER, within=c) if n else "",
            label_href=links.dashboard(c, w, d.chosen),
        )
        for c, n in d.children
    ]
    if d.unscoped_live:
        scopes.append(BarItem("(no scope)", d.unscoped_live, ""))
    kind_bars, more_kinds = bars(kinds, KIND_BARS)
    executor_bars, more_executors = bars(executors, KIND_BARS)
    return {
        "dash": d,
        "links": links,
        "windows": [(f"{path}?window={v.key}", v.label, v is w) for v in WINDOWS.values()],
        "window_query": window_query(w, d.chosen),
        "bucket_label": bucket_label(b.width),
        "list_size": LIST_SIZE,
        "depth": SUBTREE_DEPTH,
        "ended_chart": ended,
        "attempts_chart": activity["attempts"],
        "events_chart": activity["events"],
        "window_start": b.start,
        "window_end": b.end,
        "state_bars": bars(states)[0],
        "kind_bars": kind_bars,
        "more_kinds": more_kinds,
        "executor_bars": executor_bars,
        "more_executors": more_executors,
        "scope_bars": bars(scopes)[0],
        "live_total": sum(d.live.state.values()),
        "completed": completed,
        "failed": failed,
        "failure_rate": round(100 * failed / (completed + failed), 1)
        if completed + failed
        else None,
        "first_failure": d.first_failed.updated_at if d.first_failed else 0,
        "ended_url": links.works(*TERMINAL_ORDER, lo=b.start, hi=b.end),
        "failed_url": links.works(WorkState.FAILED, lo=b.start, hi=b.end),
        "attempts_url": links.attempts(b.start, b.end),
        "events_url": links.events(b.start, b.end),
        "waiting_url": links.works(WorkState.READY, WorkState.WAITING, sort=WorkOrder.UPDATED_ASC),
        # The right-now tiles are presets (console/saved/presets.py): a tile and the
        # Work list's Views menu open the same list for the same question.
        "exhausted_url": PRESETS["exhausted"].url(links.within),
        "expired_url": PRESETS["expired-leases"].url(links.within),
        "overdue_url": PRESETS["timers-overdue"].url(links.within),
        "errors_url": reverse("errors") + (f"?within={d.scope.id}" if d.scope else ""),
    }


def _bucket(links: Links, bounds: list[tuple[int, int]], state: WorkState) -> Callable[[int], str]:
    return lambda i: links.works(state, lo=bounds[i][0], hi=bounds[i][1])

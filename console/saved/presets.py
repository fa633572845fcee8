"""Built-in saved views: the questions an operator asks first, each one URL.

A preset is not stored: it is code, the same for everyone, and a dashboard tile that
answers the same question links to the preset's URL (``Preset.url``), so the tile and
the menu can never disagree about what "exhausted" or "overdue" lists. Presets may
open any list page, not only the Work list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.urls import reverse

from console.runtime.filters import TimerFilter
from console.works.filters import WorkFilter
from storage import WorkOrder, WorkState


def _works(**fields: object) -> Callable[[str], str]:
    def url(within: str) -> str:
        f = WorkFilter(**{"within": within, **fields})  # type: ignore[arg-type]
        return reverse("home") + f.querystring()

    return url


def _timers(**fields: bool) -> Callable[[str], str]:
    # The Timers page takes a Scope tree as ``scope`` (a Timer's Scope is its Work's).
    def url(within: str) -> str:
        return reverse("timers") + TimerFilter(scope=within, **fields).querystring()

    return url


def _page(name: str, query: str) -> Callable[[str], str]:
    # These pages show the whole store (they take no Scope tree): ``within`` is unused.
    return lambda within: reverse(name) + query


@dataclass(frozen=True, slots=True)
class Preset:
    key: str
    name: str
    description: str
    _url: Callable[[str], str]

    def url(self, within: str = "") -> str:
        """The list it opens, narrowed to a Scope tree where that page takes one."""
        return self._url(within)


PRESETS: tuple[Preset, ...] = (
    Preset(
        "exhausted",
        "Retry exhausted",
        "Ready, attempted, nothing will run it again: stuck longest first",
        # The stuck longest first, as the dashboard's own list of them.
        _works(exhausted=True, sort=WorkOrder.UPDATED_ASC),
    ),
    Preset(
        "failed-1h",
        "Failed in the last hour",
        "Work that ended failed, updated in the last hour",
        # "1h" stays relative in the URL: the preset keeps meaning the last hour.
        _works(states=(WorkState.FAILED,), since="1h"),
    ),
    Preset(
        "expired-leases",
        "Expired leases",
        "Live attempts whose lease has expired",
        _page("executions", "?expired=1"),
    ),
    Preset(
        "leases-expiring-30s",
        "Leases expiring in the next 30 s",
        "Running attempts whose lease runs out within 30 s, the soonest first",
        _page("executions", "?expiring=30s&sort=lease"),
    ),
    Preset(
        "waits-1h",
        "Waits older than an hour",
        "Active Waits created more than an hour ago, oldest first",
        _page("waits", "?older=1h"),
    ),
    Preset(
        "my-actions-24h",
        "My actions in the last 24 h",
        "Your cancels and retries with their reasons, newest first",
        # "mine" is whoever opens it: one URL for every operator.
        _page("events", "?mine=1&since=24h"),
    ),
    Preset(
        "timers-overdue",
        "Timers overdue",
        "Timers late by more than the grace (CONSOLE_OVERDUE_GRACE_SECONDS, 30 s unless set)",
        _timers(overdue=True),
    ),
)
BY_KEY = {p.key: p for p in PRESETS}

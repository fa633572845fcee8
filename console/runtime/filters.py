"""The runtime pages' URL state: the Executions page's history filter (attempts first
claimed in a time range), and the Waits and Timers pages' filters and keyset cursor."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from django.http import QueryDict

from console.urlstate import (
    DEFAULT_PAGE_SIZE,
    MAX_KEY_TIME,
    SINCE_HELP,
    TIME_FILTERS,
    FilterError,
    parse_key,
    parse_size,
    parse_times,
    querystring,
    text,
)
from storage import WorkKey


@dataclass(frozen=True, slots=True)
class StartedFilter:
    """The Executions page's history: attempts first claimed in [since, until) (until
    empty: now), of Work within a Scope tree. What an attempts chart bucket counts."""

    since: str
    since_ns: int
    until: str = ""
    until_ns: int | None = None
    within: str = ""

    def params(self) -> list[tuple[str, str]]:
        out = [(n, getattr(self, n)) for n in ("within", *TIME_FILTERS)]
        return [(n, v) for n, v in out if v]

    def querystring(self) -> str:
        return querystring(self.params())

    def chips(self) -> list[tuple[str, str, str]]:
        """Removing ``since`` leaves the history: back to the live attempts."""
        out = []
        for name, value in self.params():
            rest = [(n, v) for n, v in self.params() if n != name]
            keep = any(n == "since" for n, _ in rest)
            out.append((name, value, querystring(rest) if keep else "?"))
        return out


def parse_started_filter(data: QueryDict, now_ns: int | None = None) -> StartedFilter | None:
    """None when the query names no time (the attempts list, ``ExecutionFilter``);
    ``since`` is needed for a history, so the range is always bounded."""
    # ``within`` alone narrows the attempts list (ExecutionFilter); with a time it is
    # the history's Scope tree.
    if not any(data.get(n, "") for n in TIME_FILTERS):
        return None
    errors: dict[str, str] = {}
    within = text("within", data.get("within", ""), errors)
    times = parse_times({n: data.get(n, "") for n in TIME_FILTERS}, now_ns, errors)
    if times["since_ns"] is None and "since" not in errors:
        errors["since"] = "Attempts started since when? " + SINCE_HELP
    if errors:
        raise FilterError(errors)
    return StartedFilter(within=within, **times)


_AGE = re.compile(r"^(\d{1,6})([smhd])$")
_AGE_NS = {"s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}


def parse_older(raw: str, name: str = "older") -> int:
    """The Waits page's ``older`` (``30m``, ``1h``, ``2d``) in ns; 0 when empty.
    An age, never an instant: a bookmark of "older than an hour" keeps meaning it.
    ``name``: the parameter an error names (the Executions page's ``expiring``)."""
    raw = raw.strip()
    if not raw:
        return 0
    match = _AGE.match(raw)
    if match is None:
        what = "an age like 30m, 1h or 2d" if name == "older" else "a span like 30s, 5m or 1h"
        raise FilterError({name: f"{name} is {what}, not {raw!r}."})
    return int(match.group(1)) * _AGE_NS[match.group(2)]


@dataclass(frozen=True, slots=True)
class PageCursor:
    """Where a Waits or Timers page starts: after a row (``after=``: the next page)
    or before one (``before=``: the page before), as ``<time ns>.<ID>``; neither for
    the first page."""

    after: WorkKey | None = None
    before: WorkKey | None = None

    @property
    def first(self) -> bool:
        return self.after is None and self.before is None


def parse_page_cursor(data: QueryDict) -> PageCursor:
    """Read ``after`` or ``before``; FilterError naming a malformed one, or both."""
    keys: dict[str, WorkKey | None] = {}
    for name in ("after", "before"):
        raw = data.get(name, "")
        key = parse_key(raw) if raw else None
        if raw and (key is None or key.time > MAX_KEY_TIME):
            raise FilterError({name: f"{raw!r} is not a page position (<time>.<ID>)."})
        keys[name] = key
    if keys["after"] is not None and keys["before"] is not None:
        raise FilterError({"before": "A page starts after a row or before one, not both."})
    return PageCursor(**keys)


@dataclass(frozen=True, slots=True)
class WaitFilter:
    """The Waits page's URL: ``older`` (an age, kept as typed so a bookmark stays
    relative: Waits created at least that long before now) and ``size``."""

    older: str = ""
    older_ns: int = 0
    size: int = DEFAULT_PAGE_SIZE

    def params(self) -> list[tuple[str, str]]:
        out = [("older", self.older)] if self.older else []
        return out + ([("size", str(self.size))] if self.size != DEFAULT_PAGE_SIZE else [])

    def querystring(self, extra: Iterable[tuple[str, str]] = ()) -> str:
        return querystring([*self.params(), *extra])


def parse_wait_filter(data: QueryDict) -> WaitFilter:
    errors: dict[str, str] = {}
    older, older_ns = data.get("older", "").strip(), 0
    try:
        older_ns = parse_older(older)
    except FilterError as exc:
        errors.update(exc.errors)
    size = parse_size(data, errors)
    if errors:
        raise FilterError(errors)
    return WaitFilter(older if older_ns else "", older_ns, size)


MAX_SCOPE_BYTES = 255  # the storage rule for an ID (storage.tx.fields.ID_MAX_BYTES)


@dataclass(frozen=True, slots=True)
class TimerFilter:
    """The Timers page's URL: ``due=1`` (Timers past their fire time), ``overdue=1``
    (past it by more than the grace, ``console.overdue``: what the dashboards count;
    it wins over ``due``), ``scope`` (the Timers of Work in that Scope and its
    descendants, as a Scope dashboard counts them: a Timer's Scope is its Work's) and
    ``size``."""

    due: bool = False
    size: int = DEFAULT_PAGE_SIZE
    overdue: bool = False
    scope: str = ""

    def params(self) -> list[tuple[str, str]]:
        out = [("overdue", "1")] if self.overdue else [("due", "1")] if self.due else []
        out += [("scope", self.scope)] if self.scope else []
        return out + ([("size", str(self.size))] if self.size != DEFAULT_PAGE_SIZE else [])

    def querystring(self, extra: Iterable[tuple[str, str]] = ()) -> str:
        return querystring([*self.params(), *extra])


def parse_timer_filter(data: QueryDict) -> TimerFilter:
    errors: dict[str, str] = {}
    due, overdue = data.get("due", ""), data.get("overdue", "")
    if due not in ("", "0", "1"):
        errors["due"] = f"due is 1 (due and overdue Timers only) or 0 (all), not {due!r}."
    if overdue not in ("", "0", "1"):
        errors["overdue"] = f"overdue is 1 (overdue Timers only) or 0 (all), not {overdue!r}."
    # Taken as it is, spaces too: any Scope ID the store accepts (255 bytes, no NUL).
    scope = data.get("scope", "")
    if "\x00" in scope or len(scope.encode("utf-8", "replace")) > MAX_SCOPE_BYTES:
        errors["scope"] = f"scope is a Scope ID (at most {MAX_SCOPE_BYTES} bytes, no NUL)."
    size = parse_size(data, errors)
    if errors:
        raise FilterError(errors)
    return TimerFilter(due == "1" and overdue != "1", size, overdue == "1", scope)

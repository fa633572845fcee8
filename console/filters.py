"""The Work list's filter, search box and keyset cursor, read from and written to URLs.

Every filter lives in the query string so any view can be bookmarked and shared:
``state`` and ``source`` repeat, ``scope``, ``within`` (a Scope and its descendants),
``kind``, ``parent``, ``executor``, ``since`` and ``until`` (updated in [since,
until)) appear once, ``sort`` and ``size`` choose the order and page size, and
``after`` / ``before`` carry a WorkKey as ``<time ns>.<Work ID>``.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict

from storage import WorkKey, WorkOrder, WorkQuery, WorkState, to_ns

PAGE_SIZES = (25, 50, 100, 200)
DEFAULT_PAGE_SIZE = 50
STATE_ORDER = tuple(WorkState)
SORT_LABELS = {
    WorkOrder.CREATED_DESC: "Newest first",
    WorkOrder.CREATED_ASC: "Oldest first",
    WorkOrder.UPDATED_DESC: "Recently updated",
    WorkOrder.UPDATED_ASC: "Least recently updated",
}
REVERSED = {
    WorkOrder.CREATED_DESC: WorkOrder.CREATED_ASC,
    WorkOrder.CREATED_ASC: WorkOrder.CREATED_DESC,
    WorkOrder.UPDATED_DESC: WorkOrder.UPDATED_ASC,
    WorkOrder.UPDATED_ASC: WorkOrder.UPDATED_DESC,
}
QUALIFIERS = ("state", "kind", "scope", "within", "source", "executor", "parent", "since", "until")
# The single-valued text filters, in their canonical URL order.
TEXT_FILTERS = ("scope", "within", "kind", "parent", "executor")
TIME_FILTERS = ("since", "until")
MAX_TEXT = 255
_DURATION = re.compile(r"^(\d{1,6})([smhd])$")
_LOST_PLUS = re.compile(r"^(.+[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) (\d{2}:?\d{2})$")
_UNIT_NS = {"s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}
SINCE_HELP = (
    "Enter a UTC time like 2025-11-30 14:00, an ISO 8601 instant like "
    "2025-11-30T14:00:00+01:00, or a duration back from now like 15m, 2h or 1d."
)
UNTIL_AFTER_SINCE = "Updated before must be later than updated since."


class FilterError(ValueError):
    """Bad filter input; ``errors`` maps a field name to a message for the form."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = dict(errors)


@dataclass(frozen=True, slots=True)
class WorkFilter:
    states: tuple[WorkState, ...] = ()
    scope: str = ""
    within: str = ""  # a Scope and its descendants (console.scopes.subtree)
    kind: str = ""
    parent: str = ""
    sources: tuple[str, ...] = ()
    executor: str = ""
    since: str = ""  # as typed, so a relative "15m" stays relative in a bookmark
    since_ns: int | None = None
    until: str = ""  # updated strictly before; typed like since
    until_ns: int | None = None
    sort: WorkOrder = WorkOrder.CREATED_DESC
    size: int = DEFAULT_PAGE_SIZE

    def query(
        self,
        *,
        after: WorkKey | None = None,
        limit: int = 0,
        reverse: bool = False,
        scope_ids: frozenset[str] = frozenset(),
    ) -> WorkQuery:
        """The WorkQuery of this filter; ``scope_ids`` is ``within``'s subtree, which
        only a read can resolve (it needs the Scopes)."""
        return WorkQuery(
            states=frozenset(self.states),
            scope_id=self.scope,
            kind=self.kind,
            parent_id=self.parent,
            sources=frozenset(self.sources),
            executor=self.executor,
            updated_since=self.since_ns,
            scope_ids=scope_ids,
            updated_before=self.until_ns,
            order=REVERSED[self.sort] if reverse else self.sort,
            after=after,
            limit=limit,
        )

    @property
    def narrowed(self) -> bool:
        """True when any filter (not the sort or page size) is set."""
        return bool(
            self.states
            or self.sources
            or any(getattr(self, n) for n in (*TEXT_FILTERS, *TIME_FILTERS))
        )

    def params(self) -> list[tuple[str, str]]:
        """Canonical query parameters, defaults left out."""
        out = [("state", s.value) for s in self.states]
        out += [("source", s) for s in self.sources]
        for name in (*TEXT_FILTERS, *TIME_FILTERS):
            value = getattr(self, name)
            if value:
                out.append((name, value))
        if self.sort is not WorkOrder.CREATED_DESC:
            out.append(("sort", self.sort.value))
        if self.size != DEFAULT_PAGE_SIZE:
            out.append(("size", str(self.size)))
        return out

    def querystring(self, extra: Iterable[tuple[str, str]] = ()) -> str:
        params = self.params() + list(extra)
        return "?" + urlencode(params) if params else "?"

    def with_value(self, name: str, value: str) -> WorkFilter:
        """This filter narrowed by one facet value: added to a multi-valued filter,
        set on a single-valued one."""
        if name == "state":
            state = WorkState(value)
            states = self.states if state in self.states else (*self.states, state)
            return replace(self, states=tuple(sorted(states, key=STATE_ORDER.index)))
        if name == "source":
            return replace(
                self, sources=self.sources if value in self.sources else (*self.sources, value)
            )
        return replace(self, **{name: value})

    def without(self, name: str, value: str = "") -> WorkFilter:
        if name == "state":
            return replace(self, states=tuple(s for s in self.states if s.value != value))
        if name == "source":
            return replace(self, sources=tuple(s for s in self.sources if s != value))
        if name in TIME_FILTERS:
            return replace(self, **{name: "", f"{name}_ns": None})
        return replace(self, **{name: ""})

    def chips(self) -> list[tuple[str, str, str]]:
        """(label, value, querystring without it) for each active filter."""
        chips = [
            ("state", s.value, self.without("state", s.value).querystring()) for s in self.states
        ]
        chips += [("source", s, self.without("source", s).querystring()) for s in self.sources]
        for name in (*TEXT_FILTERS, *TIME_FILTERS):
            value = getattr(self, name)
            if value:
                chips.append((name, value, self.without(name).querystring()))
        return chips


@dataclass(frozen=True, slots=True)
class Cursor:
    """A keyset position: rows strictly after ``key`` in the page's order, or strictly
    before it (``backward``: queried in the reverse order, then reversed)."""

    key: WorkKey
    backward: bool = False


@dataclass(frozen=True, slots=True)
class Search:
    qualifiers: dict[str, list[str]] = field(default_factory=dict)
    terms: tuple[str, ...] = ()


def format_key(key: WorkKey) -> str:
    return f"{key.time}.{key.id}"


def parse_key(raw: str) -> WorkKey | None:
    # Work IDs may contain dots, the time never does: split at the first one.
    time_part, dot, work_id = raw.partition(".")
    if not dot or not time_part.isdigit() or not work_id:
        return None
    return WorkKey(int(time_part), work_id)


def parse_cursor(data: Mapping[str, str]) -> Cursor | None:
    after, before = data.get("after", ""), data.get("before", "")
    if after and before:
        raise FilterError({"after": "Give either after or before, not both."})
    raw = after or before
    if not raw:
        return None
    key = parse_key(raw)
    if key is None:
        raise FilterError({"after": f"{raw!r} is not a page position (<time>.<Work ID>)."})
    return Cursor(key, backward=bool(before))


def parse_since(raw: str, now_ns: int) -> int:
    match = _DURATION.match(raw)
    if match:
        return now_ns - int(match.group(1)) * _UNIT_NS[match.group(2)]
    # A "+01:00" offset typed into a URL arrives as " 01:00": put the plus back.
    raw = _LOST_PLUS.sub(r"\1+\2", raw)
    try:
        value = datetime.fromisoformat(raw.replace(" ", "T", 1))
    except ValueError:
        raise FilterError({"since": SINCE_HELP}) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # the console shows and takes times in UTC
    return to_ns(value)


def _text(name: str, raw: str, errors: dict[str, str]) -> str:
    value = raw.strip()
    if len(value) > MAX_TEXT:
        errors[name] = f"At most {MAX_TEXT} characters."
        return ""
    return value


def _states(values: Sequence[str], errors: dict[str, str]) -> tuple[WorkState, ...]:
    chosen: set[WorkState] = set()
    for raw in values:
        for value in filter(None, (v.strip().lower() for v in raw.split(","))):
            try:
                chosen.add(WorkState(value))
            except ValueError:
                names = ", ".join(s.value for s in WorkState)
                errors["state"] = f"Unknown state {value!r}; use one of {names}."
    return tuple(s for s in STATE_ORDER if s in chosen)


def querystring(params: Sequence[tuple[str, str]]) -> str:
    """``?a=1&b=2``, or a bare ``?`` (a link that clears every filter)."""
    return "?" + urlencode(params) if params else "?"


def parse_size(data: Mapping[str, str], errors: dict[str, str]) -> int:
    """The ``size`` parameter (one of PAGE_SIZES), or the default; a bad one is noted in
    ``errors``."""
    raw = data.get("size", "")
    if not raw:
        return DEFAULT_PAGE_SIZE
    if raw.isdigit() and int(raw) in PAGE_SIZES:
        return int(raw)
    errors["size"] = f"Page size is one of {', '.join(map(str, PAGE_SIZES))}."
    return DEFAULT_PAGE_SIZE


def parse_work_filter(data: QueryDict, now_ns: int | None = None) -> WorkFilter:
    """Read a WorkFilter from query parameters; raise FilterError naming each bad one."""
    errors: dict[str, str] = {}
    states = _states(data.getlist("state"), errors)
    sources: list[str] = []
    for raw in data.getlist("source"):
        value = _text("source", raw, errors)
        if value and value not in sources:
            sources.append(value)
    texts = {n: _text(n, data.get(n, ""), errors) for n in TEXT_FILTERS}
    times = _times({n: data.get(n, "") for n in TIME_FILTERS}, now_ns, errors)
    sort = WorkOrder.CREATED_DESC
    raw_sort = data.get("sort", "")
    if raw_sort:
        try:
            sort = WorkOrder(raw_sort)
        except ValueError:
            errors["sort"] = "Unknown sort order."
    size = parse_size(data, errors)
    if errors:
        raise FilterError(errors)
    return WorkFilter(states=states, sources=tuple(sources), sort=sort, size=size, **texts, **times)


def _times(raw: Mapping[str, str], now_ns: int | None, errors: dict[str, str]) -> dict[str, Any]:
    """``since`` and ``until`` as typed and as instants; errors name each bad one."""
    now = time.time_ns() if now_ns is None else now_ns
    out: dict[str, Any] = {}
    for name in TIME_FILTERS:
        value = _text(name, raw.get(name, ""), errors)
        out[name], out[f"{name}_ns"] = value, None
        if value:
            try:
                out[f"{name}_ns"] = parse_since(value, now)
            except FilterError:
                errors[name] = SINCE_HELP
    since_ns, until_ns = out["since_ns"], out["until_ns"]
    if since_ns is not None and until_ns is not None and until_ns <= since_ns:
        errors["until"] = UNTIL_AFTER_SINCE
    return out


def parse_search(q: str) -> Search:
    """Split a search box into qualifiers (``state:running``) and bare terms. Quotes
    group words (``kind:"a b"``); a stray quote falls back to splitting on spaces."""
    try:
        words = shlex.split(q)
    except ValueError:
        words = q.split()
    qualifiers: dict[str, list[str]] = {}
    terms: list[str] = []
    for word in words:
        name, colon, value = word.partition(":")
        if colon and name.lower() in QUALIFIERS and value:
            qualifiers.setdefault(name.lower(), []).append(value)
        else:
            terms.append(word)
    return Search(qualifiers, tuple(terms))


def apply_search(base: WorkFilter, search: Search, now_ns: int | None = None) -> WorkFilter:
    """``base`` with the search's qualifiers folded in: states and sources are added,
    the other filters are set (the last one typed wins)."""
    errors: dict[str, str] = {}
    f = base
    states = _states(search.qualifiers.get("state", []), errors)
    if errors:
        raise FilterError({"q": errors["state"]})
    for state in states:
        f = f.with_value("state", state.value)
    for source in search.qualifiers.get("source", []):
        f = f.with_value("source", _text("q", source, errors))
    for name in TEXT_FILTERS:
        values = search.qualifiers.get(name)
        if values:
            f = replace(f, **{name: _text("q", values[-1], errors)})
    typed = {n: search.qualifiers[n][-1] for n in TIME_FILTERS if n in search.qualifiers}
    if typed:
        raw = {n: typed.get(n, getattr(f, n)) for n in TIME_FILTERS}
        times = _times(raw, now_ns, errors)
        f = replace(f, **times)
    if errors:
        raise FilterError({"q": next(iter(errors.values()))})
    return f


# ---------------------------------------------------------------- Events


EVENT_PAGE_SIZE = 50


EVENT_TEXTS = ("source", "type", "scope", "within", "work")


@dataclass(frozen=True, slots=True)
class EventFilter:
    """The Events stream's filter, answered by one indexed ``find_events`` read.
    ``within`` is a Scope and its descendants; ``since``/``until`` bound the
    acceptance time, typed as on the Work list."""

    source: str = ""
    type: str = ""
    scope: str = ""
    within: str = ""
    work: str = ""
    unrouted: bool = False
    since: str = ""
    since_ns: int | None = None
    until: str = ""
    until_ns: int | None = None

    def params(self) -> list[tuple[str, str]]:
        out = [(n, getattr(self, n)) for n in (*EVENT_TEXTS, *TIME_FILTERS)]
        out = [(n, v) for n, v in out if v]
        if self.unrouted:
            out.append(("unrouted", "1"))
        return out

    def querystring(self, extra: Iterable[tuple[str, str]] = ()) -> str:
        params = self.params() + list(extra)
        return "?" + urlencode(params) if params else "?"

    @property
    def narrowed(self) -> bool:
        return bool(self.params())

    def without(self, name: str) -> EventFilter:
        if name == "unrouted":
            return replace(self, unrouted=False)
        if name in TIME_FILTERS:
            return replace(self, **{name: "", f"{name}_ns": None})
        return replace(self, **{name: ""})

    def chips(self) -> list[tuple[str, str, str]]:
        return [
            (name, value if name != "unrouted" else "only", self.without(name).querystring())
            for name, value in self.params()
        ]


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
        return "?" + urlencode(self.params())

    def chips(self) -> list[tuple[str, str, str]]:
        """Removing ``since`` leaves the history: back to the live attempts."""
        out = []
        for name, value in self.params():
            rest = [(n, v) for n, v in self.params() if n != name]
            keep = any(n == "since" for n, _ in rest)
            out.append((name, value, "?" + urlencode(rest) if keep else "?"))
        return out


def parse_started_filter(data: QueryDict, now_ns: int | None = None) -> StartedFilter | None:
    """None when the query names no history (the live attempts); ``since`` is needed
    for one, so the range is always bounded."""
    if not any(data.get(n, "") for n in ("within", *TIME_FILTERS)):
        return None
    errors: dict[str, str] = {}
    within = _text("within", data.get("within", ""), errors)
    times = _times({n: data.get(n, "") for n in TIME_FILTERS}, now_ns, errors)
    if times["since_ns"] is None and "since" not in errors:
        errors["since"] = "Attempts started since when? " + SINCE_HELP
    if errors:
        raise FilterError(errors)
    return StartedFilter(within=within, **times)


@dataclass(frozen=True, slots=True)
class SeqCursor:
    """An acceptance-sequence position: Events older than ``before`` or newer than
    ``after`` (both exclusive)."""

    before: int = 0
    after: int = 0


def parse_event_filter(data: QueryDict, now_ns: int | None = None) -> tuple[EventFilter, SeqCursor]:
    errors: dict[str, str] = {}
    texts = {n: _text(n, data.get(n, ""), errors) for n in EVENT_TEXTS}
    times = _times({n: data.get(n, "") for n in TIME_FILTERS}, now_ns, errors)
    unrouted = data.get("unrouted", "") in ("1", "on", "true")
    cursor = {}
    for name in ("before", "after"):
        raw = data.get(name, "")
        if raw and not raw.isdigit():
            errors[name] = f"{name} is an acceptance sequence number."
        elif raw:
            cursor[name] = int(raw)
    if len(cursor) > 1:
        errors["after"] = "Give either after or before, not both."
    if errors:
        raise FilterError(errors)
    return EventFilter(unrouted=unrouted, **texts, **times), SeqCursor(**cursor)

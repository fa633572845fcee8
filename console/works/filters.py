"""The Work list's filter, search box and keyset cursor, read from and written to URLs.

Every filter lives in the query string so any view can be bookmarked and shared:
``state`` and ``source`` repeat, ``scope``, ``within`` (a Scope and its descendants),
``kind``, ``parent``, ``executor``, ``error`` (an error group), ``since`` and
``until`` (updated in [since, until)) appear once, ``is=exhausted`` keeps only
exhausted Work, ``sort`` and ``size`` choose the order and page size, and
``after`` / ``before`` carry a WorkKey as ``<time ns>.<Work ID>``. The search box
takes the same as qualifiers (``is:exhausted``, ``error:"db down at <n>"``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict

from console.urlstate import (
    DEFAULT_PAGE_SIZE,
    PAGE_SIZES,
    TIME_FILTERS,
    FilterError,
    cleared,
    format_key,
    parse_key,
    parse_size,
    parse_times,
    querystring,
    text,
)
from storage import WorkFacets, WorkKey, WorkOrder, WorkQuery, WorkState

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
QUALIFIERS = (
    "state",
    "kind",
    "scope",
    "within",
    "source",
    "executor",
    "parent",
    "error",
    "is",
    "since",
    "until",
)
# The single-valued text filters, in their canonical URL order.
TEXT_FILTERS = ("scope", "within", "kind", "parent", "executor", "error")
# The values ``is`` takes (``is=exhausted``, ``is:exhausted``).
IS_VALUES = ("exhausted",)
FACET_DIMENSIONS = (
    ("state", "State"),
    ("kind", "Kind"),
    ("source", "Source"),
    ("scope", "Scope"),
    ("executor", "Executor"),
    ("error", "Error group"),
)
# The WorkFacets field of a dimension named otherwise in the URL.
FACET_FIELDS = {"error": "error_group"}
# The values a facet lists (the first ten shown, the rest behind "more"): at a million
# Work a team's long tails held 555 error groups, 120 sources and 102 kinds, and
# linking every one (870 links, a 330 kB page) was most of the Work list's time. The
# rest are counted and named by the form's fields (and error groups by /errors).
FACET_VALUES = 50


@dataclass(frozen=True, slots=True)
class WorkFilter:
    states: tuple[WorkState, ...] = ()
    scope: str = ""
    within: str = ""  # a Scope and its descendants (console.scopes.subtree)
    kind: str = ""
    parent: str = ""
    sources: tuple[str, ...] = ()
    executor: str = ""
    error: str = ""  # an error group key (storage.error_key)
    exhausted: bool = False  # is=exhausted
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
            exhausted=self.exhausted,
            error_group=self.error,
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
            or self.exhausted
            or any(getattr(self, n) for n in (*TEXT_FILTERS, *TIME_FILTERS))
        )

    def params(self) -> list[tuple[str, str]]:
        """Canonical query parameters, defaults left out."""
        out = [("state", s.value) for s in self.states]
        out += [("source", s) for s in self.sources]
        if self.exhausted:
            out.append(("is", "exhausted"))
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
        return querystring([*self.params(), *extra])

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
        if name == "is":
            return replace(self, exhausted=True)
        changes: dict[str, Any] = {name: value}
        return replace(self, **changes)

    def without(self, name: str, value: str = "") -> WorkFilter:
        if name == "state":
            return replace(self, states=tuple(s for s in self.states if s.value != value))
        if name == "source":
            return replace(self, sources=tuple(s for s in self.sources if s != value))
        if name == "is":
            return replace(self, exhausted=False)
        if name in TIME_FILTERS:
            return replace(self, **cleared(name, timed=True))
        return replace(self, **cleared(name))

    def chips(self) -> list[tuple[str, str, str]]:
        """(label, value, querystring without it) for each active filter."""
        chips = [
            ("state", s.value, self.without("state", s.value).querystring()) for s in self.states
        ]
        chips += [("source", s, self.without("source", s).querystring()) for s in self.sources]
        if self.exhausted:
            chips.append(("is", "exhausted", self.without("is").querystring()))
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


def forward_key(cursor: Cursor | None) -> WorkKey | None:
    """The key a forward-only list (the API's, the ``work list`` command's) pages after."""
    if cursor is not None and cursor.backward:
        raise FilterError({"before": "This list pages forward only: use after=<next>."})
    return cursor.key if cursor else None


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


def _is(values: Sequence[str], errors: dict[str, str], name: str = "is") -> bool:
    """Whether ``is=exhausted`` was given; any other value is noted in ``errors``."""
    for value in (v.strip().lower() for v in values):
        if value and value not in IS_VALUES:
            errors[name] = f"Unknown is:{value}; use is:{' or is:'.join(IS_VALUES)}."
    return any(v.strip().lower() == "exhausted" for v in values)


def parse_work_filter(data: QueryDict, now_ns: int | None = None) -> WorkFilter:
    """Read a WorkFilter from query parameters; raise FilterError naming each bad one."""
    errors: dict[str, str] = {}
    states = _states(data.getlist("state"), errors)
    sources: list[str] = []
    for raw in data.getlist("source"):
        value = text("source", raw, errors)
        if value and value not in sources:
            sources.append(value)
    texts: dict[str, Any] = {n: text(n, data.get(n, ""), errors) for n in TEXT_FILTERS}
    times = parse_times({n: data.get(n, "") for n in TIME_FILTERS}, now_ns, errors)
    sort = WorkOrder.CREATED_DESC
    raw_sort = data.get("sort", "")
    if raw_sort:
        try:
            sort = WorkOrder(raw_sort)
        except ValueError:
            errors["sort"] = "Unknown sort order."
    size = parse_size(data, errors)
    exhausted = _is(data.getlist("is"), errors)
    if errors:
        raise FilterError(errors)
    return WorkFilter(
        states=states,
        sources=tuple(sources),
        exhausted=exhausted,
        sort=sort,
        size=size,
        **texts,
        **times,
    )


def parse_search(q: str) -> Search:
    """Split a search box into qualifiers (``state:running``) and bare terms. Quotes
    group words (``kind:"a b"``); a stray quote falls back to splitting on spaces;
    backslashes and "#" are ordinary characters (IDs may hold them)."""
    lexer = shlex.shlex(q, posix=True)
    lexer.whitespace_split = True
    lexer.escape = ""  # a backslash is part of an ID, not an escape
    lexer.commenters = ""  # so is a "#"
    try:
        words = list(lexer)
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
        f = f.with_value("source", text("q", source, errors))
    if _is(search.qualifiers.get("is", []), errors, "q"):
        f = replace(f, exhausted=True)
    for name in TEXT_FILTERS:
        values = search.qualifiers.get(name)
        if values:
            changes: dict[str, Any] = {name: text("q", values[-1], errors)}
            f = replace(f, **changes)
    typed = {n: search.qualifiers[n][-1] for n in TIME_FILTERS if n in search.qualifiers}
    if typed:
        raw = {n: typed.get(n, getattr(f, n)) for n in TIME_FILTERS}
        times = parse_times(raw, now_ns, errors)
        f = replace(f, **times)
    if errors:
        raise FilterError({"q": next(iter(errors.values()))})
    return f


# ---------------------------------------------------------------- page state
# What the Work list's template shows beside the rows, derived from the filter alone:
# its form, the facet entries and the paging, size and sort links.


def listing_links(
    f: WorkFilter, next_key: WorkKey | None, prev_key: WorkKey | None
) -> dict[str, Any]:
    """The links around a page of rows: chips, next/previous, sizes, column sorts."""
    return {
        "chips": f.chips(),
        "next_url": f.querystring([("after", format_key(next_key))]) if next_key else "",
        "prev_url": f.querystring([("before", format_key(prev_key))]) if prev_key else "",
        "size_links": [(n, replace(f, size=n).querystring(), n == f.size) for n in PAGE_SIZES],
        "sort_links": {
            "created": replace(f, sort=_toggle(f, "created")).querystring(),
            "updated": replace(f, sort=_toggle(f, "updated")).querystring(),
        },
        "filter_params": f.params(),
    }


def facet_entries(f: WorkFilter, facets: WorkFacets) -> list[dict[str, Any]]:
    """Each facet dimension's values with their counts, each a link narrowing ``f``;
    states in their lifecycle order, the others most frequent first. The exhausted
    count comes first, as its own dimension: it is where an operator starts."""
    out = [_triage_entry(f, facets)] if facets.exhausted or f.exhausted else []
    for name, label in FACET_DIMENSIONS:
        counts: Mapping[str, int] = getattr(facets, FACET_FIELDS.get(name, name))
        if name == "error":
            # Work whose latest attempt did not fail has no group: not a value to pick.
            counts = {k: n for k, n in counts.items() if k}
            if not counts:
                continue
        items: list[tuple[str, int]]
        if name == "state":
            items = [(s.value, counts[s.value]) for s in STATE_ORDER if s.value in counts]
        else:
            items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        # The most frequent values, and any the filter holds beyond them.
        shown = items[:FACET_VALUES] + [
            kv for kv in items[FACET_VALUES:] if _active(f, name, kv[0])
        ]
        hidden = len(items) - len(shown)
        items = shown
        link = narrowing(f, name)
        entries = [
            {
                "value": value,
                "count": n,
                "url": link(value) if value else "",
                "active": _active(f, name, value),
            }
            for value, n in items
        ]
        out.append({"name": name, "label": label, "entries": entries, "hidden": hidden})
    return out


_SLOT = "\x00slot"  # a value no filter holds (a NUL is refused in any request)


def narrowing(f: WorkFilter, name: str) -> Callable[[str], str]:
    """``value -> f.with_value(name, value).querystring()``, with the filter's other
    parameters encoded once for the dimension: a facet lists dozens of kinds, Scopes and
    sources, and a whole filter per value was a tenth of the Work list's request. The
    value's place among the parameters is found by putting a marker there."""
    if name not in ("source", *TEXT_FILTERS):
        return lambda value: f.with_value(name, value).querystring()  # states: a handful
    params = f.with_value(name, _SLOT).params()
    at = params.index((name, _SLOT))
    before, after = urlencode(params[:at]), urlencode(params[at + 1 :])
    unchanged = f.querystring()

    def link(value: str) -> str:
        if name == "source" and value in f.sources:
            return unchanged
        return "?" + "&".join(p for p in (before, urlencode([(name, value)]), after) if p)

    return link


def _triage_entry(f: WorkFilter, facets: WorkFacets) -> dict[str, Any]:
    entry = {
        "value": "exhausted",
        "count": facets.exhausted,
        "url": f.with_value("is", "exhausted").querystring(),
        "active": f.exhausted,
    }
    return {"name": "is", "label": "Needs an operator", "entries": [entry]}


def _active(f: WorkFilter, name: str, value: str) -> bool:
    if name == "state":
        return any(s.value == value for s in f.states)
    if name == "source":
        return value in f.sources
    return bool(value) and getattr(f, name) == value


def _toggle(f: WorkFilter, column: str) -> WorkOrder:
    """Clicking a column header sorts by it newest first, then flips the direction."""
    if f.sort.value.lstrip("-") == column and f.sort.descending:
        return WorkOrder(column)
    return WorkOrder(f"-{column}")


def filter_form(f: WorkFilter) -> dict[str, Any]:
    """The form's values for a parsed filter."""
    return {
        "states": {s.value for s in f.states},
        "sources": list(f.sources),
        "exhausted": f.exhausted,
        **{name: getattr(f, name) for name in (*TEXT_FILTERS, *TIME_FILTERS)},
        "sort": f.sort.value,
        "size": f.size,
    }


def raw_form(data: QueryDict) -> dict[str, Any]:
    """The submitted values as typed, to show again beside their errors."""
    return {
        "states": set(data.getlist("state")),
        "sources": [s for s in data.getlist("source") if s],
        "exhausted": "exhausted" in data.getlist("is"),
        **{name: data.get(name, "") for name in (*TEXT_FILTERS, *TIME_FILTERS)},
        "sort": data.get("sort", ""),
        "size": data.get("size", ""),
        "q": data.get("q", ""),
    }


def form_choices(context: dict[str, Any]) -> dict[str, Any]:
    """``context`` plus the form's fixed choices (states, sorts, sizes)."""
    context.setdefault("q", context.get("form", {}).get("q", ""))
    context["state_choices"] = [s.value for s in STATE_ORDER]
    context["sort_choices"] = [(o.value, label) for o, label in SORT_LABELS.items()]
    context["sizes"] = PAGE_SIZES
    return context

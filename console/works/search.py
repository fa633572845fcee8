"""What the search box does with a bare term, or with qualifier values nobody has.

An operator pastes whatever an alert gave them: a Work, Event, Execution, Wait, Timer,
Scope or run record ID, the first characters of one, a correlation key, or a word
such as ``failed`` or ``billing.charge``. ``look_up`` answers in one storage View:

1. an exact ID of one record lands on its page (an Execution, Wait or Timer on its
   Work's page, anchored to its row, since they have no page of their own);
2. a correlation key, written ``source/external_id`` or ``source:external_id``,
   lands on the Work that owns it (every split is tried: sources may hold either);
3. a prefix of ``MIN_PREFIX`` characters or more that only one record's ID starts with
   lands there; one that several start with lists them with their kinds, up to
   ``CANDIDATES`` of each kind; a shorter one says why it was not tried;
4. otherwise, "did you mean": the term as a state, ``is:exhausted``, a kind, source,
   executor or Scope (by ID or name) that exists, each a link narrowing the current
   filter, and, for a term shaped ``name:value`` whose name is no qualifier, that it is none.

``unknown_values`` checks qualifier values the same way (``kind:nope`` names no
Work), so the list says so instead of silently showing nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import quote

from django.urls import reverse

from console.polling import read
from console.works.filters import IS_VALUES, QUALIFIERS, STATE_ORDER, WorkFilter
from storage import CorrelationKey, IdKind, IdMatch, NotFound, Tx, WorkQuery

# Shorter prefixes match too much to be worth listing (and an operator who has six
# characters of an ID usually has all of it); exact IDs of any length still land.
MIN_PREFIX = 6
# Candidates listed per kind; more means "type more of it".
CANDIDATES = 10

KIND_LABELS = {
    IdKind.WORK: "Work",
    IdKind.EVENT: "Event",
    IdKind.EXECUTION: "Execution",
    IdKind.WAIT: "Wait",
    IdKind.TIMER: "Timer",
    IdKind.SCOPE: "Scope",
    IdKind.RUN: "Run",
}


@dataclass(frozen=True, slots=True)
class Candidate:
    kind: str  # KIND_LABELS' label
    id: str
    work_id: str
    url: str


@dataclass(frozen=True, slots=True)
class Suggestion:
    text: str  # what to type: "state:failed"
    url: str  # the list narrowed by it
    why: str  # "a Work state"


@dataclass(frozen=True, slots=True)
class Lookup:
    term: str
    url: str = ""  # where to go when exactly one thing matched
    candidates: list[Candidate] = field(default_factory=list)
    more: bool = False  # some kind had more candidates than CANDIDATES
    too_short: bool = False  # no exact match and fewer than MIN_PREFIX characters
    suggestions: list[Suggestion] = field(default_factory=list)
    unknown_qualifier: str = ""  # "foo" of "foo:bar", when foo is no qualifier


def look_up(term: str, f: WorkFilter) -> Lookup:
    """Resolve one bare search term (see the module docstring). Queries: the prefix
    read (7, one per kind), then as needed an Execution (1 per one listed), the
    correlation keys (1 per split), and for suggestions the Scopes (1) and one
    indexed probe per dimension (4)."""

    def find(tx: Tx) -> Lookup:
        matches = tx.find_ids(term, CANDIDATES)
        exact = [m for m in matches if m.id == term]
        if len(exact) == 1:
            return Lookup(term, url=_landing(tx, exact[0]))
        if not exact:
            owner = _key_owner(tx, term)
            if owner:
                return Lookup(term, url=reverse("work_detail", kwargs={"work_id": owner}))
        listed = exact or (matches if len(term) >= MIN_PREFIX else [])
        if len(listed) == 1:
            return Lookup(term, url=_landing(tx, listed[0]))
        if listed:
            counts = {k: sum(1 for m in listed if m.kind is k) for k in IdKind}
            return Lookup(
                term,
                candidates=[_candidate(tx, m) for m in listed],
                more=not exact and any(n >= CANDIDATES for n in counts.values()),
            )
        name, colon, _ = term.partition(":")
        unknown = name if colon and name and name.lower() not in QUALIFIERS else ""
        return Lookup(
            term,
            too_short=bool(matches) and len(term) < MIN_PREFIX,
            suggestions=_suggestions(tx, term, f, unknown),
            unknown_qualifier=unknown,
        )

    return read(find)


def _landing(tx: Tx, match: IdMatch) -> str:
    """The page of a matched record: its own, or its Work's anchored to its row."""
    if match.kind is IdKind.WORK:
        return reverse("work_detail", kwargs={"work_id": match.id})
    if match.kind is IdKind.EVENT:
        return reverse("event_detail", kwargs={"event_id": match.id})
    if match.kind is IdKind.SCOPE:
        return reverse("dashboard_scope", kwargs={"scope_id": match.id})
    if match.kind is IdKind.RUN:
        return reverse("run_record", kwargs={"run_id": match.id})
    if not match.work_id:  # a Timer that serves no Work
        return reverse("timers") + "#timer-" + quote(match.id, safe="")
    work = reverse("work_detail", kwargs={"work_id": match.work_id})
    if match.kind is IdKind.EXECUTION:
        return f"{work}#attempt-{tx.execution(match.id).attempt}"
    return f"{work}#{match.kind.value}-{quote(match.id, safe='')}"


def _candidate(tx: Tx, match: IdMatch) -> Candidate:
    return Candidate(KIND_LABELS[match.kind], match.id, match.work_id, _landing(tx, match))


def _key_owner(tx: Tx, term: str) -> str:
    """The Work owning the correlation key ``term`` spells, split at any "/" or ":"."""
    for i, char in enumerate(term):
        if char in "/:" and 0 < i < len(term) - 1:
            try:
                return tx.work_by_key(CorrelationKey(term[:i], term[i + 1 :])).id
            except NotFound:
                continue
    return ""


def _exists(tx: Tx, query: WorkQuery) -> bool:
    """Whether any Work passes ``query``: one indexed probe, at most one row read."""
    return bool(tx.query_works(query))


def _suggestions(tx: Tx, term: str, f: WorkFilter, unknown: str) -> list[Suggestion]:
    out: list[Suggestion] = []

    def offer(name: str, value: str, why: str) -> None:
        out.append(Suggestion(f"{name}:{value}", f.with_value(name, value).querystring(), why))

    word = term.lower()
    states = [s.value for s in STATE_ORDER]
    for state in difflib.get_close_matches(word, states, n=2, cutoff=0.75):
        offer("state", state, "a Work state")
    for value in difflib.get_close_matches(word, IS_VALUES, n=1, cutoff=0.75):
        offer("is", value, "ready Work that spent its retries")
    probes = (
        ("kind", WorkQuery(kind=term, limit=1), "a kind of Work"),
        ("source", WorkQuery(sources=frozenset({term}), limit=1), "a source of Work"),
        ("executor", WorkQuery(executor=term, limit=1), "an executor that ran Work"),
    )
    for name, query, why in probes:
        if _exists(tx, query):
            offer(name, term, why)
    for scope in tx.scopes():
        if word in (scope.id.lower(), scope.name.lower()):
            offer("scope", scope.id, f"the Scope {scope.name or scope.id}")
            offer("within", scope.id, f"the Scope {scope.name or scope.id} and its children")
    if unknown:
        _, _, value = term.partition(":")
        for name in difflib.get_close_matches(unknown.lower(), QUALIFIERS, n=1, cutoff=0.6):
            out.append(Suggestion(f"{name}:{value}", "?" + _q(f"{name}:{value}"), "a qualifier"))
    return out


def _q(text: str) -> str:
    return "q=" + quote(text, safe=":")


# ---------------------------------------------------------------- qualifier values


@dataclass(frozen=True, slots=True)
class UnknownValue:
    qualifier: str
    value: str
    message: str
    without: str  # the list's query string without this value


def unknown_values(f: WorkFilter, typed: Iterable[str]) -> list[UnknownValue]:
    """The values of the qualifiers in ``typed`` (names the search box set) that no
    Work has at all, so that filtering by them can only show nothing. Queries: one
    indexed probe per value (kind, source, executor, parent), the Scopes (1) when a
    Scope was named."""
    names = set(typed)

    def check(tx: Tx) -> list[UnknownValue]:
        out: list[UnknownValue] = []

        def unknown(name: str, value: str, message: str) -> None:
            out.append(UnknownValue(name, value, message, f.without(name, value).querystring()))

        scope_ids = {s.id for s in tx.scopes()} if names & {"scope", "within"} else set()
        for name in ("scope", "within"):
            value = getattr(f, name)
            if name in names and value and value not in scope_ids:
                close = difflib.get_close_matches(value, sorted(scope_ids), n=3)
                hint = f" Did you mean {', '.join(close)}?" if close else ""
                unknown(name, value, f"There is no Scope {value!r}.{hint}")
        probes = (
            ("kind", f.kind, WorkQuery(kind=f.kind, limit=1), "kind"),
            ("executor", f.executor, WorkQuery(executor=f.executor, limit=1), "executor"),
            ("parent", f.parent, WorkQuery(parent_id=f.parent, limit=1), "parent"),
        )
        for name, value, query, what in probes:
            if name in names and value and not _exists(tx, query):
                unknown(name, value, f"No Work has the {what} {value!r}.")
        if "source" in names:
            for source in f.sources:
                if not _exists(tx, WorkQuery(sources=frozenset({source}), limit=1)):
                    unknown("source", source, f"No Work has the source {source!r}.")
        return out

    return read(check)

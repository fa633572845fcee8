"""The Work tally: facet counts kept in the write transaction, and what they answer.

A Work list shows, beside its page, how many Work of its selection have each state,
kind, source, Scope, latest executor and error group, and how many are exhausted
(``WorkFacets``). Counted from the rows, that is one GROUP BY over every selected
Work: its time grows with the history (21 ms at 10,000 Work, 203 ms at a million,
issue 22). The tally keeps those counts instead, as rows

    (state, scope, kind, dimension, value) -> n

one per combination present, where ``dimension`` is "" (the Work itself, value ""),
``source``, ``executor``, ``error_group`` or ``exhausted`` (value "", counted only
for exhausted Work). The rules (``storage.tx``) add each written Work's rows and take
away its previous record's in the same transaction (``delta``), on every backend, so
a committed tally always equals ``count`` over the stored Work (the differential test
checks it).

A selection the tally answers exactly (``answers``) filters by nothing but states,
Scope (``scope_id``/``scope_ids``) and kind: the common selections of the Work list,
the dashboards and the runtime page. Its facets are sums over the tally rows of the
selected (state, scope, kind) combinations, whose number follows the variety of the
Work (states x Scopes x kinds in use, times the sources, executors and groups seen in
each), never how many Work there are. Any other filter (parent, source, executor,
update times, exhausted, error group) is not a key of the tally, so those selections
keep the GROUP BY over the rows (the ORM subtracts a recent ``until`` bound from the
tally instead, ``complements``).

The margins. Summed over every (Scope, kind), the selections by states alone (the
unfiltered Work list above all) read states x Scopes x kinds x values rows: ~100,000
at a realistic million Work (~250 Scopes, ~1,000 kinds), 10.8 ms (issue 22). So the
rules keep, beside those rows and in the same table, rows keyed by state and value only

    (state, "", "", "all:" + dimension, value) -> n

per state the Work (``all:``), per kind (``all:kind``), per Scope (``all:scope``), per
source, executor and error group, and the exhausted Work (``all:exhausted``). A
selection by nothing but states (or nothing) is answered from them (``reads_margins``):
states x distinct values rows; its count, from the ``all:`` rows alone (``total``).
No margin's dimension is a per-combination row's, and every read of those rows names
its dimensions (``DIMENSIONS``): a margin's empty Scope and kind would otherwise match
a selection of the Scope "".

The exhausted Work. The exhausted list (``WorkQuery.exhausted``, the triage page an
operator opens first) shows the facets of the exhausted Work alone; counted from the
rows, that is a GROUP BY over every exhausted Work (3,200 at a realistic million,
twice the Work list's time, benchmark 7). So an exhausted Work also counts in

    (state, scope, kind, "x:" + dimension, value) -> n

for its source, executor and error group (``EXHAUSTED_DIMENSIONS``); its state, kind
and Scope are the keys of its ``exhausted`` row. A selection by states, Scope and
kind of the exhausted Work (``answers_exhausted``) is answered from those rows, which
number the exhausted Work's combinations (there are no exhausted margins: the
exhausted Work are few, and so are their combinations).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace

from ..records import Work, WorkFacets, WorkQuery

# (state, scope_id, kind, dimension, value)
TallyKey = tuple[str, str, str, str, str]

# The dimensions of the per-combination rows beside the Work row itself (dimension "").
WORK, SOURCE, EXECUTOR, GROUP, EXHAUSTED = "", "source", "executor", "error_group", "exhausted"
DIMENSIONS = (WORK, SOURCE, EXECUTOR, GROUP, EXHAUSTED)
# The facets of a ``WorkFacets`` that the per-combination rows hold as keys.
KIND, SCOPE = "kind", "scope"
# The exhausted Work's own per-combination rows, by the dimension each counts.
EXHAUSTED_OF = "x:"
X_SOURCE, X_EXECUTOR, X_GROUP = (EXHAUSTED_OF + d for d in (SOURCE, EXECUTOR, GROUP))
EXHAUSTED_DIMENSIONS: dict[str, str] = {X_SOURCE: SOURCE, X_EXECUTOR: EXECUTOR, X_GROUP: GROUP}

# The margins: the dimension of each, and the facet it counts ("state" for the Work).
MARGIN = "all:"
MARGIN_WORK, MARGIN_KIND, MARGIN_SCOPE = MARGIN + WORK, MARGIN + KIND, MARGIN + SCOPE
MARGIN_SOURCE, MARGIN_EXECUTOR = MARGIN + SOURCE, MARGIN + EXECUTOR
MARGIN_GROUP, MARGIN_EXHAUSTED = MARGIN + GROUP, MARGIN + EXHAUSTED
MARGINS: dict[str, str] = {
    MARGIN_WORK: "state",
    MARGIN_KIND: KIND,
    MARGIN_SCOPE: SCOPE,
    MARGIN_SOURCE: SOURCE,
    MARGIN_EXECUTOR: EXECUTOR,
    MARGIN_GROUP: GROUP,
    MARGIN_EXHAUSTED: EXHAUSTED,
}


def keys_of(
    state: str,
    scope_id: str,
    kind: str,
    source: str,
    executor: str,
    error_group: str,
    exhausted: bool,
) -> list[TallyKey]:
    """The tally rows a Work with these columns counts in (once each): its
    combination's rows, then the margins'. Apart from ``keys`` for a writer holding
    the columns and not the record (the benchmark's plain-driver floor), so that it
    writes the rows the API writes."""
    base = (state, scope_id, kind)
    out = [
        (*base, WORK, ""),
        (*base, SOURCE, source),
        (*base, EXECUTOR, executor),
        (*base, GROUP, error_group),
    ]
    if exhausted:
        out += [
            (*base, EXHAUSTED, ""),
            (*base, X_SOURCE, source),
            (*base, X_EXECUTOR, executor),
            (*base, X_GROUP, error_group),
        ]
    margin = (state, "", "")
    out += [
        (*margin, MARGIN_WORK, ""),
        (*margin, MARGIN_KIND, kind),
        (*margin, MARGIN_SCOPE, scope_id),
        (*margin, MARGIN_SOURCE, source),
        (*margin, MARGIN_EXECUTOR, executor),
        (*margin, MARGIN_GROUP, error_group),
    ]
    if exhausted:
        out.append((*margin, MARGIN_EXHAUSTED, ""))
    return out


def keys(work: Work) -> list[TallyKey]:
    """The tally rows one Work counts in (once each)."""
    return keys_of(
        work.state.value,
        work.scope_id,
        work.kind,
        work.source,
        work.latest_executor,
        work.error_group,
        work.exhausted,
    )


def delta(previous: Work | None, stored: Work, into: Counter[TallyKey]) -> None:
    """Add to ``into`` what replacing ``previous`` (None: a new Work) by ``stored``
    changes in the tally. Most updates change the state only; the rows of the
    dimensions that did not change cancel out here, not in the database."""
    if previous is not None:
        for key in keys(previous):
            into[key] -= 1
    for key in keys(stored):
        into[key] += 1


def count(works: Iterable[Work]) -> dict[TallyKey, int]:
    """The tally of ``works`` counted from scratch (what a backfill writes)."""
    tally: Counter[TallyKey] = Counter()
    for work in works:
        tally.update(keys(work))
    return dict(tally)


def answers(query: WorkQuery) -> bool:
    """Whether the tally gives ``query``'s facets and count exactly: it filters by
    nothing but states, Scope and kind (order, cursor and limit play no part)."""
    return not (
        query.parent_id
        or query.sources
        or query.executor
        or query.updated_since is not None
        or query.updated_before is not None
        or query.exhausted
        or query.error_group
    )


def answers_exhausted(query: WorkQuery) -> bool:
    """Whether the exhausted Work's rows give ``query``'s facets exactly: it selects
    the exhausted Work and filters by nothing else but states, Scope and kind."""
    return query.exhausted and answers(replace(query, exhausted=False))


def reads_margins(query: WorkQuery) -> bool:
    """Whether ``query``'s facets and count come from the margins: it filters by
    nothing but states (or nothing). A Scope or kind filter keeps the per-combination
    rows, which hold those keys."""
    return answers(query) and not (query.scope_id or query.scope_ids or query.kind)


def complements(query: WorkQuery) -> bool:
    """Whether ``query`` is a selection the tally answers bounded by ``until`` alone
    (``updated_before``, no ``updated_since``): the bound of a settled Work list,
    which every open tab polls. Its facets are the tally's for the selection without
    the bound less those of the selected Work updated at or after it (``minus``),
    which are few when the bound is recent. ``updated_since`` alone or both bounds
    are a range of update times read directly: no complement."""
    whole = unbounded(query)
    return (
        query.updated_before is not None
        and query.updated_since is None
        and (answers(whole) or answers_exhausted(whole))
    )


def unbounded(query: WorkQuery) -> WorkQuery:
    """``query`` without its ``until`` bound: the selection ``complements`` counts
    from the tally."""
    return replace(query, updated_before=None)


def since_bound(query: WorkQuery) -> WorkQuery:
    """The Work ``complements`` subtracts: ``query``'s, updated at or after its
    ``until`` bound."""
    return replace(query, updated_before=None, updated_since=query.updated_before)


def minus(whole: WorkFacets, part: WorkFacets) -> WorkFacets:
    """The facets of ``whole``'s selection without ``part``'s (a subset of it),
    values counted zero left out, as a ``WorkFacets`` counted from rows has none."""

    def less(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
        out = {v: n - b.get(v, 0) for v, n in a.items()}
        return {v: n for v, n in out.items() if n}

    return WorkFacets(
        state=less(whole.state, part.state),
        kind=less(whole.kind, part.kind),
        source=less(whole.source, part.source),
        scope=less(whole.scope, part.scope),
        executor=less(whole.executor, part.executor),
        exhausted=whole.exhausted - part.exhausted,
        error_group=less(whole.error_group, part.error_group),
    )


def selects(query: WorkQuery, state: str, scope_id: str, kind: str) -> bool:
    """Whether the tally rows of (state, scope, kind) belong to ``query``'s selection
    (``meaning.query.matches`` restricted to the tally's keys)."""
    return (
        (not query.states or any(s.value == state for s in query.states))
        and (not query.scope_id or scope_id == query.scope_id)
        and (not query.scope_ids or scope_id in query.scope_ids)
        and (not query.kind or kind == query.kind)
    )


def facets(query: WorkQuery, tally: Iterable[tuple[TallyKey, int]]) -> WorkFacets:
    """``query``'s facets from the tally rows (the double's and the rules' meaning;
    the ORM sums the same rows in SQL, ``orm.tally``): from the margins when
    ``reads_margins``, from the exhausted Work's rows when ``answers_exhausted``,
    else from the rows of the selected combinations."""
    if reads_margins(query):
        return _margin_facets(query, tally)
    if query.exhausted:
        return _exhausted_facets(query, tally)
    state: Counter[str] = Counter()
    kind: Counter[str] = Counter()
    scope: Counter[str] = Counter()
    per: dict[str, Counter[str]] = {SOURCE: Counter(), EXECUTOR: Counter(), GROUP: Counter()}
    exhausted = 0
    for (s, scope_id, k, dimension, value), n in tally:
        if not n or dimension not in DIMENSIONS or not selects(query, s, scope_id, k):
            continue
        if dimension == WORK:
            state[s] += n
            kind[k] += n
            scope[scope_id] += n
        elif dimension == EXHAUSTED:
            exhausted += n
        else:
            per[dimension][value] += n
    return from_sums(
        {
            "state": state,
            KIND: kind,
            SCOPE: scope,
            SOURCE: per[SOURCE],
            EXECUTOR: per[EXECUTOR],
            GROUP: per[GROUP],
        },
        exhausted,
    )


def total(query: WorkQuery, exhausted: bool, tally: Iterable[tuple[TallyKey, int]]) -> int:
    """How many Work of ``query``'s selection the tally rows count (``exhausted``:
    how many of them are exhausted): ``count_works``/``count_exhausted`` of a
    selection the tally ``answers``, from its Work rows alone (or exhausted rows),
    of the margins when ``reads_margins``. The sum of ``facets``' states."""
    margins = reads_margins(query)
    if margins:
        wanted = MARGIN_EXHAUSTED if exhausted else MARGIN_WORK
    else:
        wanted = EXHAUSTED if exhausted else WORK
    return sum(
        n
        for (s, scope_id, kind, dimension, _), n in tally
        if dimension == wanted and selects(query, s, scope_id, kind)
    )


def _exhausted_facets(query: WorkQuery, tally: Iterable[tuple[TallyKey, int]]) -> WorkFacets:
    sums: dict[str, Counter[str]] = {"state": Counter(), KIND: Counter(), SCOPE: Counter()}
    exhausted = 0
    for (s, scope_id, k, dimension, value), n in tally:
        if not n or not selects(query, s, scope_id, k):
            continue
        if dimension == EXHAUSTED:
            sums["state"][s] += n
            sums[KIND][k] += n
            sums[SCOPE][scope_id] += n
            exhausted += n
        elif dimension in EXHAUSTED_DIMENSIONS:
            sums.setdefault(EXHAUSTED_DIMENSIONS[dimension], Counter())[value] += n
    return from_sums(sums, exhausted)


def _margin_facets(query: WorkQuery, tally: Iterable[tuple[TallyKey, int]]) -> WorkFacets:
    sums: dict[str, Counter[str]] = {}
    exhausted = 0
    for (s, _, _, dimension, value), n in tally:
        facet = MARGINS.get(dimension)
        if not n or facet is None or not selects(query, s, "", ""):
            continue
        if facet == EXHAUSTED:
            exhausted += n
        else:
            sums.setdefault(facet, Counter())[s if facet == "state" else value] += n
    return from_sums(sums, exhausted)


def from_sums(sums: Mapping[str, Mapping[str, int]], exhausted: int) -> WorkFacets:
    """A ``WorkFacets`` from per-facet sums, leaving out values counted zero (a
    combination whose Work all moved on keeps its row at 0)."""

    def kept(name: str) -> dict[str, int]:
        return {v: n for v, n in sums.get(name, {}).items() if n}

    return WorkFacets(
        state=kept("state"),
        kind=kept(KIND),
        source=kept(SOURCE),
        scope=kept(SCOPE),
        executor=kept(EXECUTOR),
        exhausted=exhausted,
        error_group=kept(GROUP),
    )

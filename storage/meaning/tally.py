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
keep the GROUP BY over the rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from ..records import Work, WorkFacets, WorkQuery

# (state, scope_id, kind, dimension, value)
TallyKey = tuple[str, str, str, str, str]

# The dimensions of the tally beside the Work row itself (dimension "").
WORK, SOURCE, EXECUTOR, GROUP, EXHAUSTED = "", "source", "executor", "error_group", "exhausted"
DIMENSIONS = (WORK, SOURCE, EXECUTOR, GROUP, EXHAUSTED)


def keys(work: Work) -> list[TallyKey]:
    """The tally rows one Work counts in (once each)."""
    base = (work.state.value, work.scope_id, work.kind)
    out = [
        (*base, WORK, ""),
        (*base, SOURCE, work.source),
        (*base, EXECUTOR, work.latest_executor),
        (*base, GROUP, work.error_group),
    ]
    if work.exhausted:
        out.append((*base, EXHAUSTED, ""))
    return out


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
    the ORM sums the same rows in SQL, ``orm.tally``)."""
    state: Counter[str] = Counter()
    kind: Counter[str] = Counter()
    scope: Counter[str] = Counter()
    per: dict[str, Counter[str]] = {SOURCE: Counter(), EXECUTOR: Counter(), GROUP: Counter()}
    exhausted = 0
    for (s, scope_id, k, dimension, value), n in tally:
        if not n or not selects(query, s, scope_id, k):
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
            "kind": kind,
            "scope": scope,
            SOURCE: per[SOURCE],
            EXECUTOR: per[EXECUTOR],
            GROUP: per[GROUP],
        },
        exhausted,
    )


def from_sums(sums: Mapping[str, Mapping[str, int]], exhausted: int) -> WorkFacets:
    """A ``WorkFacets`` from per-facet sums, leaving out values counted zero (a
    combination whose Work all moved on keeps its row at 0)."""

    def kept(name: str) -> dict[str, int]:
        return {v: n for v, n in sums.get(name, {}).items() if n}

    return WorkFacets(
        state=kept("state"),
        kind=kept("kind"),
        source=kept(SOURCE),
        scope=kept("scope"),
        executor=kept(EXECUTOR),
        exhausted=exhausted,
        error_group=kept(GROUP),
    )

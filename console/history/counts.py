"""A dashboard's Work counts as they were at a moment (``/dashboard[/<scope>]?as_of=``):
the Work by state in a Scope's subtree (or everywhere) then, beside now.

Counts now come from the tally (``work_facets``); counts then are those less what
changed since: each Work whose first log row after the moment is read counts under
its state before that change instead of its state now (None: it did not exist). So
the cost follows the changes since the moment, never the store's size, and a moment
with more than ``SINCE_MAX`` log rows after it is refused in words rather than read.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from console.history.moments import Moment, Resolved, resolve
from console.polling import read
from console.scopes import subtree
from storage import RecordVersion, Tx, WorkQuery, WorkState

SINCE_MAX = 50_000  # log rows a count as of a moment reads at most
STEP = 5_000  # log rows a statement reads
WORKS_STEP = 500  # Work a current-state read takes


@dataclass(frozen=True, slots=True)
class CountsThen:
    now: int
    moment: Resolved
    scope_id: str  # "" for every Scope
    scopes: int  # Scopes in the subtree counted (0: every Scope)
    then: dict[str, int]  # by state value, every state
    current: dict[str, int]
    changed: int  # Work that changed since the moment
    too_far: bool  # more than SINCE_MAX log rows since: not counted

    @property
    def rows(self) -> list[tuple[str, int, int]]:
        return [
            (s.value, self.then.get(s.value, 0), self.current.get(s.value, 0)) for s in WorkState
        ]


def read_counts_then(scope_id: str, moment: Moment) -> CountsThen:
    """The Work by state in ``scope_id``'s subtree ("" for all) at ``moment`` and now."""

    def build(tx: Tx) -> CountsThen:
        resolved = resolve(tx, moment)  # FilterError: a version still to come
        tree = frozenset(subtree(tx.scopes(), scope_id).ids) if scope_id else None
        facets = tx.work_facets(WorkQuery(scope_ids=tree) if tree else WorkQuery())
        current = {state: n for state, n in facets.state.items() if n}
        firsts, too_far = _first_work_rows(tx, resolved.version)
        if too_far or not resolved.known:
            return CountsThen(tx.now, resolved, scope_id, len(tree or ()), {}, current, 0, too_far)
        then: Counter[str] = Counter(current)
        ids = sorted(firsts)
        for start in range(0, len(ids), WORKS_STEP):
            for work in tx.works_of(ids[start : start + WORKS_STEP]):
                if tree is None or work.scope_id in tree:
                    then[work.state.value] -= 1
        for row in firsts.values():
            before = row.before
            if before is not None and (tree is None or before.scope_id in tree):
                then[before.state.value] += 1
        counts = {state: n for state, n in then.items() if n}
        return CountsThen(
            tx.now, resolved, scope_id, len(tree or ()), counts, current, len(firsts), False
        )

    return read(build)


def _first_work_rows(tx: Tx, version: int) -> tuple[dict[str, RecordVersion], bool]:
    """Each Work's first log row after ``version``, and whether there were more than
    ``SINCE_MAX`` rows to read (then the rows are not all read)."""
    firsts: dict[str, RecordVersion] = {}
    start = seen = 0
    while True:
        page = tx.version_changes(after=version, start=start, limit=STEP)
        for row in page:
            if row.kind == "work" and row.id not in firsts:
                firsts[row.id] = row
        seen += len(page)
        if len(page) < STEP:
            return firsts, False
        if seen >= SINCE_MAX:
            return firsts, True
        start = page[-1].position

"""The workflow tally: how many workflows have each combination of the four facet
columns, kept beside the workflow rows by the transaction that writes them.

The Workflows list shows, beside its page, how many workflows of its selection have
each status, kind, deployment and terminal reason (``rules.listing.workflow_facets``)
and how many it selects in all. Counted from the rows, that is one GROUP BY per facet
over every selected workflow: its time follows the number of workflows (benchmark 9:
59 ms for the list at 100,000 workflows against 37 ms for the Work list). The tally
keeps those counts instead, as rows

    (parent, status, kind, reason) -> n

one per combination ever written (``FacetKey``; a combination whose workflows all
moved on keeps its row at 0). A selection by those four columns only (``answers``: no
``keys``, no ``key_prefix``) is then a sum over the tally rows it selects, whose number
follows the deployments x statuses x kinds x reasons in use, never the workflows. A
selection by IDs (a search's hits, an ID prefix) keeps the GROUP BY over the rows.

Who keeps it: ``TalliedRows``, the rows every rule writes through (``RoutedStore``
builds it over the backend's rows and their cache). Each insert of a ``FACET_TABLES``
row adds its combination and each successful update moves the previous row's
combination to the new one's, through ``Rows.add_counts``, right after the row write
in the same transaction. So the counts are exact inside the writing transaction as
well as after its commit, and a rollback takes them back with the rows. A bulk load
that writes workflow rows past the rules (plain SQL) must count them again
(``rows_orm.rebuild_workflow_tally``), as migration 0016 did once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable

from ..errors import Invalid
from .rows import FACET_TABLES, TALLY_COLUMNS, FacetKey, PassRows, Row, RowFilter

# The position of each tally column in a ``FacetKey``.
POSITION: dict[str, int] = {"parent": 0, "status": 1, "kind": 2, "reason": 3}


def key_of(row: Row) -> FacetKey:
    return (row.parent, row.status, row.kind, row.reason)


def delta(previous: Row | None, row: Row) -> dict[FacetKey, int]:
    """What replacing ``previous`` (None: an insert) by ``row`` changes in the tally,
    without the zeros: an update that keeps the four columns changes nothing."""
    changes: Counter[FacetKey] = Counter({key_of(row): 1})
    if previous is not None:
        changes[key_of(previous)] -= 1
    return {key: n for key, n in changes.items() if n}


def count(rows: Iterable[Row]) -> dict[FacetKey, int]:
    """The tally of ``rows`` counted from scratch (what a rebuild writes)."""
    return dict(Counter(key_of(row) for row in rows))


def answers(where: RowFilter) -> bool:
    """Whether the tally counts what ``where`` selects exactly: it selects by the four
    facet columns only."""
    return where.keys is None and not where.key_prefix


def check_ask(column: str, where: RowFilter) -> None:
    """What every backend's ``counted`` refuses (``Invalid``): a column that is not
    tallied, a selection the counts cannot make (by keys)."""
    if column not in TALLY_COLUMNS:
        raise Invalid(f"routed rows are not tallied by {column!r}")
    if not answers(where):
        raise Invalid("the workflow tally knows no keys: count a selection by keys from the rows")


def selects(where: RowFilter, key: FacetKey) -> bool:
    """Whether the workflows of combination ``key`` are among those ``where`` selects
    (``RowFilter.matches`` restricted to the tally's columns)."""
    parent, status, kind, reason = key

    def within(values: Collection[str] | None, value: str) -> bool:
        return values is None or value in values

    return (
        within(where.parents, parent)
        and within(where.statuses, status)
        and within(where.kinds, kind)
        and within(where.reasons, reason)
    )


def sums(counts: Iterable[tuple[FacetKey, int]], column: str, where: RowFilter) -> dict[str, int]:
    """The counts of the combinations ``where`` selects, summed per value of
    ``column``, zeros left out: the double's ``counted``; the ORM's says the same in
    SQL."""
    at = POSITION[column]
    out: Counter[str] = Counter()
    for key, n in counts:
        if selects(where, key):
            out[key[at]] += n
    return {value: n for value, n in out.items() if n}


class TalliedRows(PassRows):
    """The rules' rows, keeping the tally of every ``FACET_TABLES`` table with its
    rows (the module's docstring). Everything else goes straight through.

    It sits above ``CachedRows``: the previous row of an update is the one the rule
    read to check it, so finding its combination costs no statement; an update that
    leaves the four columns as they were costs none either. A failed insert or update
    (a taken key, a stale generation) wrote nothing and counts nothing.
    """

    def insert(self, table: str, row: Row) -> bool:
        done = self._inner.insert(table, row)
        if done and table in FACET_TABLES:
            self._inner.add_counts(table, delta(None, row))
        return done

    def update(self, table: str, row: Row, expected: int) -> bool:
        previous = self._inner.get(table, row.key) if table in FACET_TABLES else None
        done = self._inner.update(table, row, expected)
        if done and previous is not None:
            changes = delta(previous, row)
            if changes:
                self._inner.add_counts(table, changes)
        return done

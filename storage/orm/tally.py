"""The Work tally's SQL (``storage.meaning.tally`` is its meaning): the upsert the
rules' changes go out as, the facets read, and the rebuild a migration or a bulk
load runs.

Write contention. Every committing writer that changes a Work adds to a few tally
rows, and two writers changing Work of the same (state, Scope, kind) touch the same
row. On SQLite writers are serialised by ``BEGIN IMMEDIATE`` anyway; on PostgreSQL by
the writers' advisory lock, taken before ``BEGIN`` (``orm.store``), so a tally row
never makes one writer wait for another that the lock did not already order, and the
SERIALIZABLE transaction underneath never sees a concurrent update of it. The cost
that remains is the statement: one multi-row upsert per committing transaction
that changed Work, sent with its other writes at the flush (``upserts``). A writer outside the lock
(a raw query) that updated a tally row would be a serialization failure (``Conflict``),
as for every other row. Were the lock ever dropped for row-level concurrency, hot
rows (``ready`` of the busiest kind, and the margins, ``ready`` of every Work) would
serialise writers; the remedy then is striping each key over a few rows (a
``stripe`` column summed by the read).

The margins live in this table, not one of their own: the rules' one upsert per
committing transaction carries them with the per-combination rows (a table of their
own would be a second statement in every writing transaction), the unique key and
its index serve both (a margin's Scope and kind are ""), and a bulk load's rebuild
and the plain-driver benchmark write one table as before. The price is that every
read of the per-combination rows names its dimensions (``tally.DIMENSIONS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..meaning import tally
from ..records import WorkFacets, WorkQuery
from . import schema

_COLUMNS = "dimension, state, scope_id, kind, value"

_ROW = "(%s, %s, %s, %s, %s, %s)"
_CONFLICT = f" ON CONFLICT ({_COLUMNS}) DO UPDATE SET n = {schema.WORK_TALLY}.n + excluded.n"
# Rows per upsert statement: 6 parameters each, within every engine's bound.
CHUNK = 1_000


def upserts(changes: Mapping[tally.TallyKey, int]) -> list[tuple[str, list[Any]]]:
    """The upsert statements of ``changes``: one multi-row INSERT ... ON CONFLICT per
    ``CHUNK`` rows (a writing transaction's changes are a few rows, so one statement),
    not one execution per row. Each key appears once (``changes`` is a mapping), as
    PostgreSQL requires of the rows of one ON CONFLICT DO UPDATE. Rows in key order
    (the index's: fewer page visits)."""
    rows = sorted(
        [dimension, state, scope, kind, value, n]
        for (state, scope, kind, dimension, value), n in changes.items()
    )
    out = []
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        values = ", ".join([_ROW] * len(chunk))
        sql = f"INSERT INTO {schema.WORK_TALLY} ({_COLUMNS}, n) VALUES {values}{_CONFLICT}"
        out.append((sql, [p for row in chunk for p in row]))
    return out


def _where(query: WorkQuery) -> tuple[str, list[Any]]:
    """The selection's (state, Scope, kind) filter, as ``tally.selects`` means it."""
    where: list[str] = []
    params: list[Any] = []

    def any_of(column: str, values: list[str]) -> None:
        where.append(f"{column} IN ({', '.join(['%s'] * len(values))})")
        params.extend(values)

    if query.states:
        any_of("state", sorted(s.value for s in query.states))
    if query.scope_id:
        where.append("scope_id = %s")
        params.append(query.scope_id)
    if query.scope_ids:
        any_of("scope_id", sorted(query.scope_ids))
    if query.kind:
        where.append("kind = %s")
        params.append(query.kind)
    return "".join(f" AND {w}" for w in where), params


def _listed(values: tuple[str, ...]) -> str:
    """An SQL list of the tally's own dimension names (constants, never input)."""
    return ", ".join(f"'{v}'" for v in values)


def facets_statement(query: WorkQuery) -> tuple[str, list[Any]]:
    """One statement of the selection's facet sums. A selection by states alone
    (``tally.reads_margins``) reads the margins: per state the Work, and per value of
    each margin, states x distinct values rows. Any other reads the selected
    combinations' rows: per state, kind and Scope from the Work rows (dimension ""),
    per value of every other dimension, each named (the margins' rows are not
    theirs). A selection of the exhausted Work (``tally.answers_exhausted``) reads
    their rows the same way: the exhausted rows for state, kind and Scope (and their
    sum for the exhausted count), the exhausted Work's own dimensions for the rest.
    Either way its cost follows the values in use, whatever the number of Work; the
    unique index leads with the dimension, so each part is index ranges."""
    where, params = _where(query)
    table = schema.WORK_TALLY
    if tally.reads_margins(query):
        others = _listed(tuple(m for m in tally.MARGINS if m != tally.MARGIN_WORK))
        parts = [
            f"SELECT 'state', state, SUM(n) FROM {table} "
            f"WHERE dimension = '{tally.MARGIN_WORK}'{where} GROUP BY state",
            f"SELECT dimension, value, SUM(n) FROM {table} "
            f"WHERE dimension IN ({others}){where} GROUP BY dimension, value",
        ]
        return " UNION ALL ".join(parts), params * len(parts)
    if query.exhausted:
        # ``tally.answers_exhausted``: the exhausted rows stand for the Work rows, and
        # the exhausted Work's own dimensions for the others; their count is the sum.
        rows, others = tally.EXHAUSTED, _listed(tuple(tally.EXHAUSTED_DIMENSIONS))
    else:
        rows, others = tally.WORK, _listed(tuple(d for d in tally.DIMENSIONS if d != tally.WORK))
    work = f"FROM {table} WHERE dimension = '{rows}'{where}"
    parts = [
        f"SELECT 'state', state, SUM(n) {work} GROUP BY state",
        f"SELECT '{tally.KIND}', kind, SUM(n) {work} GROUP BY kind",
        f"SELECT '{tally.SCOPE}', scope_id, SUM(n) {work} GROUP BY scope_id",
        f"SELECT dimension, value, SUM(n) FROM {table} "
        f"WHERE dimension IN ({others}){where} GROUP BY dimension, value",
    ]
    if query.exhausted:
        parts.append(f"SELECT '{tally.EXHAUSTED}', '', SUM(n) {work}")
    return " UNION ALL ".join(parts), params * len(parts)


def total_statement(query: WorkQuery, exhausted: bool) -> tuple[str, list[Any]]:
    """``tally.total`` in SQL: one sum over the selection's Work rows (or exhausted
    rows), of the margins for a selection by states alone; one index range per
    state (and Scope) selected, not the facets' every value."""
    where, params = _where(query)
    if tally.reads_margins(query):
        dimension = tally.MARGIN_EXHAUSTED if exhausted else tally.MARGIN_WORK
    else:
        dimension = tally.EXHAUSTED if exhausted else tally.WORK
    sql = f"SELECT SUM(n) FROM {schema.WORK_TALLY} WHERE dimension = '{dimension}'{where}"
    return sql, params


def facets_of(rows: list[tuple[str, str, Any]]) -> WorkFacets:
    """The facets from ``facets_statement``'s rows."""
    sums: dict[str, dict[str, int]] = {}
    exhausted = 0
    for named, value, n in rows:
        facet = tally.MARGINS.get(named) or tally.EXHAUSTED_DIMENSIONS.get(named, named)
        if facet == tally.EXHAUSTED:
            exhausted += int(n or 0)  # SUM of no row is NULL
        else:
            sums.setdefault(facet, {})[value] = int(n)
    return tally.from_sums(sums, exhausted)


def rebuild(cursor: Any, true: Any) -> None:
    """Replace the tally by a full count of the Work rows (``tally.count``), its
    per-combination rows and its margins: for a migration's backfill, or after a bulk
    load that wrote Work rows in plain SQL. ``true`` is the engine's boolean literal
    for the ``exhausted`` column."""
    cursor.execute(f"DELETE FROM {schema.WORK_TALLY}")
    valued = (
        (tally.SOURCE, "source"),
        (tally.EXECUTOR, "latest_executor"),
        (tally.GROUP, "error_group"),
    )
    key = "state, scope_id, kind"
    parts = [
        f"SELECT '{tally.WORK}', {key}, '', COUNT(*) FROM {schema.WORK} GROUP BY {key}",
        *(
            f"SELECT '{dimension}', {key}, {column}, COUNT(*) FROM {schema.WORK} "
            f"GROUP BY {key}, {column}"
            for dimension, column in valued
        ),
        f"SELECT '{tally.EXHAUSTED}', {key}, '', COUNT(*) FROM {schema.WORK} "
        f"WHERE exhausted = {true} GROUP BY {key}",
        *(
            f"SELECT '{tally.EXHAUSTED_OF + dimension}', {key}, {column}, COUNT(*) "
            f"FROM {schema.WORK} WHERE exhausted = {true} GROUP BY {key}, {column}"
            for dimension, column in valued
        ),
        # The margins: keyed by state and value only.
        f"SELECT '{tally.MARGIN_WORK}', state, '', '', '', COUNT(*) FROM {schema.WORK} "
        "GROUP BY state",
        *(
            f"SELECT '{tally.MARGIN + dimension}', state, '', '', {column}, COUNT(*) "
            f"FROM {schema.WORK} GROUP BY state, {column}"
            for dimension, column in (
                (tally.KIND, "kind"),
                (tally.SCOPE, "scope_id"),
                *valued,
            )
        ),
        f"SELECT '{tally.MARGIN_EXHAUSTED}', state, '', '', '', COUNT(*) FROM {schema.WORK} "
        f"WHERE exhausted = {true} GROUP BY state",
    ]
    cursor.execute(f"INSERT INTO {schema.WORK_TALLY} ({_COLUMNS}, n) {' UNION ALL '.join(parts)}")

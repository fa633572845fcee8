"""The series tally's SQL (``storage.meaning.series_tally`` is its meaning): the
upsert the rules' changes go out as, a series bucket as index counts of its partial
days plus a sum over the tally rows of its whole days, and the rebuild a migration or
a bulk load runs.

Write cost: per committing transaction that accepted Events, first claimed attempts
or changed Work, one multi-row upsert, sent with its other writes at the flush
(``upserts``; on PostgreSQL in the flush's one text). An Event or a first claim adds
to two rows (its Scope's day, the store-wide day), a Work write to at most four (the
previous and new (state, Scope, day), each also store-wide), none when its state,
Scope and update day did not change. Contention is the Work tally's
(``orm.tally``): every writer is already ordered by SQLite's ``BEGIN IMMEDIATE`` or
PostgreSQL's writers' lock, so a shared day row makes no writer wait on another.

Read cost: one statement reads the tally rows of the window, one index range per
selected (Scope, state) (the store-wide rows: one Scope), a row per day, whatever the
number of records those days hold; the partial days at the buckets' ends are index
COUNTs of at most half a day of records per boundary (``plan``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..meaning import series_tally
from ..meaning.series_tally import DAY, SeriesKey
from ..records import Buckets, Nanos
from . import schema
from .dialect import Dialect

# A scalar SQL expression and its parameters.
Part = tuple[str, list[Any]]

# Where a series' window (a FROM clause) puts the bounds [low, high) of a range.
LOW, HIGH = "{low}", "{high}"

_COLUMNS = "series, scope_id, state, day"
_ROW = "(%s, %s, %s, %s, %s)"
_CONFLICT = f" ON CONFLICT ({_COLUMNS}) DO UPDATE SET n = {schema.SERIES_TALLY}.n + excluded.n"
# Rows per upsert statement: 5 parameters each, within every engine's bound.
CHUNK = 1_000


def upserts(changes: Mapping[SeriesKey, int]) -> list[tuple[str, list[Any]]]:
    """The upsert statements of ``changes``: one multi-row INSERT ... ON CONFLICT per
    ``CHUNK`` rows (a transaction's changes are a few rows: one statement), each key
    once (``changes`` is a mapping, as PostgreSQL's ON CONFLICT DO UPDATE requires),
    in key order."""
    rows = sorted([*key, n] for key, n in changes.items())
    out = []
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        values = ", ".join([_ROW] * len(chunk))
        sql = f"INSERT INTO {schema.SERIES_TALLY} ({_COLUMNS}, n) VALUES {values}{_CONFLICT}"
        out.append((sql, [p for row in chunk for p in row]))
    return out


@dataclass(frozen=True, slots=True)
class Plan:
    """How a series over an axis is read with the tally. ``whole``: per bucket, the
    whole days inside it summed from the tally (``series_tally.split``), None for a
    bucket counted from the records alone. ``cuts``: per boundary k (the instant
    ``start + k * width``) that falls inside a day and borders a bucket with whole
    days, the range of that day counted from the records, ``(low, high, day,
    before)``: the day's part before the instant, or the part after it (``before``
    false). The other part is the day's tally row minus it: the records of a day are
    the records before an instant in it plus those after. The shorter part is the
    one counted: at most half a day of records per boundary."""

    whole: list[tuple[int, int] | None]
    cuts: dict[int, tuple[Nanos, Nanos, int, bool]]


def plan(buckets: Buckets, tallied: bool = True) -> Plan:
    """The ``Plan`` of ``buckets`` (``tallied`` false: every bucket counted whole)."""
    if not tallied:
        return Plan([None] * buckets.count, {})
    whole = [series_tally.split(*buckets.bounds(i))[1] for i in range(buckets.count)]
    cuts = {}
    for k in range(buckets.count + 1):
        t = buckets.start + k * buckets.width
        day, into = divmod(t, DAY)
        borders = (k > 0 and whole[k - 1] is not None) or (
            k < buckets.count and whole[k] is not None
        )
        if borders and into:
            before = into <= DAY // 2
            cuts[k] = (day * DAY, t, day, True) if before else (t, (day + 1) * DAY, day, False)
    return Plan(whole, cuts)


def days_statement(
    buckets: Buckets,
    chosen: Plan,
    series: str,
    scope_ids: Sequence[str] | None,
    states: Sequence[str],
) -> Part | None:
    """One statement over the selection's tally rows: per state and bucket, the sum
    of the days lying whole inside it (rows ``(0, state, bucket, n)``), and per state
    the sum of each cut day (``(1, state, day, n)``). One index range per selected
    (Scope, state), each row read once, whatever the number of records. Day d lies in
    bucket (d * DAY - start) // width, whole when its end is within that bucket's;
    the range starts at the first day beginning inside the axis, so the division is
    of a nonnegative number. None when there is nothing to read."""
    name, scopes = series_tally.selected(series, scope_ids)
    first, last = -(-buckets.start // DAY), buckets.end // DAY
    if not scopes or not states:
        return None
    rows = (
        f"FROM {schema.SERIES_TALLY} WHERE series = %s"
        f" AND scope_id IN ({', '.join(['%s'] * len(scopes))})"
        f" AND state IN ({', '.join(['%s'] * len(states))})"
    )
    key = [name, *scopes, *states]
    branches: list[str] = []
    params: list[Any] = []
    if any(w is not None for w in chosen.whole) and first < last:
        start, width = buckets.start, buckets.width
        bucket = f"(day * {DAY} - %s) / %s"
        branches.append(
            f"SELECT 0, state, {bucket} AS k, SUM(n) {rows} AND day >= %s AND day < %s"
            f" AND (day + 1) * {DAY} <= %s + ({bucket} + 1) * %s GROUP BY state, k"
        )
        params += [start, width, *key, first, last, start, start, width, width]
    if chosen.cuts:
        days = sorted({day for _, _, day, _ in chosen.cuts.values()})
        branches.append(
            f"SELECT 1, state, day, SUM(n) {rows}"
            f" AND day IN ({', '.join(['%s'] * len(days))}) GROUP BY state, day"
        )
        params += [*key, *days]
    return (" UNION ALL ".join(branches), params) if branches else None


def grid_statement(
    window: str, params: Sequence[list[Any]], ranges: Sequence[tuple[Nanos, Nanos]]
) -> Part:
    """One statement counting ``window`` over every range, for every state: a row
    per range (j, then one count per ``params[k]``), each count a correlated
    subquery over the range's bounds, planned once and run once per range."""
    inner = window.replace(LOW, "b.lo").replace(HIGH, "b.hi")
    columns = ", ".join([f"(SELECT COUNT(*) FROM {inner})"] * len(params))
    values = ", ".join(["(%s, %s, %s)"] * len(ranges))
    sql = f"SELECT b.j, {columns} FROM (VALUES {values}) AS b(j, lo, hi)"
    bounds = [v for j, (low, high) in enumerate(ranges) for v in (j, low, high)]
    return sql, [*(v for bound in params for v in bound), *bounds]


def counts(
    scalars: Callable[[list[Part]], list[int]],
    rows: Callable[[str, list[Any]], list[Any]],
    b: Buckets,
    window: str,
    params: Sequence[list[Any]],
    series: str,
    scope_ids: Sequence[str] | None,
    states: Sequence[str],
    tallied: bool = True,
    grid: bool = False,
) -> list[list[int]]:
    """Per state, a series' counts per bucket. From the records: a COUNT over one
    index range of ``window`` (bounds at ``LOW`` and ``HIGH``, then ``params[k]`` for
    ``states[k]``) for each bucket holding no whole day and each cut of the ``Plan``;
    through ``scalars`` one scalar subquery each, bounds as parameters (SQLite uses
    an expression index only against those, not against a joined table of bounds),
    or, ``grid`` (with the tally only), all in one ``grid_statement`` through
    ``rows``. From the tally (``tallied``), through ``rows``: ``days_statement``'s
    sums of the whole days and of the cut days of ``series``' rows. A bucket with
    whole days is their sum, plus the part after its first boundary and before its
    last within their days. Not one GROUP BY over the records: grouping by a JSON
    expression evaluates it again from every table row (SQLite before 3.41 and
    PostgreSQL do not take it from the index), which measured 20 times slower than
    COUNTs per bucket."""
    chosen = plan(b, tallied)
    out = [[0] * b.count for _ in states]
    # The ranges counted from the records: (bucket, -1) whole, or (-1, cut).
    owners = [(i, -1) for i, whole in enumerate(chosen.whole) if whole is None]
    owners += [(-1, cut) for cut in chosen.cuts]
    ranges = [b.bounds(i) if i >= 0 else chosen.cuts[cut][:2] for i, cut in owners]
    found: list[list[int]]  # per state, per range
    if grid and tallied and ranges:
        table = {int(r[0]): r[1:] for r in rows(*grid_statement(window, params, ranges))}
        found = [[int(table[j][k]) for j in range(len(ranges))] for k in range(len(states))]
    else:
        bounded = window.replace(LOW, "%s").replace(HIGH, "%s")
        subquery = f"(SELECT COUNT(*) FROM {bounded})"
        parts = [(subquery, [low, high, *bound]) for bound in params for low, high in ranges]
        flat = scalars(parts) if parts else []
        found = [flat[k * len(ranges) : (k + 1) * len(ranges)] for k in range(len(states))]
    measured: dict[tuple[int, int], int] = {}
    for k in range(len(states)):
        for (i, cut), n in zip(owners, found[k], strict=True):
            if cut < 0:
                out[k][i] += n
            else:
                measured[(k, cut)] = n
    statement = days_statement(b, chosen, series, scope_ids, states)
    sums: dict[tuple[int, str, int], int] = {}
    for kind, state, key, n in rows(*statement) if statement is not None else []:
        sums[(int(kind), state, int(key))] = int(n)
    for k, state in enumerate(states):

        def part(cut: int, before: bool, k: int = k, state: str = state) -> int:
            """The records of the cut's day before (or after) its instant."""
            if cut not in chosen.cuts:
                return 0  # the boundary is a midnight: no partial day
            _, _, day, counted_before = chosen.cuts[cut]
            n = measured[(k, cut)]
            return n if counted_before == before else sums.get((1, state, day), 0) - n

        for i, whole in enumerate(chosen.whole):
            if whole is not None:
                out[k][i] += sums.get((0, state, i), 0) + part(i, False) + part(i + 1, True)
    return out


def rebuild(cursor: Any, dialect: Dialect) -> None:
    """Replace the series tally by a full count of the Event, attempt and Work rows
    (``series_tally.count``): for a bulk load that wrote them in plain SQL."""
    cursor.execute(f"DELETE FROM {schema.SERIES_TALLY}")
    received = f"{dialect.json_nanos('data', 'received_at')} / {DAY}"
    started_at = dialect.json_nanos("data", "started_at")
    started = f"{started_at} / {DAY}"
    updated = f"updated_ns / {DAY}"
    wide = series_tally.STORE_WIDE
    ev, at, wk = series_tally.EVENT, series_tally.ATTEMPT, series_tally.WORK
    claimed = f"{schema.EXECUTION} WHERE {started_at} > 0"
    parts = [
        f"SELECT '{ev}', scope_id, '', {received}, COUNT(*) FROM {schema.EVENT}"
        f" GROUP BY scope_id, {received}",
        f"SELECT '{ev}{wide}', '', '', {received}, COUNT(*) FROM {schema.EVENT}"
        f" GROUP BY {received}",
        f"SELECT '{at}', scope_id, '', {started}, COUNT(*) FROM {claimed}"
        f" GROUP BY scope_id, {started}",
        f"SELECT '{at}{wide}', '', '', {started}, COUNT(*) FROM {claimed} GROUP BY {started}",
        f"SELECT '{wk}', scope_id, state, {updated}, COUNT(*) FROM {schema.WORK}"
        f" GROUP BY scope_id, state, {updated}",
        f"SELECT '{wk}{wide}', '', state, {updated}, COUNT(*) FROM {schema.WORK}"
        f" GROUP BY state, {updated}",
    ]
    cursor.execute(f"INSERT INTO {schema.SERIES_TALLY} ({_COLUMNS}, n) {' UNION ALL '.join(parts)}")

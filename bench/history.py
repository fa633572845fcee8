"""The histories the benchmarks run on: a realistic seed, amplified by a bulk path.

A *seed* is real history: ``manage.py migrate``, then ``manage.py generate --works N
--realistic`` (every state, through the storage API, so every contract check holds:
about 1% of the Work live, about 3 attempts and 6 Events per Work, Waits, Timers,
artifacts), then a fixed number of Events accepted and left unrouted, through the
storage API too.

Larger histories *amplify* a seed (the documented bulk path): all its Work is cloned,
with everything that belongs to it (correlation keys, attempts, routed Events, Waits,
live Timers), under new IDs (suffix ``-cNNNN``), in plain SQL, until the Work table
holds the requested count. Terminal Work is shifted back in time by whole seed spans
(older history); live Work keeps the seed's recent times, so every size has the seed's
proportions: the live set grows with the history (1% of it), as do attempts, Events,
Waits and Timers. Each copy also takes a place in a long tail (``long_tail``): its
kinds get a variant suffix in every other copy, its Scopes a child Scope in every
third, so the kinds and Scopes in use grow with the history too. Why a bulk path:
``generate`` writes tens to a few hundred Work per second through the API (every
operation rereads what it checks), so a million would take hours. What keeps the
contract's checks: the clones are copies of checked records with every reference
renamed consistently (a Work's keys, attempts, Waits, Timers and Events carry the
same suffix; unique delivery IDs and key IDs are suffixed too), and what the rules
keep beside the records is rebuilt from them afterwards (the Work tally,
``storage.orm.tally.rebuild``, and the series tally,
``storage.orm.series_tally.rebuild``; an attempt's Scope column is its Work's by
construction). Not cloned: deleted Timers' tombstone rows (no benchmarked read touches
them) and unrouted Events (the unrouted scan's selection stays the seed's). The
record-version log is copied with the records and numbered again in time order
(``bench.version_log``). Cloned
Events get sequences after the seed's (AUTOINCREMENT), so in acceptance order the old
history comes last; no benchmarked read depends on Event order across Work.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from . import density as density_
from . import version_log
from .proc import DataDir, Workspace, checkpoint, child, log, manage, settle

TERMINAL_WORK = ("completed", "failed", "cancelled")
HOUR_NS = 3_600 * 10**9
UNROUTED_KIND = "bench.unrouted"


@dataclass(frozen=True)
class Seed:
    data: DataDir
    works: int
    seconds: float  # generate's wall time, process start included
    rate: float  # Work per second, as generate measured it
    line: str  # generate's summary line


def reused(ws: Workspace, name: str, built: dict[str, Any]) -> DataDir | None:
    """``name``'s folder in a kept workspace (``--reuse``) when an earlier run built it
    with the same parameters (``built``), brought to this code's schema: its
    migrations run (their backfills fill what newer rules keep beside the records)
    and the tallies are counted again. None when it is missing or was built otherwise."""
    data = DataDir(ws.root / name)
    marker = data.path / BUILT
    if not (data.db.exists() and marker.exists()):
        return None
    if json.loads(marker.read_text()) != built:
        return None
    log(f"reusing {data.path} ({built})")
    ws.reused.append(name)
    manage(data, "migrate", "--noinput", "-v", "0")
    child(data, "history.rebuild_tally")
    checkpoint(data)
    return data


def _mark(data: DataDir, built: dict[str, Any]) -> None:
    (data.path / BUILT).write_text(json.dumps(built))


# The parameters a kept history was built with (``reused``).
BUILT = "built.json"


def seed(ws: Workspace, works: int, unrouted: int, progress: bool) -> Seed:
    """A migrated database with ``works`` generated Work and ``unrouted`` unrouted Events."""
    built = {"seed": works, "unrouted": unrouted}
    again = reused(ws, "seed", built) if ws.keep else None
    if again is not None:
        saved = json.loads((again.path / "seed-line.json").read_text())
        return Seed(again, works, saved["seconds"], saved["rate"], saved["line"])
    data = ws.migrated("seed")
    # ~50 batches: history spread over 50 instants, each batch one transaction.
    batch = max(20, works // 50)
    args = ["generate", "--works", str(works), "--seed", "1", "--batch", str(batch), "--realistic"]
    started = time.monotonic()
    line = manage(data, *args, *([] if progress else ["--no-progress"]), quiet=not progress)
    elapsed = time.monotonic() - started
    child(data, "history.unrouted", count=unrouted)
    checkpoint(data)
    line = line.strip().splitlines()[-1] if line.strip() else ""
    # generate's own rate (without the process start), else ours.
    found = re.search(r"\(([\d.]+) Work/s\)", line)
    rate = float(found.group(1)) if found else works / elapsed if elapsed else 0.0
    saved = {"seconds": elapsed, "rate": rate, "line": line}
    (data.path / "seed-line.json").write_text(json.dumps(saved))
    _mark(data, built)
    return Seed(data, works, elapsed, rate, line)


def add_unrouted(count: int) -> int:
    """(child) Accept ``count`` Events nobody routes, in one transaction: the unrouted
    scan's selection, the same in every history amplified from this seed."""
    import uuid

    from storage import Event, Guard, Tx
    from storage.default import default_store

    def accept(tx: Tx) -> int:
        for i in range(count):
            event = Event(str(uuid.uuid4()), "bench", f"unrouted-{i}", UNROUTED_KIND)
            tx.accept_event(event)
        return count

    return int(default_store().transact(Guard(), accept))


def rebuild_tally() -> int:
    """(child) Count the Work tally again from the Work rows (``storage.orm.tally``)
    and the series tally from the Event, attempt and Work rows
    (``storage.orm.series_tally``): the clones went into those tables in plain SQL,
    past the rules that keep them. Returns the rows of both."""
    from django.db import connection, transaction

    from storage.orm import series_tally, tally
    from storage.orm.dialect import dialect

    with transaction.atomic(), connection.cursor() as cursor:
        tally.rebuild(cursor, dialect(connection).true)
        series_tally.rebuild(cursor, dialect(connection))
        cursor.execute(
            "SELECT (SELECT count(*) FROM conduit_work_tally)"
            " + (SELECT count(*) FROM conduit_series_tally)"
        )
        return int(cursor.fetchone()[0])


def amplify(
    ws: Workspace,
    seed: Seed,
    works: int,
    name: str,
    proportional: bool = True,
    density: str = density_.SEED,
) -> DataDir:
    """A copy of the seed grown to ``works`` Work: every Work cloned, so the live set
    grows in proportion (``proportional``, the realistic history), or its terminal
    Work only, so every size keeps the seed's own live set (benchmark 2 compares
    retained history under one live set). ``density`` ``production``
    (``bench.density``): the copies come at a team's arrival rate, with long tails of
    error groups, sources and executors, a few Work with 1,000+ Events, and run
    records and routed workflows in proportion."""
    built: dict[str, Any] = {
        "seed": seed.works,
        "works": works,
        "proportional": proportional,
        "version_log": True,  # the copies' version log (bench.version_log)
    }
    if density != density_.SEED:
        built["density"] = density
    again = reused(ws, name, built) if ws.keep else None
    if again is not None:
        return again
    data = ws.copy_of(seed.data, name)
    con = sqlite3.connect(data.db, isolation_level=None)
    try:
        # A throwaway build: durability is moot, so no journal at all. In WAL mode
        # every copy's commit wrote each page it touched to the log and back (the
        # unique ID indexes take every copy's rows all over their key range, so a
        # copy touches most of their pages): 67 GB written by 570,000 Work, and the
        # rate fell from 1,900 to 320 Work/s as the indexes outgrew the cache.
        con.execute("PRAGMA journal_mode=OFF").fetchall()
        con.execute("PRAGMA synchronous=OFF")
        con.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        con.execute("PRAGMA temp_store=MEMORY")
        con.execute("PRAGMA threads=2")  # the index builds' sorts may use a helper thread
        have = con.execute("SELECT count(*) FROM conduit_work").fetchone()[0]
        if works > have:
            _clone(con, works - have, name, proportional, density)
        con.execute("PRAGMA journal_mode=WAL").fetchall()  # as the project opens it
    finally:
        con.close()
    if density == density_.PRODUCTION:
        made = child(data, "density.add_routed", count=density_.routed_count(works))
        log(f"  {name}: {made['runs']:,} run records, {made['workflows']:,} workflows")
    child(data, "history.rebuild_tally")
    checkpoint(data)
    settle()
    _mark(data, built)
    return data


# The build's page cache, and the Work cloned per transaction: a chunk's pages are
# written once, at its commit, and stay in the cache between its copies.
CACHE_KIB = 3_000_000
CHUNK_WORKS = 50_000

# The tables clones go into. Their secondary indexes are dropped while rows are cloned
# and built again afterwards from their own SQL (sqlite_master), which is many times
# faster than updating a dozen indexes per inserted row; constraint indexes stay.
CLONED = (
    "conduit_work",
    "conduit_key",
    "conduit_execution",
    "conduit_event",
    "conduit_wait",
    "conduit_timer",
    version_log.TABLE,
)


def _clone(con: sqlite3.Connection, need: int, name: str, proportional: bool, density: str) -> None:
    """Copy the seed's terminal rows into temp tables, numbered by their Work's rank
    (so a partial last copy takes the first N Work and exactly what belongs to them),
    then insert shifted, renamed copies until ``need`` Work were added."""
    con.execute("BEGIN")
    # f >= 0: every Work; f >= 1: the terminal Work only.
    con.execute(SOURCE_SQL[0], (*TERMINAL_WORK, 0 if proportional else 1))
    for statement in SOURCE_SQL[1:]:
        con.execute(statement)
    version_log.stage(con)
    con.execute("COMMIT")
    seeded = con.execute("SELECT count(*) FROM temp.src_work").fetchone()[0]
    if seeded == 0:
        raise RuntimeError("the seed has no Work to clone")
    low, high = con.execute("SELECT min(created_ns), max(updated_ns) FROM conduit_work").fetchone()
    span = high - low + HOUR_NS
    # Each copy's times: the seed's span, or (production) compressed so a copy covers
    # what a team writes in its number of Work (``density.compression``).
    div, step = density_.compression(density, span, seeded)
    indexes = [
        row
        for row in con.execute(
            "SELECT name, sql, tbl_name FROM sqlite_master"
            " WHERE type = 'index' AND sql IS NOT NULL ORDER BY name"
        )
        if row[2] in CLONED
    ]
    for index, _sql, _table in indexes:
        con.execute(f'DROP INDEX "{index}"')
    copies = -(-need // seeded)
    per_chunk = max(1, CHUNK_WORKS // seeded)
    started = time.monotonic()
    for k in range(1, copies + 1):
        take = min(need, seeded)
        params = {
            "sfx": f"-c{k:04d}",
            "anchor": high,
            "div": div,
            "shift": k * step,
            "copy": k,
            "take": take,
            **long_tail(k),
            **density_.tails(density, k),
        }
        if k % per_chunk == 1 or per_chunk == 1:
            con.execute("BEGIN")
        for statement in CLONE_SQL:
            con.execute(statement, params)
        con.execute(version_log.CLONE_SQL, params)
        if k % per_chunk == 0 or k == copies:
            con.execute("COMMIT")
        need -= take
        if k == copies or k % max(1, copies // 10) == 0:
            rate = k * seeded / (time.monotonic() - started)
            log(f"  {name}: cloned {k}/{copies} copies of {seeded:,} Work ({rate:,.0f} Work/s)")
    if density == density_.PRODUCTION:
        heavy = density_.heavy_events(con, copies * seeded)
        log(f"  {name}: {heavy:,} Events added to {density_.heavy_count(copies * seeded)} Work")
    started = time.monotonic()
    logged = version_log.renumber(con)
    log(f"  {name}: {logged:,} version log rows numbered in {time.monotonic() - started:.0f} s")
    started = time.monotonic()
    for _index, sql, _table in indexes:
        con.execute(sql)
    log(f"  {name}: rebuilt {len(indexes)} indexes in {time.monotonic() - started:.0f} s")


def long_tail(copy: int) -> dict[str, str]:
    """Copy ``copy``'s kind and Scope suffixes: every other copy's kinds get one of 16
    variants (``billing.charge.t3``), every third copy's Scopes one of 8 child Scopes
    (``acme/billing/t2``), so a large history has a long tail of kinds and Scopes, each
    variant as common as the copies that drew it."""
    kind = "" if copy % 2 else f".t{copy // 2 % 16}"
    scope = "" if copy % 3 else f"/t{copy // 3 % 8}"
    return {"kind": kind, "scope": scope}


def _set(alias: str, pairs: str, keyed: bool = True, source: bool = False) -> str:
    """``alias.data`` with ``pairs`` (JSON paths and values) set, and, when it has
    correlation keys (``keyed``), its first key's external ID suffixed (and its source
    given this copy's source variant, ``source``: a Work's source is its first key's):
    one ``json_set``, so one parse of the record per row (SQLite 3.40 reparses the text
    at every JSON call; what the copies read from it was extracted once, into the
    source tables)."""
    if not keyed:
        return f"json_set({alias}.data, {pairs})"
    key = f"'$.keys[0].external_id', {alias}.key0 || :sfx"
    if source:
        key += f", '$.keys[0].source', {alias}.key0_source || {_variant(alias, ':src')}"
    return (
        f"CASE WHEN {alias}.has_key THEN json_set({alias}.data, {key}, {pairs})"
        f" ELSE json_set({alias}.data, {pairs}) END"
    )


def _variant(alias: str, param: str) -> str:
    """This copy's long-tail variant ``param`` for a terminal row (``alias.f`` 1), ""
    for a live one: what a runtime still works on keeps the seed's names."""
    return f"CASE WHEN {alias}.f = 1 THEN {param} ELSE '' END"


# An error group's variant: one of three per copy by the Work's rank and the copy
# (so each seed Work takes every variant in turn), the fourth keeps the seed's group
# (``bench.density.tails``); rank is the Work's rowid in ``src_work``, an attempt's
# ``rank``.
def _group_variant(rank: str, f: str) -> str:
    return (
        f"CASE WHEN {f} = 1 THEN CASE ({rank} + :copy) % 4 WHEN 1 THEN :g1 WHEN 2 THEN :g2"
        " WHEN 3 THEN :g3 ELSE '' END ELSE '' END"
    )


# A failed terminal Work's error group with its variant: groups the rules derive from
# an attempt's message (``storage.meaning.triage.error_key``: a variant of letters
# and spaces passes through it unchanged); "timed out waiting for ..." and "(no
# message)" groups are not a message's and keep their name.
_GROUP = (
    "CASE WHEN w.error_group = '' OR w.error_group = '(no message)'"
    " OR w.error_group LIKE 'timed out waiting for %' THEN w.error_group"
    f" ELSE w.error_group || {_group_variant('w.rowid', 'w.f')} END"
)
_SOURCE = (
    f"CASE WHEN w.has_key THEN w.source || {_variant('w', ':src')}"
    " WHEN w.source = w.kind THEN w.source || :kind ELSE w.source END"
)
_EXECUTOR = (
    f"CASE w.latest_executor WHEN '' THEN '' ELSE w.latest_executor || {_variant('w', ':ex')} END"
)
_X_EXECUTOR = f"CASE x.executor WHEN '' THEN '' ELSE x.executor || {_variant('x', ':ex')} END"


def _failed(record: str) -> str:
    """An attempt's ``record`` with, when it failed with a message, the message given
    the variant of its Work's error group (the group is the message's key)."""
    variant = _group_variant("x.rank", "x.f")
    return (
        f"CASE WHEN x.state = 'failed' AND coalesce(x.message, '') <> '' THEN"
        f" json_set({record}, '$.outcome.message', x.message || {variant}) ELSE {record} END"
    )


def _sfx(expr: str) -> str:
    """An ID reference suffixed, the empty reference kept empty."""
    return f"CASE {expr} WHEN '' THEN '' ELSE {expr} || :sfx END"


def _at(expr: str, factor: str) -> str:
    """A time brought into this copy: its distance before the seed's newest instant
    (``:anchor``) divided by ``:div`` (1, or the production density's compression,
    ``bench.density``), then shifted back (``factor`` 1: terminal history; 0: a live
    row, kept as recent as the seed's). With ``:div`` 1 it is ``expr - :shift * factor``."""
    return f"(:anchor - (:anchor - {expr}) / :div - :shift * {factor})"


def _ago(expr: str, factor: str) -> str:
    """``_at``, 0 ("never") kept 0."""
    return f"CASE WHEN {expr} > 0 THEN {_at(expr, factor)} ELSE 0 END"


def _j(field: str, column: str = "") -> str:
    """A record field extracted once into a source table's column (``column``, else
    the field's name)."""
    return f"json_extract(data, '$.{field}') AS {column or field.replace('.', '_')}"


# Whether a record has correlation keys, and its first key's external ID.
_KEYS = (
    "json_array_length(data, '$.keys') > 0 AS has_key,"
    " json_extract(data, '$.keys[0].external_id') AS key0,"
    " json_extract(data, '$.keys[0].source') AS key0_source"
)
_TIMES = ", ".join(_j(f) for f in ("created_at", "updated_at"))

# The seed's Work (rank = rowid, oldest first) and what belongs to it; ``f`` is 1 for
# terminal Work, whose copies are shifted back in time, 0 for live Work, whose copies
# stay as recent as the seed's live set. Noise Events (routed to no Work) get rank 0:
# every copy takes them. The record fields the copies rewrite are extracted here.
SOURCE_SQL = (
    f"""CREATE TEMP TABLE src_work AS SELECT * FROM (SELECT *, CASE WHEN state IN (?, ?, ?)
    THEN 1 ELSE 0 END AS f, {_KEYS} FROM conduit_work) WHERE f >= ? ORDER BY created_ns, id""",  # noqa: S608 - constant SQL
    """CREATE TEMP TABLE src_key AS SELECT s.rowid AS rank, s.f AS f, k.* FROM conduit_key k
    JOIN temp.src_work s ON s.id = k.work_id""",
    f"""CREATE TEMP TABLE src_execution AS SELECT *, {_TIMES}, {_j("started_at")},
        {_j("finished_at")}, {_j("outcome.message", "message")}
        FROM (SELECT s.rowid AS rank, s.f AS f, x.*
        FROM conduit_execution x JOIN temp.src_work s ON s.id = x.work_id)""",  # noqa: S608 - constant SQL
    f"""CREATE TEMP TABLE src_event AS SELECT *, {_KEYS}, {_j("occurred_at")},
        {_j("received_at")} FROM (
    SELECT coalesce(s.rowid, 0) AS rank, coalesce(s.f, 1) AS f, e.* FROM conduit_event e
    LEFT JOIN temp.src_work s ON s.id = e.route_work_id
    WHERE e.disposition <> '' AND (s.id IS NOT NULL OR e.route_work_id = '')) ORDER BY seq""",  # noqa: S608 - constant SQL
    f"""CREATE TEMP TABLE src_wait AS SELECT *, {_KEYS}, {_TIMES}, {_j("woken_by")},
        {_j("timeout_timer_id")} FROM (SELECT s.rowid AS rank, s.f AS f, a.*
        FROM conduit_wait a JOIN temp.src_work s ON s.id = a.work_id)""",  # noqa: S608 - constant SQL
    f"""CREATE TEMP TABLE src_timer AS SELECT *, {_j("template.id", "template_id")},
        {_j("template.delivery_id", "template_delivery")} FROM (SELECT s.rowid AS rank, t.*
        FROM conduit_timer t JOIN temp.src_work s ON s.id = t.work_id WHERE t.live)""",  # noqa: S608 - constant SQL
    """CREATE TEMP TABLE src_scope AS SELECT * FROM conduit_scope
    WHERE id IN (SELECT scope_id FROM conduit_work)""",
)


def _tail(column: str, suffix: str) -> str:
    """A Scope reference with this copy's long-tail suffix ("" stays "")."""
    return f"CASE {column} WHEN '' THEN '' ELSE {column} || {suffix} END"


# Each copy: the Work with its keys, attempts, routed Events, Waits and live Timers,
# under new IDs (:sfx), shifted back (:shift, terminal history only), and in this
# copy's long tail (:kind, a kind suffix; :scope, a Scope suffix, whose Scopes are
# children of the seed's and are created first).
CLONE_SQL = (
    """INSERT OR IGNORE INTO conduit_scope (id, parent_id, data)
    SELECT c.id || :scope, c.id,
        json_set(c.data, '$.id', c.id || :scope, '$.parent_id', c.id,
            '$.name', json_extract(c.data, '$.name') || :scope)
    FROM temp.src_scope c WHERE :scope <> ''""",
    f"""INSERT INTO conduit_work (id, kind, scope_id, parent_id, state, source,
        latest_executor, exhausted, error_group, created_ns, updated_ns, revision, data)
    SELECT w.id || :sfx, w.kind || :kind, {_tail("w.scope_id", ":scope")},
        {_sfx("w.parent_id")}, w.state, {_SOURCE}, {_EXECUTOR}, w.exhausted, {_GROUP},
        {_at("w.created_ns", "w.f")}, {_at("w.updated_ns", "w.f")}, w.revision,
        {
        _set(
            "w",
            f"'$.id', w.id || :sfx, '$.kind', w.kind || :kind,"
            f" '$.scope_id', {_tail('w.scope_id', ':scope')},"
            f" '$.parent_id', {_sfx('w.parent_id')},"
            f" '$.latest_executor', {_EXECUTOR}, '$.error_group', {_GROUP},"
            f" '$.created_at', {_at('w.created_ns', 'w.f')},"
            f" '$.updated_at', {_at('w.updated_ns', 'w.f')}",
            source=True,
        )
    }
    FROM temp.src_work w WHERE w.rowid <= :take""",  # noqa: S608 - constant SQL
    """INSERT INTO conduit_key (source, external_id, work_id, ordinal)
    SELECT CASE WHEN k.ordinal = 0 AND k.f = 1 THEN k.source || :src ELSE k.source END,
        k.external_id || :sfx, k.work_id || :sfx, k.ordinal
    FROM temp.src_key k WHERE k.rank <= :take""",
    f"""INSERT INTO conduit_execution (id, work_id, scope_id, attempt, state, executor,
        lease_expires_ns, data)
    SELECT x.id || :sfx, x.work_id || :sfx, {_tail("x.scope_id", ":scope")}, x.attempt,
        x.state, {_X_EXECUTOR}, x.lease_expires_ns,
        {
        _failed(
            _set(
                "x",
                "'$.id', x.id || :sfx, '$.work_id', x.work_id || :sfx,"
                f" '$.executor', {_X_EXECUTOR},"
                f" '$.created_at', {_ago('x.created_at', 'x.f')},"
                f" '$.updated_at', {_ago('x.updated_at', 'x.f')},"
                f" '$.started_at', {_ago('x.started_at', 'x.f')},"
                f" '$.finished_at', {_ago('x.finished_at', 'x.f')}",
                keyed=False,
            )
        )
    }
    FROM temp.src_execution x WHERE x.rank <= :take""",  # noqa: S608 - constant SQL
    f"""INSERT INTO conduit_event (id, source, delivery_id, type, work_id, causation_id,
        scope_id, route_work_id, disposition, routed_ns, data)
    SELECT e.id || :sfx, e.source, e.delivery_id || :sfx, e.type, {_sfx("e.work_id")},
        {_sfx("e.causation_id")}, {_tail("e.scope_id", ":scope")}, {_sfx("e.route_work_id")},
        e.disposition, {_ago("e.routed_ns", "e.f")},
        {
        _set(
            "e",
            "'$.id', e.id || :sfx, '$.delivery_id', e.delivery_id || :sfx,"
            f" '$.work_id', {_sfx('e.work_id')}, '$.causation_id', {_sfx('e.causation_id')},"
            f" '$.occurred_at', {_ago('e.occurred_at', 'e.f')},"
            f" '$.received_at', {_ago('e.received_at', 'e.f')}",
        )
    }
    FROM temp.src_event e WHERE e.rank <= :take ORDER BY e.rowid""",  # noqa: S608 - constant SQL
    f"""INSERT INTO conduit_wait (id, work_id, execution_id, state, data)
    SELECT a.id || :sfx, a.work_id || :sfx, a.execution_id || :sfx, a.state,
        {
        _set(
            "a",
            "'$.id', a.id || :sfx, '$.work_id', a.work_id || :sfx,"
            " '$.execution_id', a.execution_id || :sfx,"
            f" '$.woken_by', {_sfx('a.woken_by')},"
            f" '$.timeout_timer_id', {_sfx('a.timeout_timer_id')},"
            f" '$.created_at', {_ago('a.created_at', 'a.f')},"
            f" '$.updated_at', {_ago('a.updated_at', 'a.f')}",
        )
    }
    FROM temp.src_wait a WHERE a.rank <= :take""",  # noqa: S608 - constant SQL
    """INSERT INTO conduit_timer (id, live, revision, fire_ns, work_id, data)
    SELECT t.id || :sfx, t.live, t.revision, t.fire_ns, t.work_id || :sfx,
        json_set(t.data, '$.id', t.id || :sfx, '$.work_id', t.work_id || :sfx,
            '$.template.id', t.template_id || :sfx,
            '$.template.delivery_id', t.template_delivery || :sfx)
    FROM temp.src_timer t WHERE t.rank <= :take""",
)


def census(data: DataDir) -> dict[str, Any]:
    """Row counts of a history and the size of each live selection (plain SQL)."""
    con = sqlite3.connect(f"file:{data.db}?mode=ro", uri=True)
    try:
        one = lambda sql: con.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "works": one("SELECT count(*) FROM conduit_work"),
            "live_works": one(
                "SELECT count(*) FROM conduit_work WHERE state IN ('ready','running','waiting')"
            ),
            "executions": one("SELECT count(*) FROM conduit_execution"),
            "live_executions": one(
                "SELECT count(*) FROM conduit_execution"
                " WHERE state IN ('pending','running','parked')"
            ),
            "events": one("SELECT count(*) FROM conduit_event"),
            "unrouted": one("SELECT count(*) FROM conduit_event WHERE disposition = ''"),
            "waits": one("SELECT count(*) FROM conduit_wait"),
            "active_waits": one("SELECT count(*) FROM conduit_wait WHERE state = 'active'"),
            "mb": data.db.stat().st_size / 1e6,
        }
    finally:
        con.close()

"""The record-version log of an amplified history (``history.amplify``): every copy
of a Work takes a copy of the Work's log rows, and the whole log is then numbered
again so that versions follow time, as a store that had lived that history would have
written them.

The seed's log is real (``generate`` writes through the storage API, so each of its
transactions logged the state before of every record it changed). A copy's rows are
the rows filed under the copy's Work (``work_id``): the Work's, its attempts',
Waits' and Timers', under the copy's IDs, at the copy's times (``history._at``: the
row's transaction time moved as the records' times are), caused by the copy's Event
(``event_seq``: the cloned Event's sequence, found by its ID) and run under the copy's
attempt. The state before each row holds is the seed's record with its own ID, its
Work, its attempt, kind, Scope and times renamed and moved the same way; its other
references (correlation keys, the Event that woke a Wait) keep the seed's. Not
copied: rows filed under no Work (Scopes and KV, which the history does not clone).

Numbering: a copy's terminal Work is older history than the seed's, yet it is
cloned after it. Every row (the seed's too) is first staged with its time, its copy
and its seed version; the log is then written again with one new version per
(time, copy, seed version) in that order, keeping each row's index within its
version, and the store's clock moved to the last of them. So ``version_at`` (a time or
an Event's sequence named as a moment) and the version order agree, as the storage
rules keep them.
"""

from __future__ import annotations

import sqlite3

TABLE = "conduit_record_version"
SHIFT = 24  # storage.tx.versions.SHIFT: position = version << SHIFT | index
COLUMNS = "at_ns, kind, record_id, key, event_seq, execution_id, work_id, data, value"


def _at(expr: str) -> str:
    """``history._at`` for a log row's time (its Work's ``f``)."""
    return f"(:anchor - (:anchor - {expr}) / :div - :shift * v.f)"


def _ago(expr: str) -> str:
    return f"CASE WHEN {expr} > 0 THEN {_at(expr)} ELSE 0 END"


def _sfx(expr: str) -> str:
    return f"CASE {expr} WHEN '' THEN '' ELSE {expr} || :sfx END"


# Each staged row: the new version's sort key (at_ns, copy, v) and the row's index.
STAGE_SQL = (
    """CREATE TEMP TABLE version_stage (at_ns INTEGER, copy INTEGER, v INTEGER, idx INTEGER,
        kind TEXT, record_id TEXT, key TEXT, event_seq INTEGER, execution_id TEXT,
        work_id TEXT, data TEXT, value BLOB)""",
    f"""INSERT INTO temp.version_stage SELECT at_ns, 0, position >> {SHIFT},
        position & {(1 << SHIFT) - 1}, kind, record_id, key, event_seq, execution_id,
        work_id, data, value FROM {TABLE}""",  # noqa: S608 - constant SQL
    # The seed's rows to copy, with what the copies rewrite extracted once.
    f"""CREATE TEMP TABLE src_version AS SELECT s.rowid AS rank, s.f AS f, v.*,
        json_extract(v.data, '$.created_at') AS created_at,
        json_extract(v.data, '$.updated_at') AS updated_at,
        json_extract(v.data, '$.kind') AS data_kind,
        json_extract(v.data, '$.scope_id') AS data_scope,
        (SELECT e.id FROM temp.src_event e WHERE e.seq = v.event_seq) AS event_id
        FROM {TABLE} v JOIN temp.src_work s ON s.id = v.work_id
        WHERE NOT (v.work_id = '') AND v.kind <> 'kv'""",  # noqa: S608 - constant SQL
)
# Before ``STAGE_SQL``: src_event's sequences looked up per copied row.
SOURCE_INDEX = "CREATE INDEX temp.src_event_seq ON src_event (seq)"

# One copy's rows (``history.CLONE_SQL``'s parameters), after its Events were cloned.
_ATTEMPT = _sfx("coalesce(json_extract(v.data, '$.execution_id'), '')")
_BEFORE = (
    "json_replace(v.data, '$.id', v.record_id || :sfx, '$.work_id', v.work_id || :sfx,"
    f" '$.execution_id', {_ATTEMPT},"
    f" '$.created_at', {_ago('v.created_at')}, '$.updated_at', {_ago('v.updated_at')},"
    " '$.kind', CASE v.kind WHEN 'work' THEN v.data_kind || :kind ELSE v.data_kind END,"
    " '$.scope_id', CASE WHEN v.kind = 'work' AND v.data_scope <> ''"
    " THEN v.data_scope || :scope ELSE v.data_scope END)"
)
CLONE_SQL = f"""INSERT INTO temp.version_stage SELECT {_at("v.at_ns")}, :copy,
    v.position >> {SHIFT}, v.position & {(1 << SHIFT) - 1}, v.kind, v.record_id || :sfx, v.key,
    coalesce((SELECT e.seq FROM conduit_event e WHERE e.id = v.event_id || :sfx), 0),
    {_sfx("v.execution_id")}, v.work_id || :sfx, {_BEFORE}, v.value
    FROM temp.src_version v WHERE v.rank <= :take"""  # noqa: S608 - constant SQL

RENUMBER_SQL = (
    """CREATE TEMP TABLE version_number AS SELECT at_ns, copy, v FROM temp.version_stage
    GROUP BY at_ns, copy, v ORDER BY at_ns, copy, v""",
    "CREATE INDEX temp.version_number_key ON version_number (at_ns, copy, v)",
    f"DELETE FROM {TABLE}",  # noqa: S608 - constant SQL
    f"""INSERT INTO {TABLE} (position, {COLUMNS})
    SELECT (n.rowid << {SHIFT}) | s.idx, s.{COLUMNS.replace(", ", ", s.")}
    FROM temp.version_stage s JOIN temp.version_number n
    ON n.at_ns = s.at_ns AND n.copy = s.copy AND n.v = s.v ORDER BY 1""",  # noqa: S608
)


def stage(con: sqlite3.Connection) -> None:
    """(in ``history._clone``'s first transaction, after its source tables) Stage the
    seed's log and pick the rows its copies take."""
    con.execute(SOURCE_INDEX)
    for statement in STAGE_SQL:
        con.execute(statement)


def renumber(con: sqlite3.Connection) -> int:
    """Write the staged log back under versions in time order and move the store's
    clock past them (its Guard.now is unchanged: copies only go back in time).
    Returns the rows written."""
    con.execute("BEGIN")
    seed_last = con.execute(f"SELECT coalesce(max(position), 0) >> {SHIFT} FROM {TABLE}")  # noqa: S608
    (logged,) = seed_last.fetchone()
    for statement in RENUMBER_SQL:
        con.execute(statement)
    (top,) = con.execute("SELECT count(*) FROM temp.version_number").fetchone()
    found = con.execute("SELECT value FROM conduit_meta WHERE key = 'clock'").fetchone()
    now, _, version = (found[0] if found else "0 0").partition(" ")
    # Versions past the seed's last logged one changed no record (an Event accepted,
    # say): they stay past the renumbered log's last.
    clock = top + max(0, int(version or 0) - logged)
    con.execute("UPDATE conduit_meta SET value = ? WHERE key = 'clock'", (f"{now} {clock}",))
    (rows,) = con.execute("SELECT count(*) FROM temp.version_stage").fetchone()
    con.execute("DROP TABLE temp.version_stage")
    con.execute("DROP TABLE temp.version_number")
    con.execute("COMMIT")
    return int(rows)

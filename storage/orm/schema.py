"""The ORM backend's one table registry: for each record table its name, model,
record class, the indexed columns stored beside the record's JSON, and its live
predicate compiled to SQL once; then the names of the other tables.

Table names are declared once, by the models (``db_table``); everything that writes
SQL by hand (the row hooks, the write-behind buffer, the dashboards' counts, backups)
takes them from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Model

from ..models import (
    EventKeyRow,
    EventRow,
    ExecutionRow,
    KeyRow,
    KVRow,
    MetaRow,
    RunRecordRow,
    ScopeRow,
    SeriesTallyRow,
    TimerRow,
    VersionRow,
    WaitRow,
    WorkRow,
    WorkTallyRow,
)
from ..records import LIVE_STATES, Execution, Scope, Table, Timer, Wait, Work
from ..tables import RECORD_CLASSES, live_values


def _work_columns(r: Work, live: bool) -> dict[str, Any]:
    return {
        "kind": r.kind,
        "scope_id": r.scope_id,
        "parent_id": r.parent_id,
        "state": r.state.value,
        "source": r.source,
        "latest_executor": r.latest_executor,
        "exhausted": r.exhausted,
        "error_group": r.error_group,
        "created_ns": r.created_at,
        "updated_ns": r.updated_at,
        "revision": r.revision,
    }


def _execution_columns(r: Execution, live: bool) -> dict[str, Any]:
    return {
        "work_id": r.work_id,
        "attempt": r.attempt,
        "state": r.state.value,
        "executor": r.executor,
        "lease_expires_ns": r.lease_expires_at,
    }


def _scope_columns(r: Scope, live: bool) -> dict[str, Any]:
    return {"parent_id": r.parent_id}


def _timer_columns(r: Timer, live: bool) -> dict[str, Any]:
    return {"live": live, "revision": r.revision, "fire_ns": r.fire_at, "work_id": r.work_id}


def _wait_columns(r: Wait, live: bool) -> dict[str, Any]:
    return {"work_id": r.work_id, "execution_id": r.execution_id, "state": r.state.value}


def _live_sql(table: Table) -> str | None:
    """The live predicate, written exactly as the partial index's condition
    (``models``: the same values in the same order), so SQLite uses the index."""
    if table not in LIVE_STATES:
        return None
    values = live_values(table)
    if len(values) == 1:
        return f"state = '{values[0]}'"
    return f"state IN ({', '.join(f"'{v}'" for v in values)})"


@dataclass(frozen=True, slots=True)
class RecordTable:
    """One table of records stored as JSON (``data``) beside indexed columns."""

    table: Table
    model: type[Model]
    # The indexed columns of a record (and, for a Timer, its row's liveness).
    columns: Callable[[Any, bool], dict[str, Any]]
    # Rows belong to one Work (``work_id``) and are listed per Work.
    per_work: bool = False
    # Deleted rows stay as tombstones (``live`` false): only Timers.
    tombstones: bool = False
    # Derived once, here: the SQL name, the record class, and what ``live=True``
    # selects as SQL (None: every row).
    name: str = field(init=False)
    cls: type[Any] = field(init=False)
    live_sql: str | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.model._meta.db_table)
        object.__setattr__(self, "cls", RECORD_CLASSES[self.table])
        object.__setattr__(self, "live_sql", _live_sql(self.table))


TABLES: dict[Table, RecordTable] = {
    "work": RecordTable("work", WorkRow, _work_columns),
    "execution": RecordTable("execution", ExecutionRow, _execution_columns, per_work=True),
    "scope": RecordTable("scope", ScopeRow, _scope_columns),
    "timer": RecordTable("timer", TimerRow, _timer_columns, per_work=True, tombstones=True),
    "wait": RecordTable("wait", WaitRow, _wait_columns, per_work=True),
}

# Tables whose rows belong to one Work (listed per Work by ``BaseTx``).
PER_WORK: tuple[Table, ...] = tuple(t for t, spec in TABLES.items() if spec.per_work)

WORK = WorkRow._meta.db_table
WORK_TALLY = WorkTallyRow._meta.db_table
SERIES_TALLY = SeriesTallyRow._meta.db_table
EXECUTION = ExecutionRow._meta.db_table
SCOPE = ScopeRow._meta.db_table
WAIT = WaitRow._meta.db_table
TIMER = TimerRow._meta.db_table
EVENT = EventRow._meta.db_table
KEY = KeyRow._meta.db_table
EVENT_KEY = EventKeyRow._meta.db_table
META = MetaRow._meta.db_table
VERSION = VersionRow._meta.db_table
KV = KVRow._meta.db_table
RUN_RECORD = RunRecordRow._meta.db_table

# A run record row as ``reads.run_row`` takes it.
RUN_COLUMNS = "run_id, revision, format, created_ns, updated_ns, data"

"""The record class of each table the rules address by name (``records.Table``), and
the live states of each (``records.LIVE_STATES``) as stored values in a fixed order.

Both backends build on this: the reference double decodes with ``RECORD_CLASSES``;
the ORM backend's registry (``storage.orm.schema``) and the partial indexes
(``storage.models``) compile ``live_values`` to SQL.
"""

from __future__ import annotations

from typing import Any

from .records import (
    LIVE_STATES,
    Execution,
    ExecutionState,
    Scope,
    Table,
    Timer,
    Wait,
    WaitState,
    Work,
    WorkState,
)

RECORD_CLASSES: dict[Table, type[Any]] = {
    "work": Work,
    "execution": Execution,
    "scope": Scope,
    "timer": Timer,
    "wait": Wait,
}

_STATE_ENUMS: dict[Table, type[WorkState | ExecutionState | WaitState]] = {
    "work": WorkState,
    "execution": ExecutionState,
    "wait": WaitState,
}


def live_values(table: Table) -> tuple[str, ...]:
    """The live states of ``table`` as stored values, in their enum's declaration
    order: the order the partial indexes' conditions were migrated with, which SQL
    written against them must repeat for SQLite to use them."""
    return tuple(s.value for s in _STATE_ENUMS[table] if s in LIVE_STATES[table])

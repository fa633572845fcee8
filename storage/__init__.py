"""Conduit storage: the coordination contract of ``docs/spec/storage-contract.txt``.

Public API (see ``storage/README.md`` for the full contract):

- records: ``Work``, ``Event``, ``StoredEvent``, ``Execution``, ``Timer``, ``Wait``,
  ``Scope`` and their values; states are enums.
- errors: every failure is a ``StorageError`` (``Conflict``, ``NotFound``, ``Invalid``,
  ``Fenced``, ``ReadOnly``, ``Cancelled``, ...).
- ``Store.transact(guard, callback)``, ``Store.view(callback)``, ``view(store, now,
  callback)``, ``read_only(tx)``, ``select_works(query, works)``.
- backends: ``storage.memory.MemoryStore`` (volatile reference double) and
  ``storage.orm.OrmStore`` (Django ORM on SQLite or PostgreSQL; import it only once
  Django's apps are loaded).
- the process's defaults: ``storage.default.default_store()`` (and its run store and
  artifact store). Not re-exported here: this face is import-safe before Django is set
  up (the settings import ``storage.pg_url``), the composition root is not.

``storage/README.md`` opens with the map of the package's floors.
"""

from .api import KV_VALUE_LIMIT, Store, Tx, Viewer
from .clock import from_ns, seconds, to_ns, wall_clock
from .errors import (
    ArtifactError,
    Busy,
    Cancelled,
    Closed,
    Conflict,
    Corrupt,
    Fenced,
    Invalid,
    NotFound,
    ReadOnly,
    RecordsNewer,
    SchemaNewer,
    StorageError,
    TxClosed,
    Unavailable,
)
from .meaning.query import select_facets, select_works
from .meaning.triage import error_key
from .readonly import read_only, view
from .records import (
    LIVE_EXECUTION_STATES,
    LIVE_WORK_STATES,
    MAX_BUCKETS,
    RECORD_FORMAT,
    SCHEMA_VERSION,
    TERMINAL_EXECUTION_STATES,
    TERMINAL_WORK_STATES,
    ArtifactRef,
    Binding,
    Buckets,
    CancelToken,
    CorrelationKey,
    ErrorGroup,
    Event,
    Execution,
    ExecutionState,
    Guard,
    IdKind,
    IdMatch,
    LeaseRef,
    Nanos,
    Outcome,
    OutcomeKind,
    Payload,
    Route,
    Scope,
    StoredEvent,
    Timer,
    TimerNext,
    Wait,
    WaitState,
    Work,
    WorkFacets,
    WorkKey,
    WorkOrder,
    WorkQuery,
    WorkState,
)

__all__ = [
    "KV_VALUE_LIMIT",
    "LIVE_EXECUTION_STATES",
    "LIVE_WORK_STATES",
    "MAX_BUCKETS",
    "RECORD_FORMAT",
    "SCHEMA_VERSION",
    "TERMINAL_EXECUTION_STATES",
    "TERMINAL_WORK_STATES",
    "ArtifactError",
    "ArtifactRef",
    "Binding",
    "Buckets",
    "Busy",
    "CancelToken",
    "Cancelled",
    "Closed",
    "Conflict",
    "CorrelationKey",
    "Corrupt",
    "ErrorGroup",
    "Event",
    "Execution",
    "ExecutionState",
    "Fenced",
    "Guard",
    "IdKind",
    "IdMatch",
    "Invalid",
    "LeaseRef",
    "Nanos",
    "NotFound",
    "Outcome",
    "OutcomeKind",
    "Payload",
    "ReadOnly",
    "RecordsNewer",
    "Route",
    "SchemaNewer",
    "Scope",
    "StorageError",
    "Store",
    "StoredEvent",
    "Timer",
    "TimerNext",
    "Tx",
    "TxClosed",
    "Unavailable",
    "Viewer",
    "Wait",
    "WaitState",
    "Work",
    "WorkFacets",
    "WorkKey",
    "WorkOrder",
    "WorkQuery",
    "WorkState",
    "error_key",
    "from_ns",
    "read_only",
    "seconds",
    "select_facets",
    "select_works",
    "to_ns",
    "view",
    "wall_clock",
]

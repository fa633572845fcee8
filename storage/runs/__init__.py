"""Durable run records (``../shared/spec/durable-run-records.txt``) on the same database
as the coordination contract: records and their JSON codec, the ``RunQuery`` the console
lists with, and the Store/Session contract (``RunStore.acquire`` -> ``Session``) with its
implementations ``MemoryRunStore`` and ``OrmRunStore`` (``run_store_for(store)`` picks).
``OrmRunStore`` needs Django's apps loaded before it is instantiated."""

from .codec import check_utf8, decode, encode
from .query import check_run_id, select_run_rows
from .records import (
    MAX_REVISION,
    RUN_FORMAT,
    RUN_FORMATS,
    RUN_ID_MAX,
    AttemptRecord,
    AttemptState,
    ManagedRecord,
    MessageAttemptRecord,
    NodeReason,
    NodeRecord,
    PendingMessage,
    RunQuery,
    RunRecord,
    ScopeRecord,
    StoredRun,
    StreamDescriptorRecord,
    StreamRecord,
    Terminal,
    ValueRecord,
    ValueState,
)
from .store import MemoryRunStore, OrmRunStore, RunSession, RunStore, Session, run_store_for

__all__ = [
    "MAX_REVISION",
    "RUN_FORMAT",
    "RUN_FORMATS",
    "RUN_ID_MAX",
    "AttemptRecord",
    "AttemptState",
    "ManagedRecord",
    "MemoryRunStore",
    "MessageAttemptRecord",
    "NodeReason",
    "NodeRecord",
    "OrmRunStore",
    "PendingMessage",
    "RunQuery",
    "RunRecord",
    "RunSession",
    "RunStore",
    "ScopeRecord",
    "Session",
    "StoredRun",
    "StreamDescriptorRecord",
    "StreamRecord",
    "Terminal",
    "ValueRecord",
    "ValueState",
    "check_run_id",
    "check_utf8",
    "decode",
    "encode",
    "run_store_for",
    "select_run_rows",
]

"""Durable run records (``docs/spec/durable-run-records.txt``) on the same database as
the coordination contract: records and their JSON codec, the ``RunQuery`` the console
lists with, and the record validator. Pure records on one floor: the Store/Session
contract that owns runs (``RunStore.acquire`` -> ``Session``) is an operation above the
Store, in ``storage.ops.run_sessions``; ``storage.default.default_run_store()`` builds
the process's one."""

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

__all__ = [
    "MAX_REVISION",
    "RUN_FORMAT",
    "RUN_FORMATS",
    "RUN_ID_MAX",
    "AttemptRecord",
    "AttemptState",
    "ManagedRecord",
    "MessageAttemptRecord",
    "NodeReason",
    "NodeRecord",
    "PendingMessage",
    "RunQuery",
    "RunRecord",
    "ScopeRecord",
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
    "select_run_rows",
]

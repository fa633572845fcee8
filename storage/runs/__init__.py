"""Durable run records (``../shared/spec/durable-run-records.txt``) on the same database
as the coordination contract: records and their JSON codec here; the Store/Session
contract and the structural validator beside them."""

from .codec import check_utf8, decode, encode
from .records import (
    MAX_REVISION,
    RUN_FORMAT,
    RUN_FORMATS,
    AttemptRecord,
    AttemptState,
    ManagedRecord,
    MessageAttemptRecord,
    NodeReason,
    NodeRecord,
    PendingMessage,
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
    "AttemptRecord",
    "AttemptState",
    "ManagedRecord",
    "MessageAttemptRecord",
    "NodeReason",
    "NodeRecord",
    "PendingMessage",
    "RunRecord",
    "ScopeRecord",
    "StoredRun",
    "StreamDescriptorRecord",
    "StreamRecord",
    "Terminal",
    "ValueRecord",
    "ValueState",
    "check_utf8",
    "decode",
    "encode",
]

"""Durable run records (``docs/spec/durable-run-records.txt``) on the same database as
the coordination contract: records and their JSON codec, the ``RunQuery`` the console
lists with, and the record validator. Pure records on one floor: the Store/Session
contract that owns runs (``RunStore.acquire`` -> ``Session``) is an operation above the
Store, in ``storage.ops.run_record_sessions``; ``storage.default.default_run_store()`` builds
the process's one.

Value codecs (the spec's Codec contract for node outputs, apart from the record codec
above): ``Codecs``/``new_codecs`` in ``value_codecs``, JSON codecs in ``value_json``,
``restore_value`` in ``value_restore``."""

from .codec import check_utf8, decode, encode
from .query import check_run_id, select_run_rows
from .records import (
    MAX_REVISION,
    RUN_FORMAT,
    RUN_FORMATS,
    RUN_ID_MAX,
    AttemptState,
    DurableRunRecord,
    ManagedRecord,
    MessageAttemptRecord,
    NodeAttemptRecord,
    NodeReason,
    NodeRecord,
    PendingMessage,
    RunQuery,
    ScopeRecord,
    StoredRun,
    StreamDescriptorRecord,
    StreamRecord,
    Terminal,
    ValueRecord,
    ValueState,
)
from .value_codecs import BUILTIN_CODECS, Codec, Codecs, ValueCatalog, check_data, new_codecs
from .value_json import JsonCodec
from .value_restore import RESTORE_CHECKS, Outcome, Restored, RestoreFinding, restore_value

__all__ = [
    "BUILTIN_CODECS",
    "MAX_REVISION",
    "RESTORE_CHECKS",
    "RUN_FORMAT",
    "RUN_FORMATS",
    "RUN_ID_MAX",
    "AttemptState",
    "Codec",
    "Codecs",
    "DurableRunRecord",
    "JsonCodec",
    "ManagedRecord",
    "MessageAttemptRecord",
    "NodeAttemptRecord",
    "NodeReason",
    "NodeRecord",
    "Outcome",
    "PendingMessage",
    "RestoreFinding",
    "Restored",
    "RunQuery",
    "ScopeRecord",
    "StoredRun",
    "StreamDescriptorRecord",
    "StreamRecord",
    "Terminal",
    "ValueCatalog",
    "ValueRecord",
    "ValueState",
    "check_data",
    "check_run_id",
    "check_utf8",
    "decode",
    "encode",
    "new_codecs",
    "restore_value",
    "select_run_rows",
]

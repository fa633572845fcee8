"""Helpers of the run-record tests: record builders, a run store per backend, and
``plant`` for rows the Session API cannot write (format 1, corrupt JSON, a revision near
2^64), written through the backend's own row access inside ``transact``."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

from storage import Guard, Store
from storage.core import BaseTx
from storage.runs import (
    AttemptRecord,
    AttemptState,
    ManagedRecord,
    MessageAttemptRecord,
    NodeReason,
    NodeRecord,
    PendingMessage,
    RunRecord,
    RunStore,
    ScopeRecord,
    StreamDescriptorRecord,
    StreamRecord,
    Terminal,
    ValueRecord,
    ValueState,
)
from storage.runs.query import RunRow

ROOT = "0123456789abcdef0123456789abcdef"
ATTEMPT = "a" * 32
# Arbitrary bytes, not UTF-8: Data is exempt from the metadata rules.
RAW = bytes(range(256)) + b"\xff\xfe\x00\xc3\x28"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def ordinary_record(run_id: str, *, version: str = "v1", data: bytes = RAW) -> RunRecord:
    """A format-1-compatible record: one scope, one confirmed node with a ready value."""
    value = ValueRecord("out", "bytes", "1", ValueState.READY, digest(data), data)
    node = NodeRecord("fetch", ATTEMPT, NodeReason.COMPLETED, (value,))
    return RunRecord(
        run_id=run_id,
        version=version,
        definition=digest(b"definition"),
        inputs=digest(b"inputs"),
        root_scope=ROOT,
        scopes={ROOT: ScopeRecord("main", "/", digest(b"inputs"), {"fetch": node})},
        attempts={ATTEMPT: AttemptRecord(ROOT, "fetch", "", 1, 1, AttemptState.CONFIRMED)},
    )


def streaming_record(run_id: str) -> RunRecord:
    """A record with every incremental field (only format 2 can hold it)."""
    base = ordinary_record(run_id)
    stream = ValueRecord(
        "events",
        "event",
        "1",
        ValueState.READY,
        stream=StreamDescriptorRecord("src-1", ATTEMPT, 8, Terminal.OPEN),
    )
    node = NodeRecord("emit", ATTEMPT, NodeReason.COMPLETED, (stream,))
    scope = base.scopes[ROOT]
    scopes = {
        ROOT: ScopeRecord(scope.graph, scope.path, scope.inputs, {**scope.nodes, "emit": node})
    }
    return RunRecord(
        run_id=run_id,
        version=base.version,
        definition=base.definition,
        inputs=base.inputs,
        root_scope=ROOT,
        scopes=scopes,
        attempts=base.attempts,
        streams={
            "s1": StreamRecord(
                ROOT, "emit", "events", "g", 2, "src-1", True, 5, 2, (PendingMessage(4, True),)
            )
        },
        messages={
            "m1": MessageAttemptRecord(
                "src-1", "g", 3, ROOT, ATTEMPT, "sink", 1, 3, AttemptState.CONFIRMED
            )
        },
        managed={"k1": ManagedRecord(ROOT, ATTEMPT, "sink", b"\x00state\xff", ())},
    )


def format1_json(run_id: str, revision: int, **extra: Any) -> bytes:
    """A record as a format-1 writer stored it (no incremental fields), plus ``extra``."""
    document: dict[str, Any] = {
        "Format": 1,
        "RunID": run_id,
        "Revision": revision,
        "Version": "old",
        "Definition": digest(b"definition"),
        "Inputs": digest(b"inputs"),
        "RootScope": ROOT,
        "Scopes": {
            ROOT: {
                "Graph": "main",
                "Path": "/",
                "Inputs": digest(b"inputs"),
                "Nodes": {
                    "fetch": {
                        "NodeID": "fetch",
                        "Attempt": ATTEMPT,
                        "Reason": "completed",
                        "Outputs": [
                            {
                                "Name": "out",
                                "TypeID": "bytes",
                                "Version": "1",
                                "State": "ready",
                                "Digest": digest(RAW),
                                "Data": base64.b64encode(RAW).decode(),
                            }
                        ],
                    }
                },
                "Bindings": False,
            }
        },
        "Attempts": {
            ATTEMPT: {
                "Parent": ROOT,
                "NodeID": "fetch",
                "Boundary": "",
                "Index": 1,
                "Limit": 1,
                "State": "confirmed",
            }
        },
        **extra,
    }
    return json.dumps(document).encode()


def plant(store: Store, row: RunRow) -> None:
    """Insert ``row`` as stored bytes, bypassing the CAS rules and the encoder (a record
    written by another implementation, or damaged on disk)."""

    def put(tx: BaseTx) -> None:
        tx.dirty = True
        tx._put_run_row(row, 0)

    store.transact(Guard(), put)


def row(run_id: str, data: bytes, *, revision: int = 1, fmt: int = 1, at: int = 1) -> RunRow:
    return RunRow(run_id, revision, fmt, at, at, data)


def open_run_store(backend: str, store: Store, lock_dir: Path) -> RunStore:
    from storage.runs import MemoryRunStore

    if backend == "memory":
        from storage.memory import MemoryStore

        assert isinstance(store, MemoryStore)
        return MemoryRunStore(store)
    from storage.orm import OrmStore
    from storage.runs import OrmRunStore

    assert isinstance(store, OrmStore)
    return OrmRunStore(store, lock_dir=lock_dir)

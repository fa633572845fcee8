"""Run-record test support: the JSON fixtures (``fixtures/run_records/``), hypothesis
strategies for arbitrary well-typed records (including what ``encode`` and ``decode``
refuse), record builders, a run store per backend, and ``plant`` for rows the Session
API cannot write (format 1, corrupt JSON, a revision near 2^64), written through the
backend's own row access inside ``transact``."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from storage import Guard, Store
from storage.ops.run_record_sessions import RunStore
from storage.run_records import (
    AttemptState,
    DurableRunRecord,
    ManagedRecord,
    MessageAttemptRecord,
    NodeAttemptRecord,
    NodeReason,
    NodeRecord,
    PendingMessage,
    ScopeRecord,
    StreamDescriptorRecord,
    StreamRecord,
    Terminal,
    ValueRecord,
    ValueState,
    decode,
)
from storage.run_records.query import RunRow
from storage.tx import BaseTx

FIXTURES = Path(__file__).parent / "fixtures" / "run_records"


def valid_record() -> DurableRunRecord:
    """The realistic format-2 record of ``fixtures/run_records/valid.json``: it reports nothing."""
    return decode((FIXTURES / "valid.json").read_bytes())


# Arbitrary well-typed records. IDs and names come from small pools so that references
# resolve often enough to reach the deeper checks (groups, chains, containers).
IDS = st.sampled_from(["ab" * 16, "cd" * 16, "ef" * 16, "", "AB" * 16, "\ud800"])
NAMES = st.sampled_from(["a", "b", "", "retry@0"])
SMALL = st.integers(-1, 4)
DIGESTS = st.sampled_from(["", hashlib.sha256(b"").hexdigest(), hashlib.sha256(b"x").hexdigest()])


def _states(enum: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from([*enum, "bogus"])


VALUES = st.builds(
    ValueRecord,
    name=NAMES,
    type_id=NAMES,
    version=NAMES,
    state=_states(ValueState),
    digest=DIGESTS,
    data=st.sampled_from([b"", b"x"]),
    stream=st.none()
    | st.builds(
        StreamDescriptorRecord,
        source_id=IDS,
        writer_attempt=IDS,
        capacity=SMALL,
        terminal=_states(Terminal),
    ),
)
TUPLES = st.lists(VALUES, max_size=3).map(tuple)
NODES = st.builds(
    NodeRecord, node_id=NAMES, attempt=IDS, reason=_states(NodeReason), outputs=TUPLES
)
SCOPES = st.builds(
    ScopeRecord,
    graph=NAMES,
    path=NAMES,
    inputs=NAMES,
    nodes=st.dictionaries(NAMES, NODES, max_size=3),
    bindings=st.booleans(),
)
ATTEMPTS = st.builds(
    NodeAttemptRecord,
    parent=IDS,
    node_id=NAMES,
    boundary=st.sampled_from(["", "retry@0", "retry@1"]),
    index=SMALL,
    limit=SMALL,
    state=_states(AttemptState),
)
STREAMS = st.builds(
    StreamRecord,
    scope=IDS,
    node_id=NAMES,
    key=NAMES,
    group=NAMES,
    generation=SMALL,
    source_id=IDS,
    resumable=st.booleans(),
    last_sequence=SMALL,
    acked_through=SMALL,
    pending=st.lists(
        st.builds(PendingMessage, sequence=SMALL, acked=st.booleans()), max_size=3
    ).map(tuple),
    cursor=NAMES,
)
MESSAGES = st.builds(
    MessageAttemptRecord,
    source=IDS,
    group=NAMES,
    sequence=SMALL,
    scope=IDS,
    parent=IDS,
    node_id=NAMES,
    index=SMALL,
    limit=SMALL,
    state=_states(AttemptState),
)
MANAGED = st.builds(
    ManagedRecord,
    scope=IDS,
    parent=IDS,
    node_id=NAMES,
    state=st.sampled_from([b"", b"{}"]),
    values=st.lists(VALUES, max_size=2).map(tuple),
)
RECORDS = st.builds(
    DurableRunRecord,
    run_id=NAMES,
    revision=st.integers(0, 3),
    format=st.sampled_from([0, 1, 2, 3]),
    version=NAMES,
    definition=NAMES,
    inputs=NAMES,
    root_scope=IDS,
    scopes=st.dictionaries(IDS, SCOPES, max_size=3),
    attempts=st.dictionaries(IDS, ATTEMPTS, max_size=6),
    streams=st.dictionaries(NAMES, STREAMS, max_size=2),
    messages=st.dictionaries(NAMES, MESSAGES, max_size=3),
    managed=st.dictionaries(NAMES, MANAGED, max_size=2),
)
PROVIDES = st.none() | st.dictionaries(NAMES, st.frozensets(NAMES), max_size=3)


ROOT = "0123456789abcdef0123456789abcdef"
ATTEMPT = "a" * 32
# Arbitrary bytes, not UTF-8: Data is exempt from the metadata rules.
RAW = bytes(range(256)) + b"\xff\xfe\x00\xc3\x28"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def ordinary_record(run_id: str, *, version: str = "v1", data: bytes = RAW) -> DurableRunRecord:
    """A format-1-compatible record: one scope, one confirmed node with a ready value."""
    value = ValueRecord("out", "bytes", "1", ValueState.READY, digest(data), data)
    node = NodeRecord("fetch", ATTEMPT, NodeReason.COMPLETED, (value,))
    return DurableRunRecord(
        run_id=run_id,
        version=version,
        definition=digest(b"definition"),
        inputs=digest(b"inputs"),
        root_scope=ROOT,
        scopes={ROOT: ScopeRecord("main", "/", digest(b"inputs"), {"fetch": node})},
        attempts={ATTEMPT: NodeAttemptRecord(ROOT, "fetch", "", 1, 1, AttemptState.CONFIRMED)},
    )


def streaming_record(run_id: str) -> DurableRunRecord:
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
    return DurableRunRecord(
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


def open_run_store(backend: str, store: Store) -> RunStore:
    from storage.ops.run_record_sessions import MemoryRunStore

    if backend == "memory":
        from storage.memory import MemoryStore

        assert isinstance(store, MemoryStore)
        return MemoryRunStore(store)
    from storage.ops.run_record_sessions import OrmRunStore
    from storage.orm import OrmStore

    assert isinstance(store, OrmStore)
    return OrmRunStore(store)

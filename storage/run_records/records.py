"""The records of ``durable-run-records.txt``: one ``DurableRunRecord`` holds all state of one
graph run.

Frozen dataclasses with tuple/mapping fields built afresh on every decode, so a loaded
record never aliases stored state (the spec's "Load returns an isolated copy"). Field
names are the spec's, in snake_case; the stored JSON uses the spec's own (Go) names, so
a record written here reads the same as one written by the neighbouring library's
FileStore (``storage.run_records.codec``).

Maps are ``Mapping[str, ...]`` kept in key order as loaded; equality of two records is
field equality.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

# RecordFormat: 2 is current (ordinary and streaming runs); 1 is ordinary-only, still
# loads, and is written as 2 on its next save.
RUN_FORMAT = 2
RUN_FORMATS = (1, 2)
# Revision is a uint64 in the spec; a save that would pass this is refused (Conflict).
MAX_REVISION = 2**64 - 1


class AttemptState(enum.StrEnum):
    ACTIVE = "active"
    FAILED = "failed"
    CONFIRMED = "confirmed"


class NodeReason(enum.StrEnum):
    COMPLETED = "completed"
    SKIPPED = "skipped"


class ValueState(enum.StrEnum):
    READY = "ready"
    SKIPPED = "skipped"


class Terminal(enum.StrEnum):
    """A stream descriptor's confirmed terminal; empty while the source is open."""

    OPEN = ""
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


def _frozen[V](items: Mapping[str, V] | None = None) -> Mapping[str, V]:
    return MappingProxyType(dict(items or {}))


@dataclass(frozen=True)
class StreamDescriptorRecord:
    """``ValueRecord.stream``: an incremental output instead of Data/Digest."""

    source_id: str
    writer_attempt: str  # the actual writer root attempt
    capacity: int = 0
    terminal: Terminal = Terminal.OPEN


@dataclass(frozen=True)
class ValueRecord:
    name: str
    type_id: str
    version: str
    state: ValueState
    digest: str = ""  # lowercase hex SHA-256 of data when ready
    data: bytes = b""
    stream: StreamDescriptorRecord | None = None


@dataclass(frozen=True)
class NodeRecord:
    node_id: str
    attempt: str  # this node's confirmed root attempt
    reason: NodeReason
    outputs: tuple[ValueRecord, ...] = ()


@dataclass(frozen=True)
class ScopeRecord:
    graph: str
    path: str
    inputs: str  # input fingerprint of this scope
    nodes: Mapping[str, NodeRecord] = field(default_factory=_frozen)
    bindings: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.nodes, MappingProxyType):
            object.__setattr__(self, "nodes", _frozen(self.nodes))


@dataclass(frozen=True)
class NodeAttemptRecord:
    parent: str  # the graph's Scope ID, or the outer Attempt ID
    node_id: str
    boundary: str  # "" for a node root attempt; a fixed Aspect position for Retry
    index: int  # 1-based within the Parent/NodeID/Boundary group
    limit: int  # positive; index <= limit
    state: AttemptState


@dataclass(frozen=True)
class PendingMessage:
    """A message with a reading obligation, in sequence order. ``acked`` marks a sparse
    acknowledgement above the contiguous frontier ``StreamRecord.acked_through``."""

    sequence: int
    acked: bool = False


@dataclass(frozen=True)
class StreamRecord:
    scope: str
    node_id: str
    key: str
    group: str
    generation: int
    source_id: str
    resumable: bool = False
    last_sequence: int = 0
    acked_through: int = 0
    pending: tuple[PendingMessage, ...] = ()
    cursor: str = ""


@dataclass(frozen=True)
class MessageAttemptRecord:
    source: str
    group: str
    sequence: int
    scope: str
    parent: str  # the processing parent attempt
    node_id: str
    index: int
    limit: int
    state: AttemptState


@dataclass(frozen=True)
class ManagedRecord:
    """Explicit processor state (a full snapshot) and committed ordinary values, owned by
    one Scope/Parent/NodeID."""

    scope: str
    parent: str
    node_id: str
    state: bytes = b""
    values: tuple[ValueRecord, ...] = ()


@dataclass(frozen=True)
class DurableRunRecord:
    run_id: str
    revision: int = 0  # 0 until the first save; then 1, 2, ... (never 0 once stored)
    format: int = RUN_FORMAT
    version: str = ""  # host business semantics version
    definition: str = ""  # SHA-256 fingerprint of the definition
    inputs: str = ""  # SHA-256 fingerprint of the root inputs
    root_scope: str = ""  # 32 hex digits (16 random bytes)
    scopes: Mapping[str, ScopeRecord] = field(default_factory=_frozen)
    attempts: Mapping[str, NodeAttemptRecord] = field(default_factory=_frozen)
    streams: Mapping[str, StreamRecord] = field(default_factory=_frozen)
    messages: Mapping[str, MessageAttemptRecord] = field(default_factory=_frozen)
    managed: Mapping[str, ManagedRecord] = field(default_factory=_frozen)

    def __post_init__(self) -> None:
        # Callers pass plain dicts; freeze them so a record cannot be changed in place.
        for name in ("scopes", "attempts", "streams", "messages", "managed"):
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, _frozen(value))

    @property
    def incremental(self) -> bool:
        """Whether the record carries any field format 1 cannot hold."""
        if self.streams or self.messages or self.managed:
            return True
        return any(
            value.stream is not None
            for scope in self.scopes.values()
            for node in scope.nodes.values()
            for value in node.outputs
        )


@dataclass(frozen=True)
class StoredRun:
    """A run record as stored, with the times the store keeps beside it (console reads).
    Whether a Session owns the run is the run store's to say (``RunStore.owned``)."""

    record: DurableRunRecord
    created_ns: int
    updated_ns: int
    stored_format: int  # the format on disk (1 until a format-1 record is saved again)
    # Set only by ``Tx.run_records`` for a stored record that does not decode (Corrupt,
    # or a newer format): ``record`` then holds just the run ID, the stored revision and
    # the stored format, so a list still shows the row. ``Tx.run_record`` raises instead.
    error: str = ""


# A run ID is a nonempty string of at most this many bytes of UTF-8 (the identifier rule).
RUN_ID_MAX = 255


@dataclass(frozen=True)
class RunQuery:
    """A selection of stored run records, newest update first (``updated_ns`` desc, then
    ``run_id`` desc). ``search`` is a case-sensitive substring of the run ID,
    ``run_id_prefix`` a prefix; ``updated_since`` is inclusive, ``updated_before``
    exclusive; ``after`` is the keyset cursor ``(updated_ns, run_id)`` of the last row of
    the previous page; ``limit`` 0 means all. ``count_run_records`` ignores ``after`` and
    ``limit``."""

    search: str = ""
    run_id_prefix: str = ""
    format: int | None = None
    updated_since: int | None = None
    updated_before: int | None = None
    after: tuple[int, str] | None = None
    limit: int = 50

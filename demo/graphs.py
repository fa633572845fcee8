"""The simulated graph runs' records: what a durable-execution runtime would save after
each step of three small graphs, built as pure functions over ``DurableRunRecord``.

- ``checkout``: ordinary nodes completing one per save, a value that is ready with zero
  bytes, an optional output skipped, a whole node skipped, and a node mounting a child
  graph whose scope hangs under the node's root attempt.
- ``payment``: a node under the built-in Retry aspect: failed attempts, then success
  (the inner attempt stays active, the root attempt is confirmed with the NodeRecord),
  or every attempt failed and the root attempt with them.
- ``feed``: a streaming source and a consumer: the source's StreamRecord grows, the
  consumer processes messages out of order (sparse acknowledgements above the frontier),
  a message attempt fails and is retried within its budget, every confirmed message
  commits the consumer's ManagedRecord, and the source completes with its descriptor.

``advance(record, plan, rng, new_id)`` returns the record of the next save, or ``None``
when the run has nothing left to do. It never touches the store: the simulator loads,
advances and saves through a Session.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from storage.run_records import (
    AttemptState,
    Codec,
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
    ValueCatalog,
    ValueRecord,
    ValueState,
)

from . import values

NewId = Callable[[], str]
VERSION = "demo-2026.11"
RETRY_BOUNDARY = "aspect/0:retry"  # the Retry aspect's fixed position on its node
STREAM_GROUP = "ledger"
MESSAGE_LIMIT = 2  # attempts per input message


@dataclass(frozen=True, slots=True)
class NodeDef:
    id: str
    provides: tuple[str, ...]
    optional: tuple[str, ...] = ()  # outputs that come out skipped
    skipped: bool = False  # the whole node is skipped
    retry: int = 0  # the Retry aspect's limit; 0 without Retry
    child: GraphDef | None = None  # a graph mounted by this node


@dataclass(frozen=True, slots=True)
class GraphDef:
    id: str
    nodes: tuple[NodeDef, ...]

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the complete definition (DurableRunRecord.Definition)."""
        return _sha(json.dumps(_describe(self), sort_keys=True).encode())


def _describe(graph: GraphDef) -> dict[str, object]:
    return {
        "graph": graph.id,
        "nodes": [
            {
                "id": n.id,
                "provides": n.provides,
                "retry": n.retry,
                "child": _describe(n.child) if n.child else None,
            }
            for n in graph.nodes
        ],
    }


SHIPPING = GraphDef(
    "demo.shipping",
    (NodeDef("label", ("label",)), NodeDef("pickup", ("slot",))),
)
CHECKOUT = GraphDef(
    "demo.checkout",
    (
        NodeDef("validate", ("order", "warnings")),  # no warnings: zero encoded bytes
        NodeDef("reserve", ("reservation", "backorder"), optional=("backorder",)),
        NodeDef("notify", ("receipt_mail",), skipped=True),
        NodeDef("ship", ("tracking",), child=SHIPPING),
    ),
)
PAYMENT = GraphDef(
    "demo.payment",
    (
        NodeDef("quote", ("amount",)),
        NodeDef("charge", ("receipt",), retry=3),
        NodeDef("settle", ("ledger_entry",)),
    ),
)
SOURCE = NodeDef("source", ("events",))
CONSUMER = NodeDef("consume", ("total",))
FEED = GraphDef("demo.feed", (SOURCE, CONSUMER, NodeDef("report", ("summary",))))
GRAPHS: Mapping[str, GraphDef] = {g.id.split(".")[1]: g for g in (CHECKOUT, PAYMENT, FEED)}


def _provides(graph: GraphDef) -> dict[str, tuple[str, ...]]:
    out = {}
    for node in graph.nodes:
        out[node.id] = node.provides
        out.update(_provides(node.child) if node.child else {})
    return out


# Node ID -> the outputs it Provides, for ``validate_run(record, PROVIDES)`` (node IDs
# are unique across these graphs).
PROVIDES: Mapping[str, tuple[str, ...]] = {
    k: v for g in GRAPHS.values() for k, v in _provides(g).items()
}


def _declared(graph: GraphDef) -> dict[tuple[str, str, str], type]:
    out: dict[tuple[str, str, str], type] = {}
    for node in graph.nodes:
        for name in node.provides:
            out[(graph.id, node.id, name)] = values.TYPES.get(name, values.Output)
        out.update(_declared(node.child) if node.child else {})
    return out


def run_values() -> ValueCatalog:
    """The demo's codecs and the declared type of every output of its graphs: the
    console's run page decodes and checks values with it (``CONSOLE_RUN_VALUES``)."""
    declared = {k: v for g in GRAPHS.values() for k, v in _declared(g).items()}
    return ValueCatalog(values.CODECS, declared)


def _codec(name: str) -> Codec:
    codec = values.CODECS.for_type(values.TYPES.get(name, values.Output))
    if codec is None:  # every demo type is registered in values.CODECS
        raise LookupError(f"demo.values registers no codec for the output {name!r}")
    return codec


@dataclass(frozen=True, slots=True)
class Plan:
    """What one run will do, drawn when it starts (not stored in the record: a
    runtime's business decisions are not part of its checkpoint)."""

    kind: str  # a key of GRAPHS
    failures: int = 0  # Retry: attempts that fail before one succeeds (>= limit: exhausted)
    messages: int = 0  # feed: messages the source sends
    poison: int = 0  # feed: the sequence whose first processing attempt fails

    @property
    def graph(self) -> GraphDef:
        return GRAPHS[self.kind]


# The simulator's log (data/logs/simulate.log under make run): a failed attempt's error
# is written here, since a run record keeps no error text (CONSOLE_RUN_ERRORS points
# the console's run page at these lines).
log = logging.getLogger("demo.simulate")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def new_record(
    run_id: str, plan: Plan, inputs: Mapping[str, object], new_id: NewId
) -> DurableRunRecord:
    """The first save of a run: its identity and root scope, no node results yet."""
    fingerprint = _sha(json.dumps(dict(inputs), sort_keys=True).encode())
    root = new_id()
    graph = plan.graph
    return DurableRunRecord(
        run_id=run_id,
        version=VERSION,
        definition=graph.fingerprint,
        inputs=fingerprint,
        root_scope=root,
        scopes={root: ScopeRecord(graph=graph.id, path="", inputs=fingerprint)},
    )


def advance(
    record: DurableRunRecord, plan: Plan, rng: random.Random, new_id: NewId
) -> DurableRunRecord | None:
    """The record after the run's next step, or None when it is finished (every node
    of the root graph confirmed, or a node failed for good)."""
    step = _Step(record, plan, rng, new_id)
    if plan.kind == "feed":
        return step.feed()
    return step.graph(record.root_scope, plan.graph)


def complete(record: DurableRunRecord) -> bool:
    """Whether every node of the root graph has its NodeRecord (a run that ``advance``
    ends without this failed: a node's attempts failed for good)."""
    root = record.scopes.get(record.root_scope)
    graph = next((g for g in GRAPHS.values() if root is not None and g.id == root.graph), None)
    return graph is not None and root is not None and all(n.id in root.nodes for n in graph.nodes)


class _Step:
    def __init__(
        self, record: DurableRunRecord, plan: Plan, rng: random.Random, new_id: NewId
    ) -> None:
        self.record = record
        self.plan = plan
        self.rng = rng
        self.new_id = new_id

    # -- record edits (each returns a new record; the old one is never changed) -----
    def put_attempt(self, attempt_id: str, attempt: NodeAttemptRecord) -> None:
        self.record = replace(self.record, attempts={**self.record.attempts, attempt_id: attempt})

    def put_scope(self, scope_id: str, scope: ScopeRecord) -> None:
        self.record = replace(self.record, scopes={**self.record.scopes, scope_id: scope})

    def put_node(self, scope_id: str, node: NodeRecord) -> None:
        scope = self.record.scopes[scope_id]
        self.put_scope(scope_id, replace(scope, nodes={**scope.nodes, node.node_id: node}))

    def set_state(self, attempt_id: str, state: AttemptState) -> None:
        self.put_attempt(attempt_id, replace(self.record.attempts[attempt_id], state=state))

    # -- queries ----------------------------------------------------------------------
    def root_attempt(self, scope_id: str, node_id: str) -> str:
        """The node's latest root attempt in this scope, "" when not started."""
        found = [
            (a.index, i)
            for i, a in self.record.attempts.items()
            if a.parent == scope_id and a.node_id == node_id and not a.boundary
        ]
        return max(found)[1] if found else ""

    def retries(self, root_id: str) -> list[tuple[str, NodeAttemptRecord]]:
        found = [(i, a) for i, a in self.record.attempts.items() if a.parent == root_id]
        return sorted(found, key=lambda item: item[1].index)

    # -- ordinary graphs ----------------------------------------------------------------
    def graph(self, scope_id: str, graph: GraphDef) -> DurableRunRecord | None:
        """Advance the first unconfirmed node of a graph, in definition order."""
        scope = self.record.scopes[scope_id]
        for node in graph.nodes:
            if node.id in scope.nodes:
                continue
            attempt_id = self.root_attempt(scope_id, node.id)
            if not attempt_id:
                self.start(scope_id, node)
                return self.record
            if self.record.attempts[attempt_id].state is AttemptState.FAILED:
                return None
            return self.progress(scope_id, node, attempt_id)
        return None

    def start(self, scope_id: str, node: NodeDef) -> str:
        attempt_id = self.new_id()
        self.put_attempt(
            attempt_id, NodeAttemptRecord(scope_id, node.id, "", 1, 1, AttemptState.ACTIVE)
        )
        if node.retry:
            self.put_attempt(
                self.new_id(),
                NodeAttemptRecord(
                    attempt_id, node.id, RETRY_BOUNDARY, 1, node.retry, AttemptState.ACTIVE
                ),
            )
        if node.child is not None:
            # The child scope's identity is the attempt that mounts it.
            inputs = _sha(f"{self.record.scopes[scope_id].inputs}/{node.id}".encode())
            self.put_scope(attempt_id, ScopeRecord(node.child.id, node.id, inputs))
        return attempt_id

    def progress(self, scope_id: str, node: NodeDef, attempt_id: str) -> DurableRunRecord | None:
        if node.child is not None and self.graph(attempt_id, node.child) is not None:
            return self.record  # a step inside the child graph
        if node.retry:
            return self.retry_step(scope_id, node, attempt_id)
        self.confirm(scope_id, node, attempt_id)
        return self.record

    def retry_step(self, scope_id: str, node: NodeDef, root_id: str) -> DurableRunRecord:
        """One try of the current Retry attempt: it fails (the next one starts in the
        same save, or the root fails with the last), or it succeeds."""
        tries = self.retries(root_id)
        current_id, current = tries[-1]
        if current.index > self.plan.failures:
            # Inner success stays active; the root attempt is what gets confirmed.
            self.confirm(scope_id, node, root_id)
            return self.record
        self.set_state(current_id, AttemptState.FAILED)
        log.info(
            "run %s node %s attempt %s failed: simulated failure, try %d of %d",
            self.record.run_id,
            node.id,
            current_id,
            current.index,
            current.limit,
        )
        if current.index < current.limit:
            nxt = replace(current, index=current.index + 1, state=AttemptState.ACTIVE)
            self.put_attempt(self.new_id(), nxt)
        else:
            self.set_state(root_id, AttemptState.FAILED)  # the budget is spent
        return self.record

    def confirm(
        self,
        scope_id: str,
        node: NodeDef,
        attempt_id: str,
        outputs: Sequence[ValueRecord] | None = None,
    ) -> None:
        """The NodeRecord and its confirmed root attempt, in one save."""
        values = (
            list(outputs) if outputs is not None else [self.value(node, n) for n in node.provides]
        )
        reason = NodeReason.SKIPPED if node.skipped else NodeReason.COMPLETED
        self.put_node(scope_id, NodeRecord(node.id, attempt_id, reason, tuple(values)))
        self.set_state(attempt_id, AttemptState.CONFIRMED)

    def value(self, node: NodeDef, name: str, data: object = None) -> ValueRecord:
        """The output through its codec (``demo.values``): the record names the codec's
        ID and version; "warnings" encodes as zero bytes, still ready."""
        if node.skipped or name in node.optional:
            codec = _codec(name)
            return ValueRecord(name, codec.id, codec.version, ValueState.SKIPPED)
        if data is None:
            data = values.output_value(node.id, name, self.rng)
        return values.CODECS.ready_value(name, data)

    # -- the streaming graph ------------------------------------------------------------
    def feed(self) -> DurableRunRecord | None:
        """One step of source and consumer, which run side by side; then the rest of
        the graph in order."""
        root = self.record.root_scope
        nodes = self.record.scopes[root].nodes
        source_id = self.root_attempt(root, SOURCE.id)
        if not source_id:
            self.start(root, SOURCE)
            self.open_stream(root)
            return self.record
        consumer_id = self.root_attempt(root, CONSUMER.id)
        if not consumer_id:
            self.start(root, CONSUMER)
            return self.record
        key, stream = self.stream(root)
        if SOURCE.id not in nodes:
            # The source sends while it is open; the consumer takes every other step.
            if stream.last_sequence < self.plan.messages and (
                not self.unacked(stream) or self.rng.random() < 0.5
            ):
                self.send(key, stream)
                return self.record
            if stream.last_sequence >= self.plan.messages and self.rng.random() < 0.5:
                self.complete_source(root, source_id, stream)
                return self.record
        if self.unacked(stream):
            self.process(root, consumer_id, key, stream)
            return self.record
        if SOURCE.id not in nodes:
            self.complete_source(root, source_id, stream)
            return self.record
        if CONSUMER.id not in nodes:
            self.complete_consumer(root, consumer_id)
            return self.record
        return self.graph(root, FEED)

    def open_stream(self, scope_id: str) -> None:
        """The source's durable identity is its own, not its attempt's: a recovered
        source keeps it (and advances the generation)."""
        key = stream_key(scope_id, SOURCE.id, SOURCE.provides[0], STREAM_GROUP)
        stream = StreamRecord(
            scope=scope_id,
            node_id=SOURCE.id,
            key=SOURCE.provides[0],
            group=STREAM_GROUP,
            generation=1,
            source_id=self.new_id(),
            resumable=True,
        )
        self.record = replace(self.record, streams={**self.record.streams, key: stream})

    def stream(self, scope_id: str) -> tuple[str, StreamRecord]:
        key = stream_key(scope_id, SOURCE.id, SOURCE.provides[0], STREAM_GROUP)
        return key, self.record.streams[key]

    def put_stream(self, key: str, stream: StreamRecord) -> None:
        self.record = replace(self.record, streams={**self.record.streams, key: stream})

    @staticmethod
    def unacked(stream: StreamRecord) -> list[int]:
        return [p.sequence for p in stream.pending if not p.acked]

    def send(self, key: str, stream: StreamRecord) -> None:
        count = min(self.rng.randint(1, 3), self.plan.messages - stream.last_sequence)
        new = tuple(PendingMessage(stream.last_sequence + i) for i in range(1, count + 1))
        self.put_stream(
            key,
            replace(
                stream, last_sequence=stream.last_sequence + count, pending=stream.pending + new
            ),
        )

    def process(self, scope_id: str, consumer_id: str, key: str, stream: StreamRecord) -> None:
        """One message attempt. Usually the oldest unacknowledged message, sometimes
        the next one (so an acknowledgement lands above the frontier)."""
        waiting = self.unacked(stream)
        sequence = waiting[1] if len(waiting) > 1 and self.rng.random() < 0.35 else waiting[0]
        tried = [
            m
            for m in self.record.messages.values()
            if m.sequence == sequence and m.parent == consumer_id
        ]
        index = len(tried) + 1
        fails = sequence == self.plan.poison and index == 1
        state = AttemptState.FAILED if fails else AttemptState.CONFIRMED
        message = MessageAttemptRecord(
            source=stream.source_id,
            group=stream.group,
            sequence=sequence,
            scope=scope_id,
            parent=consumer_id,
            node_id=CONSUMER.id,
            index=index,
            limit=MESSAGE_LIMIT,
            state=state,
        )
        messages = {**self.record.messages, message_key(message): message}
        self.record = replace(self.record, messages=messages)
        if fails:
            log.info(
                "run %s node %s attempt %s failed: poison message %d, try %d of %d",
                self.record.run_id,
                CONSUMER.id,
                message_key(message),
                sequence,
                index,
                MESSAGE_LIMIT,
            )
            return  # the input stays pending; the budget has one attempt left
        # Input acknowledgement, processor state and values commit in this one save.
        pending = tuple(
            replace(p, acked=True) if p.sequence == sequence else p for p in stream.pending
        )
        through = stream.acked_through
        while pending and pending[0].acked and pending[0].sequence == through + 1:
            through, pending = pending[0].sequence, pending[1:]
        self.put_stream(
            key, replace(stream, acked_through=through, pending=pending, cursor=f"seq:{sequence}")
        )
        self.commit_managed(scope_id, consumer_id)

    def commit_managed(self, scope_id: str, consumer_id: str) -> None:
        confirmed = sorted(
            m.sequence
            for m in self.record.messages.values()
            if m.parent == consumer_id and m.state is AttemptState.CONFIRMED
        )
        snapshot = {"processed": len(confirmed), "last": confirmed[-1] if confirmed else 0}
        total = self.value(CONSUMER, "total", values.Total(processed=len(confirmed)))
        container = ManagedRecord(
            scope=scope_id,
            parent=consumer_id,
            node_id=CONSUMER.id,
            state=json.dumps(snapshot, sort_keys=True).encode(),
            values=(total,),
        )
        key = managed_key(scope_id, consumer_id, CONSUMER.id)
        self.record = replace(self.record, managed={**self.record.managed, key: container})

    def complete_source(self, scope_id: str, source_id: str, stream: StreamRecord) -> None:
        descriptor = StreamDescriptorRecord(
            source_id=stream.source_id,
            writer_attempt=source_id,
            capacity=16,
            terminal=Terminal.COMPLETED,
        )
        codec = _codec(SOURCE.provides[0])  # the element type's codec
        events = ValueRecord(
            SOURCE.provides[0], codec.id, codec.version, ValueState.READY, stream=descriptor
        )
        self.confirm(scope_id, SOURCE, source_id, [events])

    def complete_consumer(self, scope_id: str, consumer_id: str) -> None:
        container = self.record.managed[managed_key(scope_id, consumer_id, CONSUMER.id)]
        self.confirm(scope_id, CONSUMER, consumer_id, list(container.values))


def stream_key(scope: str, node_id: str, key: str, group: str) -> str:
    return f"{scope}/{node_id}/{key}/{group}"


def managed_key(scope: str, parent: str, node_id: str) -> str:
    return f"{scope}/{parent}/{node_id}"


def message_key(message: MessageAttemptRecord) -> str:
    return f"{message.source}/{message.group}/{message.sequence}/{message.index}"

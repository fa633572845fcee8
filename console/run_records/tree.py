"""A run record as the tree the run page shows: pure presentation over ``DurableRunRecord``.

The record is flat maps (Scopes, Attempts, Streams, Messages, Managed); the tree is
rebuilt from the spec's identities:

- the root scope is ``DurableRunRecord.root_scope``; a child scope's key is the attempt that
  owns it (its parent node's deepest current attempt), so it hangs under that attempt;
- a node root attempt (empty Boundary) has the Scope as its Parent, so it belongs to a
  node of that scope; a Retry attempt (non-empty Boundary) has the outer attempt as its
  Parent, so it hangs under that attempt;
- attempts are grouped by Parent/NodeID/Boundary and ordered by Index.

Nothing is hidden: a scope or attempt the walk from the root does not reach (a broken
parent chain, a cycle) is listed as unattached, and the validator's findings are put
beside the element their path names. Digests are checked here, against SHA-256 of the
Data, so a mismatch shows even before the validator says so.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from storage.run_records import (
    AttemptState,
    DurableRunRecord,
    ManagedRecord,
    MessageAttemptRecord,
    NodeAttemptRecord,
    NodeRecord,
    PendingMessage,
    ScopeRecord,
    StreamRecord,
    ValueRecord,
    ValueState,
)

# Nesting the page draws (scopes and attempt layers, counted together): a deeper chain
# is listed flat under "unattached" rather than nested, so a malformed record cannot
# exhaust the template's recursion. A real graph nests a few levels.
MAX_DEPTH = 12
# A run page never draws more than this many sequence cells per stream: the pending
# list of a stalled reader can be long, and the counts already say how long.
FRONTIER_CELLS = 64


class FindingLike(Protocol):
    """What the tree needs of a validator finding (``storage.run_records.validate.Finding``)."""

    @property
    def path(self) -> str: ...

    @property
    def rule(self) -> str: ...

    @property
    def message(self) -> str: ...


# ---------------------------------------------------------------- anchors

_SAFE = re.compile(r"[A-Za-z0-9_.:-]{1,80}")


def _part(key: str) -> str:
    # Keys are arbitrary strings; an element id (and a URL fragment) keeps readable
    # keys as they are and names any other by a hash, so ids never collide on escaping.
    if _SAFE.fullmatch(key):
        return key
    return "h" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def anchor(kind: str, *keys: str) -> str:
    """The element id of one part of the record: ``attempt-<id>``, ``node-<scope>~<node>``.
    "~" never appears in a readable part, so two different keys never share an id."""
    return kind + "-" + "~".join(_part(k) for k in keys)


META_ANCHOR = "run-meta"
_MAPS = {
    "Scopes": "scope",
    "Attempts": "attempt",
    "Streams": "stream",
    "Messages": "message",
    "Managed": "managed",
}
# A finding about a whole map (not one entry) points at the part of the page showing it.
SECTIONS = {
    "scope": "run-tree",
    "attempt": "run-tree",
    "stream": "run-streams",
    "message": "run-messages",
    "managed": "run-managed",
}
_KEYED = re.compile(r'\[("(?:[^"\\]|\\.)*")\]')


def anchor_of_path(path: str) -> str:
    """The element a finding's path names, e.g. ``$.Attempts["ab12"].Index`` is
    ``attempt-ab12`` and ``$.Scopes["s"].Nodes["n"].Outputs[0]`` is ``node-s~n``;
    a top-level field is the metadata panel; "" when the path names nothing shown."""
    if not path.startswith("$"):
        return ""
    rest = path[1:]
    match = re.match(r"\.(\w+)", rest)
    if match is None:
        return META_ANCHOR if rest == "" else ""
    name = match.group(1)
    rest = rest[match.end() :]
    kind = _MAPS.get(name)
    if kind is None:
        return META_ANCHOR
    key = _key_at(rest)
    if key is None:
        return SECTIONS[kind]
    scope, rest = key
    if kind == "scope":
        node = re.match(r"\.Nodes", rest)
        if node is not None:
            inner = _key_at(rest[node.end() :])
            if inner is not None:
                return anchor("node", scope, inner[0])
    return anchor(kind, scope)


def _key_at(text: str) -> tuple[str, str] | None:
    """The JSON-quoted map key at the start of ``text`` and what follows it."""
    match = _KEYED.match(text)
    if match is None:
        return None
    try:
        key = json.loads(match.group(1))
    except ValueError:
        return None
    return (key, text[match.end() :]) if isinstance(key, str) else None


# ---------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class ValueView:
    value: ValueRecord
    slot: str  # an element id: its owner's anchor and its position
    computed: str  # SHA-256 of Data as stored, "" when nothing is to be checked
    # True: the digest matches the bytes; False: it does not (or a skipped/stream value
    # carries bytes or a digest); None: nothing to check (skipped, stream).
    digest_ok: bool | None
    problem: str = ""

    @property
    def size(self) -> int:
        return len(self.value.data)


def value_view(value: ValueRecord, slot: str = "") -> ValueView:
    """Check one value: a ready value's Digest must be the SHA-256 of its Data (zero
    bytes too); skipped and stream values carry neither."""
    computed = hashlib.sha256(value.data).hexdigest()
    if value.stream is not None:
        if value.data or value.digest:
            problem = "a stream value carries Data or a Digest"
            return ValueView(value, slot, computed, False, problem)
        return ValueView(value, slot, "", None)
    if value.state is ValueState.SKIPPED:
        if value.data or value.digest:
            problem = "a skipped value carries Data or a Digest"
            return ValueView(value, slot, computed, False, problem)
        return ValueView(value, slot, "", None)
    if value.digest != computed:
        problem = "the Digest is not the SHA-256 of the Data"
        return ValueView(value, slot, computed, False, problem)
    return ValueView(value, slot, computed, True)


def value_views(values: Iterable[ValueRecord], owner: str) -> list[ValueView]:
    return [value_view(v, f"{owner}-v{i}") for i, v in enumerate(values)]


# ---------------------------------------------------------------- the tree


@dataclass(slots=True)
class AttemptView:
    id: str
    record: NodeAttemptRecord
    current: bool = False  # the group's latest attempt
    cut: bool = False  # nested past MAX_DEPTH: what it holds is listed as unattached
    groups: list[AttemptGroup] = field(default_factory=list)  # inner Retry layers
    scope: ScopeView | None = None  # the child scope this attempt owns
    messages: list[MessageGroup] = field(default_factory=list)
    managed: list[str] = field(default_factory=list)  # keys of its ManagedRecords
    findings: list[FindingLike] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return anchor("attempt", self.id)

    @property
    def kind(self) -> str:
        return "root" if not self.record.boundary else "retry"


@dataclass(slots=True)
class AttemptGroup:
    """One Parent/NodeID/Boundary layer, attempts by Index."""

    parent: str
    node_id: str
    boundary: str
    attempts: list[AttemptView]

    @property
    def limit(self) -> int:
        return self.attempts[-1].record.limit if self.attempts else 0

    @property
    def used(self) -> int:
        return self.attempts[-1].record.index if self.attempts else 0

    @property
    def retried(self) -> bool:
        return len(self.attempts) > 1

    @property
    def exhausted(self) -> bool:
        last = self.attempts[-1].record if self.attempts else None
        return last is not None and last.state is AttemptState.FAILED and last.index >= last.limit


@dataclass(slots=True)
class NodeView:
    scope_id: str
    node_id: str
    record: NodeRecord | None  # None until the node is confirmed
    outputs: list[ValueView]
    groups: list[AttemptGroup]  # its root attempts in this scope (normally one)
    findings: list[FindingLike] = field(default_factory=list)
    streams: list[tuple[str, StreamRecord]] = field(default_factory=list)  # it opened

    @property
    def anchor(self) -> str:
        return anchor("node", self.scope_id, self.node_id)

    @property
    def status(self) -> str:
        """completed/skipped once confirmed, else the state of its latest root attempt."""
        if self.record is not None:
            return str(self.record.reason)
        latest = [g.attempts[-1].record.state for g in self.groups if g.attempts]
        return str(latest[-1]) if latest else "unknown"

    @property
    def digests_ok(self) -> bool:
        return all(v.digest_ok is not False for v in self.outputs)


@dataclass(slots=True)
class ScopeView:
    id: str
    record: ScopeRecord
    root: bool
    nodes: list[NodeView] = field(default_factory=list)
    findings: list[FindingLike] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return anchor("scope", self.id)


@dataclass(frozen=True, slots=True)
class FrontierCell:
    sequence: int
    state: str  # "acked" (sparse, above the frontier), "pending", "gone" (not pending)


@dataclass(slots=True)
class _Entry:
    """One entry of the record's Streams, Messages or Managed map, with the findings
    about it."""

    KIND: ClassVar[str] = ""
    key: str
    findings: list[FindingLike] = field(default_factory=list, kw_only=True)

    @property
    def anchor(self) -> str:
        return anchor(self.KIND, self.key)


@dataclass(slots=True)
class StreamView(_Entry):
    KIND = "stream"
    record: StreamRecord

    @property
    def sparse(self) -> list[PendingMessage]:
        """Pending messages acknowledged above the contiguous frontier."""
        return [p for p in self.record.pending if p.acked]

    @property
    def waiting(self) -> int:
        """Pending messages not yet acknowledged: the reading obligation left."""
        return sum(not p.acked for p in self.record.pending)

    @property
    def cells(self) -> list[FrontierCell]:
        """Sequences after the frontier up to the last one, at most FRONTIER_CELLS."""
        pending = {p.sequence: p.acked for p in self.record.pending}
        first = self.record.acked_through + 1
        last = min(self.record.last_sequence, first + FRONTIER_CELLS - 1)
        out = []
        for seq in range(first, last + 1):
            if seq not in pending:
                out.append(FrontierCell(seq, "gone"))
            else:
                out.append(FrontierCell(seq, "acked" if pending[seq] else "pending"))
        return out

    @property
    def cells_cut(self) -> bool:
        return self.record.last_sequence - self.record.acked_through > FRONTIER_CELLS


@dataclass(slots=True)
class MessageView(_Entry):
    KIND = "message"
    record: MessageAttemptRecord


@dataclass(slots=True)
class MessageGroup:
    """The attempts at one input message (source/group/sequence) by one processor:
    its failure budget is the latest attempt's Index/Limit; restarts never refill it."""

    source: str
    group: str
    sequence: int
    parent: str
    node_id: str
    attempts: list[MessageView]

    @property
    def latest(self) -> MessageAttemptRecord:
        return self.attempts[-1].record

    @property
    def remaining(self) -> int:
        return max(self.latest.limit - self.latest.index, 0)


@dataclass(slots=True)
class ManagedView(_Entry):
    KIND = "managed"
    record: ManagedRecord
    values: list[ValueView]


@dataclass(slots=True)
class RunTree:
    root: ScopeView | None  # None when RootScope names no scope in the record
    unattached_scopes: list[ScopeView]
    unattached_attempts: list[AttemptGroup]
    streams: list[StreamView]
    messages: list[MessageGroup]
    managed: list[ManagedView]
    findings: Sequence[FindingLike]
    anchored: frozenset[str]  # anchors that exist on the page
    meta_findings: list[FindingLike] = field(default_factory=list)

    def link_of(self, finding: FindingLike) -> str:
        """The anchor to jump to for a finding, "" when its element is not shown."""
        target = anchor_of_path(finding.path)
        return target if target in self.anchored else ""


@dataclass(frozen=True, slots=True)
class _Index:
    """The record's maps indexed by the keys the walk follows."""

    roots: Mapping[str, Mapping[str, list[tuple[str, NodeAttemptRecord]]]]  # scope -> node
    inner: Mapping[str, list[tuple[str, NodeAttemptRecord]]]  # outer attempt -> retries
    messages: Mapping[str, list[tuple[str, MessageAttemptRecord]]]  # by parent attempt
    managed: Mapping[str, list[str]]  # parent attempt -> managed keys
    streams: Mapping[tuple[str, str], list[tuple[str, StreamRecord]]]  # (scope, node)


def _index(record: DurableRunRecord) -> _Index:
    roots: dict[str, dict[str, list[tuple[str, NodeAttemptRecord]]]] = defaultdict(dict)
    inner: dict[str, list[tuple[str, NodeAttemptRecord]]] = defaultdict(list)
    for attempt_id, attempt in record.attempts.items():
        if attempt.boundary:
            inner[attempt.parent].append((attempt_id, attempt))
        else:
            roots[attempt.parent].setdefault(attempt.node_id, []).append((attempt_id, attempt))
    messages: dict[str, list[tuple[str, MessageAttemptRecord]]] = defaultdict(list)
    for key, message in record.messages.items():
        messages[message.parent].append((key, message))
    managed: dict[str, list[str]] = defaultdict(list)
    for key, container in record.managed.items():
        managed[container.parent].append(key)
    streams: dict[tuple[str, str], list[tuple[str, StreamRecord]]] = defaultdict(list)
    for key, stream in _items(record.streams):
        streams[(stream.scope, stream.node_id)].append((key, stream))
    return _Index(roots, inner, messages, managed, streams)


def _groups(attempts: Iterable[tuple[str, NodeAttemptRecord]]) -> list[AttemptGroup]:
    """Attempts grouped by Parent/NodeID/Boundary, each group by Index (then ID, so a
    duplicated index still shows both)."""
    by_key: dict[tuple[str, str, str], list[AttemptView]] = {}
    for attempt_id, attempt in attempts:
        key = (attempt.parent, attempt.node_id, attempt.boundary)
        by_key.setdefault(key, []).append(AttemptView(attempt_id, attempt))
    groups = []
    for (parent, node_id, boundary), views in by_key.items():
        views.sort(key=lambda v: (v.record.index, v.id))
        views[-1].current = True
        groups.append(AttemptGroup(parent, node_id, boundary, views))
    groups.sort(key=lambda g: (g.node_id, g.boundary, g.parent))
    return groups


def _message_groups(
    items: Iterable[tuple[str, MessageAttemptRecord]], findings: Mapping[str, list[FindingLike]]
) -> list[MessageGroup]:
    by_input: dict[tuple[str, str, int, str, str], list[MessageView]] = {}
    for key, message in items:
        ident = (message.source, message.group, message.sequence, message.parent, message.node_id)
        view = MessageView(key, message, findings=findings.get(anchor("message", key), []))
        by_input.setdefault(ident, []).append(view)
    groups = []
    for (source, group, sequence, parent, node_id), views in by_input.items():
        views.sort(key=lambda v: (v.record.index, v.key))
        groups.append(MessageGroup(source, group, sequence, parent, node_id, views))
    groups.sort(key=lambda g: (g.source, g.group, g.sequence, g.node_id, g.parent))
    return groups


class _Walk:
    """Depth-first from the root scope; every scope and attempt is visited at most
    once, so a cycle in the parent chains ends the walk instead of looping."""

    def __init__(self, record: DurableRunRecord, findings: Mapping[str, list[FindingLike]]) -> None:
        self.record = record
        self.findings = findings
        self.index = _index(record)
        self.seen_scopes: set[str] = set()
        self.seen_attempts: set[str] = set()
        self.anchors: set[str] = set()
        self.depth = 0

    def scope(self, scope_id: str, root: bool) -> ScopeView:
        self.depth += 1
        try:
            return self._scope(scope_id, root)
        finally:
            self.depth -= 1

    def _scope(self, scope_id: str, root: bool) -> ScopeView:
        self.seen_scopes.add(scope_id)
        record = self.record.scopes[scope_id]
        view = ScopeView(scope_id, record, root)
        view.findings = self.findings.get(view.anchor, [])
        self.anchors.add(view.anchor)
        node_ids = list(record.nodes)
        # Nodes with attempts but no NodeRecord yet (running, failed) come after the
        # confirmed ones, in attempt-map order.
        node_ids += [n for n in self.index.roots.get(scope_id, {}) if n not in record.nodes]
        for node_id in node_ids:
            view.nodes.append(self.node(scope_id, node_id, record.nodes.get(node_id)))
        return view

    def node(self, scope_id: str, node_id: str, record: NodeRecord | None) -> NodeView:
        attempts = [
            (i, a) for i, a in self.index.roots.get(scope_id, {}).get(node_id, []) if self._new(i)
        ]
        owner = anchor("node", scope_id, node_id)
        outputs = value_views(record.outputs, owner) if record else []
        view = NodeView(scope_id, node_id, record, outputs, self.groups(attempts))
        view.findings = self.findings.get(view.anchor, [])
        view.streams = self.index.streams.get((scope_id, node_id), [])
        self.anchors.add(view.anchor)
        return view

    def groups(self, attempts: Iterable[tuple[str, NodeAttemptRecord]]) -> list[AttemptGroup]:
        groups = _groups(attempts)
        for group in groups:
            for attempt in group.attempts:
                self.fill(attempt)
        return groups

    def fill(self, attempt: AttemptView) -> None:
        attempt.findings = self.findings.get(attempt.anchor, [])
        self.anchors.add(attempt.anchor)
        attempt.messages = _message_groups(self.index.messages.get(attempt.id, []), {})
        attempt.managed = sorted(self.index.managed.get(attempt.id, []))
        if self.depth >= MAX_DEPTH:
            attempt.cut = True
            return
        self.depth += 1
        try:
            self._descend(attempt)
        finally:
            self.depth -= 1

    def _descend(self, attempt: AttemptView) -> None:
        inner = [(i, a) for i, a in self.index.inner.get(attempt.id, []) if self._new(i)]
        attempt.groups = self.groups(inner)
        if attempt.id in self.record.scopes and attempt.id not in self.seen_scopes:
            attempt.scope = self.scope(attempt.id, root=False)

    def _new(self, attempt_id: str) -> bool:
        if attempt_id in self.seen_attempts:
            return False
        self.seen_attempts.add(attempt_id)
        return True


def _by_anchor(findings: Iterable[FindingLike]) -> dict[str, list[FindingLike]]:
    out: dict[str, list[FindingLike]] = defaultdict(list)
    for finding in findings:
        target = anchor_of_path(finding.path)
        if target:
            out[target].append(finding)
    return out


def build_tree(record: DurableRunRecord, findings: Sequence[FindingLike] = ()) -> RunTree:
    """The record as the run page's tree, with each finding beside its element."""
    placed = _by_anchor(findings)
    walk = _Walk(record, placed)
    root = walk.scope(record.root_scope, root=True) if record.root_scope in record.scopes else None
    unattached_scopes = []
    for scope_id in record.scopes:
        if scope_id not in walk.seen_scopes:
            unattached_scopes.append(walk.scope(scope_id, root=False))
    loose = [(i, a) for i, a in record.attempts.items() if i not in walk.seen_attempts]
    for attempt_id, _ in loose:
        walk.seen_attempts.add(attempt_id)
    unattached_attempts = walk.groups(loose)
    streams = [StreamView(k, s) for k, s in _items(record.streams)]
    messages = _message_groups(record.messages.items(), placed)
    managed = [
        ManagedView(k, m, value_views(m.values, anchor("managed", k)))
        for k, m in _items(record.managed)
    ]
    for entry in (*streams, *managed):
        entry.findings = placed.get(entry.anchor, [])
    anchors = set(walk.anchors) | {META_ANCHOR}
    anchors |= {s.anchor for s in streams} | {m.anchor for m in managed}
    anchors |= {v.anchor for g in messages for v in g.attempts}
    anchors |= set(SECTIONS.values())
    return RunTree(
        root=root,
        unattached_scopes=unattached_scopes,
        unattached_attempts=unattached_attempts,
        streams=streams,
        messages=messages,
        managed=managed,
        findings=findings,
        anchored=frozenset(anchors),
        meta_findings=placed.get(META_ANCHOR, []),
    )


def _items[V](mapping: Mapping[str, V]) -> list[tuple[str, V]]:
    return sorted(mapping.items())

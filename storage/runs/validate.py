"""Structural checks of one ``RunRecord`` (``durable-run-records.txt``), reported by path.

``validate_run(record, provides)`` is pure (no database, no clock) and never raises on a
well-typed record: it returns every ``Finding`` sorted by path, each naming the spec's
JSON path (``$.Attempts["<id>"].Limit``, ``$.Scopes["<id>"].Nodes["n"].Outputs[1].Digest``)
and one stable rule name (``RULES``; the console shows them, tests pin them). A record
that decodes can still break these rules: the codec checks types, this checks how the
parts fit together. Each violated sentence is reported once, where it is violated; a
check that depends on a broken reference is skipped rather than reported again.

Rules (storage/README.md, "Run records: validator", quotes the spec sentence of each):

- ``format``: Format is 1 or 2; format 1 carries no incremental field.
- ``required-field``: RunID, Definition, Inputs, each scope's Graph and Inputs, each
  attempt's NodeID, each stream's Key and SourceID, each descriptor's SourceID.
- ``parent-chain``: RootScope and attempt IDs are 32 lowercase hex digits; the root
  scope exists and its Inputs equal ``$.Inputs``; a root attempt's Parent is a scope, a
  Retry attempt's Parent an attempt of the same node; chains reach the root scope
  without cycles; every other scope is keyed by an attempt that has no inner Retry
  attempts; message and managed owners (Scope/Parent/NodeID) fit together.
- ``root-attempt``: a root attempt (empty Boundary) has Index 1 and Limit 1.
- ``attempt-index``: per Parent/NodeID/Boundary group, indexes are 1, 2, ... n.
- ``attempt-limit``: Limit positive, Index <= Limit, one Limit per group.
- ``attempt-state``: attempt and message states are active, failed or confirmed.
- ``earlier-failed``: every attempt of a group below its highest index has failed.
- ``node-attempt``: NodeRecord key, NodeID, Reason and Attempt (a confirmed root attempt
  of that node in that scope); a confirmed root attempt has that NodeRecord; a Retry
  attempt is never confirmed.
- ``node-outputs``: output names non-empty and unique; with ``provides``, exactly the
  node's Provides (managed values: a subset of them).
- ``value-state``: TypeID/Version non-empty; ready has a 64-hex Digest or a Stream (not
  both, no Data beside a Stream); skipped has no Data, Digest or Stream; managed values
  carry no Stream.
- ``value-digest``: a ready Digest is the SHA-256 of Data, zero-length Data included.
- ``stream-frontier``: Generation >= 1, 0 <= AckedThrough <= LastSequence, Pending
  strictly increasing inside (AckedThrough, LastSequence] and not starting with an acked
  message; the stream's Scope and a root attempt of its NodeID in it exist; one stream
  per Scope/NodeID/Key/Group; a descriptor's WriterAttempt is a root attempt.
- ``stream-terminal``: descriptors of one writer root attempt do not mix failed with
  completed or cancelled terminals.
- ``message-container``: message Index/Limit positive, Index <= Limit; a confirmed
  message attempt has a ManagedRecord with its Scope/Parent/NodeID, every ManagedRecord
  has a confirmed message attempt, one ManagedRecord per Scope/Parent/NodeID.
- ``message-source``: a message's Source/Group is a stream's SourceID/Group, its
  Sequence is in [1, LastSequence], and a confirmed one is not pending unacknowledged.

What the child-scope sentence ("A child scope directly uses its parent node's deepest
current Attempt identity") lets us check without the definition: a scope key other than
RootScope is an attempt ID of the record, and that attempt has no inner Retry attempt
(attempts with it as Parent and a non-empty Boundary): Retry creates its attempt before
the body runs, so a body ran in an attempt only if nothing was nested below it. Old
scopes of failed attempts stay valid ("its old scope remains in the record"). Which
node's body mounts which graph, and at which Path, needs the definition.

Not checked (they need the graph definition, the business types or history):
- Provides without ``provides``; node IDs and graphs against the definition; Path;
  Bindings; Version; the encoding of the Definition/Inputs fingerprints (only
  non-empty: the spec does not fix their text form).
- Codec IDs/versions and whether Data decodes to the declared type.
- Whether the runtime may still reuse a result under a failed ancestor ("logically
  invalid for reuse, not structurally corrupt"), and dependency completeness.
- That a confirmed root's inner last Retry attempt is active: an aspect above a Retry
  boundary may recover from an exhausted retry.
- A message's budget across parent attempts and generations (Index consecutive, earlier
  failed): the spec does not say which fields key one input's budget. A confirmed
  message above AckedThrough that is no longer pending: Stop ends reading obligations
  without acknowledging, so its acknowledgement may have been dropped legitimately.
- Terminal against the writer attempt's state ("Legacy format 2 may contain only some
  failed terminals with an active root"); which stream a descriptor feeds.
- A skipped node's outputs being all skipped (the spec does not say so).
- UTF-8 of metadata (``storage.runs.check_utf8``; stores refuse it before writing) and
  Revision (the store sets it; a record not yet saved has 0).

``provides`` maps a node ID to the output names that node Provides. Node IDs are taken
as unique across the definition's graphs; a node the mapping does not name is not
checked, so a caller may pass a partial map.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from .records import (
    RUN_FORMATS,
    AttemptRecord,
    AttemptState,
    NodeReason,
    RunRecord,
    StreamDescriptorRecord,
    Terminal,
    ValueRecord,
    ValueState,
)

RULES = (
    "format",
    "required-field",
    "parent-chain",
    "root-attempt",
    "attempt-index",
    "attempt-limit",
    "attempt-state",
    "earlier-failed",
    "node-attempt",
    "node-outputs",
    "value-state",
    "value-digest",
    "stream-frontier",
    "stream-terminal",
    "message-container",
    "message-source",
)

_ID = re.compile(r"[0-9a-f]{32}")
_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Finding:
    path: str  # the spec's JSON path of the offending field or record
    rule: str  # one of RULES
    message: str


def validate_run(
    record: RunRecord, provides: Mapping[str, Collection[str]] | None = None
) -> list[Finding]:
    """Every structural violation in ``record``, sorted by path then rule."""
    check = _Check(record, provides)
    check.run()
    return sorted(set(check.findings), key=_order)


def path_key(name: str) -> str:
    """The path step of a map key: ``["name"]``, JSON-quoted (escaped where the key is
    not valid UTF-8, so a path can always be printed)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return f"[{json.dumps(name)}]"
    return f"[{json.dumps(name, ensure_ascii=False)}]"


def _order(finding: Finding) -> tuple[object, ...]:
    # List indexes sort as numbers, so Outputs[10] comes after Outputs[2].
    parts = re.split(r"\[(\d+)\]", finding.path)
    natural = tuple((0, int(p), "") if i % 2 else (1, 0, p) for i, p in enumerate(parts))
    return (natural, finding.rule, finding.message)


def _attempt_path(attempt_id: str) -> str:
    return f"$.Attempts{path_key(attempt_id)}"


def _scope_path(scope_id: str) -> str:
    return f"$.Scopes{path_key(scope_id)}"


def _is_hex_id(text: str) -> bool:
    return _ID.fullmatch(text) is not None


# Enum members compare equal to their strings; a record built in memory may hold either.
_ATTEMPT_STATES = frozenset(state.value for state in AttemptState)
_NODE_REASONS = frozenset(reason.value for reason in NodeReason)
_VALUE_STATES = frozenset(state.value for state in ValueState)
_TERMINALS = frozenset(terminal.value for terminal in Terminal)


class _Check:
    def __init__(self, record: RunRecord, provides: Mapping[str, Collection[str]] | None) -> None:
        self.record = record
        self.provides = (
            None if provides is None else {n: frozenset(names) for n, names in provides.items()}
        )
        self.findings: list[Finding] = []
        # Root attempts by (scope, node): streams and node records look them up.
        self.roots: dict[tuple[str, str], list[str]] = defaultdict(list)
        for attempt_id, attempt in record.attempts.items():
            if not attempt.boundary:
                self.roots[(attempt.parent, attempt.node_id)].append(attempt_id)

    def add(self, path: str, rule: str, message: str) -> None:
        self.findings.append(Finding(path, rule, message))

    def run(self) -> None:
        self.header()
        self.identities()
        for attempt_id, attempt in self.record.attempts.items():
            self.attempt(attempt_id, attempt)
        self.groups()
        self.cycles()
        self.nodes()
        self.confirmed_roots()
        self.streams()
        self.terminals()
        self.messages()
        self.managed()

    # ------------------------------------------------------------ record and scopes

    def header(self) -> None:
        record = self.record
        if record.format not in RUN_FORMATS:
            self.add("$.Format", "format", f"Format {record.format} is not one of {RUN_FORMATS}")
        elif record.format == 1 and record.incremental:
            incremental = {
                "Streams": record.streams,
                "Messages": record.messages,
                "Managed": record.managed,
            }
            fields = [f"$.{name}" for name, items in incremental.items() if items]
            fields += [path + ".Stream" for path, value in self.node_values() if value.stream]
            self.add(
                "$.Format",
                "format",
                "a format-1 record cannot carry incremental fields; this one has "
                + ", ".join(fields),
            )
        header = {"RunID": record.run_id, "Definition": record.definition, "Inputs": record.inputs}
        for name, text in header.items():
            if not text:
                self.add(f"$.{name}", "required-field", f"{name} is empty")
        for scope_id, scope in record.scopes.items():
            for name, text in (("Graph", scope.graph), ("Inputs", scope.inputs)):
                if not text:
                    self.add(
                        f"{_scope_path(scope_id)}.{name}", "required-field", f"{name} is empty"
                    )

    def identities(self) -> None:
        record, root = self.record, self.record.root_scope
        if not _is_hex_id(root):
            self.add(
                "$.RootScope", "parent-chain", f"RootScope {root!r} is not 32 lowercase hex digits"
            )
        if root not in record.scopes:
            self.add("$.RootScope", "parent-chain", f"root scope {root!r} has no ScopeRecord")
        elif (
            record.inputs
            and record.scopes[root].inputs
            and (record.scopes[root].inputs != record.inputs)
        ):
            self.add(
                f"{_scope_path(root)}.Inputs",
                "parent-chain",
                "the root scope's Inputs differ from $.Inputs",
            )
        if root in record.attempts:
            self.add("$.RootScope", "parent-chain", "RootScope is also an attempt ID")
        for attempt_id in record.attempts:
            if not _is_hex_id(attempt_id):
                self.add(
                    _attempt_path(attempt_id),
                    "parent-chain",
                    f"attempt ID {attempt_id!r} is not 32 lowercase hex digits",
                )
        for scope_id in record.scopes:
            if scope_id == root:
                continue
            if scope_id not in record.attempts:
                self.add(
                    _scope_path(scope_id),
                    "parent-chain",
                    "a child scope must be keyed by its parent node's attempt ID; "
                    "no attempt has this ID",
                )
                continue
            inner = sorted(
                a for a, att in record.attempts.items() if att.parent == scope_id and att.boundary
            )
            if inner:
                self.add(
                    _scope_path(scope_id),
                    "parent-chain",
                    "a child scope uses its parent node's deepest attempt, but attempt "
                    f"{scope_id} has inner Retry attempts ({', '.join(inner)})",
                )

    # ------------------------------------------------------------ attempts

    def attempt(self, attempt_id: str, attempt: AttemptRecord) -> None:
        path = _attempt_path(attempt_id)
        if not attempt.node_id:
            self.add(f"{path}.NodeID", "required-field", "NodeID is empty")
        if attempt.state not in _ATTEMPT_STATES:
            self.add(
                f"{path}.State",
                "attempt-state",
                f"State {attempt.state!r} is not active, failed or confirmed",
            )
        if not attempt.boundary:
            for name, value in (("Index", attempt.index), ("Limit", attempt.limit)):
                if value != 1:
                    self.add(
                        f"{path}.{name}",
                        "root-attempt",
                        f"a node root attempt (empty Boundary) has {name} 1, not {value}",
                    )
        else:
            self.bounds(path, attempt.index, attempt.limit, "attempt-index", "attempt-limit")
            if attempt.state == AttemptState.CONFIRMED:
                self.add(
                    f"{path}.State",
                    "node-attempt",
                    "a Retry attempt is never confirmed; confirmation applies to the "
                    "node root attempt",
                )
        self.parent(path, attempt)

    def bounds(self, path: str, index: int, limit: int, index_rule: str, limit_rule: str) -> None:
        if index < 1:
            self.add(f"{path}.Index", index_rule, f"Index {index} is below 1")
        if limit < 1:
            self.add(f"{path}.Limit", limit_rule, f"Limit {limit} is not positive")
        elif index > limit:
            self.add(f"{path}.Index", limit_rule, f"Index {index} exceeds Limit {limit}")

    def parent(self, path: str, attempt: AttemptRecord) -> None:
        record, parent = self.record, attempt.parent
        if not parent:
            self.add(f"{path}.Parent", "parent-chain", "Parent is empty")
        elif not attempt.boundary:
            # The root scope's absence is reported once, at $.RootScope.
            if parent not in record.scopes and parent != record.root_scope:
                what = "an attempt with no scope" if parent in record.attempts else "unknown"
                self.add(
                    f"{path}.Parent",
                    "parent-chain",
                    f"a root attempt's Parent is its scope; {parent} is {what}",
                )
        elif parent not in record.attempts:
            self.add(
                f"{path}.Parent",
                "parent-chain",
                f"a Retry attempt's Parent is its outer attempt; {parent} is not an attempt",
            )
        elif record.attempts[parent].node_id != attempt.node_id:
            self.add(
                f"{path}.Parent",
                "parent-chain",
                f"outer attempt {parent} is of node {record.attempts[parent].node_id!r}, "
                f"not {attempt.node_id!r}",
            )

    def groups(self) -> None:
        groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        for attempt_id, attempt in self.record.attempts.items():
            groups[(attempt.parent, attempt.node_id, attempt.boundary)].append(attempt_id)
        for (_, _, boundary), members in groups.items():
            self.group(
                sorted(members, key=lambda a: (self.record.attempts[a].index, a)),
                retry=bool(boundary),
            )

    def group(self, members: list[str], *, retry: bool) -> None:
        attempts = self.record.attempts
        # Indexes the per-attempt checks already refused take no part in the sequence.
        ranked = [
            a for a in members if attempts[a].index >= 1 and (retry or attempts[a].index == 1)
        ]
        expected, previous = 1, ""
        for attempt_id in ranked:
            index = attempts[attempt_id].index
            if index != expected:
                if index < expected:
                    message = f"Index {index} repeats attempt {previous} of the same group"
                elif expected == 1:
                    message = f"the Parent/NodeID/Boundary group starts at Index {index}, not 1"
                else:
                    message = f"Index {index} follows {expected - 1}: the group skips an index"
                self.add(f"{_attempt_path(attempt_id)}.Index", "attempt-index", message)
            expected, previous = max(expected, index + 1), attempt_id
        budgeted = [a for a in members if attempts[a].limit >= 1]
        if retry and budgeted:
            first = budgeted[0]
            for attempt_id in budgeted[1:]:
                if attempts[attempt_id].limit != attempts[first].limit:
                    self.add(
                        f"{_attempt_path(attempt_id)}.Limit",
                        "attempt-limit",
                        f"Limit {attempts[attempt_id].limit} differs from Limit "
                        f"{attempts[first].limit} of attempt {first} in the same group",
                    )
        if ranked:
            last = attempts[ranked[-1]].index
            for attempt_id in ranked:
                state = attempts[attempt_id].state
                if attempts[attempt_id].index < last and state != AttemptState.FAILED:
                    self.add(
                        f"{_attempt_path(attempt_id)}.State",
                        "earlier-failed",
                        f"attempt {attempts[attempt_id].index} is {state} but attempt "
                        f"{last} follows it in the group: earlier attempts must have "
                        "failed",
                    )

    def next_link(self, attempt_id: str) -> str | None:
        """The attempt one step up the parent chain, or None where the chain ends (at
        the root scope, or at a broken link reported by ``parent``/``identities``)."""
        attempt = self.record.attempts[attempt_id]
        if attempt.boundary:
            return attempt.parent if attempt.parent in self.record.attempts else None
        scope = attempt.parent
        if scope == self.record.root_scope or scope not in self.record.scopes:
            return None
        return scope if scope in self.record.attempts else None

    def cycles(self) -> None:
        done: set[str] = set()
        for start in sorted(self.record.attempts):
            trail: list[str] = []
            current: str | None = start
            while current is not None and current not in done and current not in trail:
                trail.append(current)
                current = self.next_link(current)
            if current is not None and current in trail:
                cycle = trail[trail.index(current) :]
                first = min(cycle)
                turn = cycle[cycle.index(first) :] + cycle[: cycle.index(first)] + [first]
                self.add(
                    f"{_attempt_path(first)}.Parent",
                    "parent-chain",
                    "the parent chain never reaches the root scope: " + " -> ".join(turn),
                )
            done.update(trail)

    def scope_of(self, attempt_id: str) -> str | None:
        """The scope an attempt runs in: its root attempt's Parent (None if broken)."""
        seen: set[str] = set()
        current = attempt_id
        while current in self.record.attempts and current not in seen:
            seen.add(current)
            attempt = self.record.attempts[current]
            if not attempt.boundary:
                return attempt.parent
            current = attempt.parent
        return None

    # ------------------------------------------------------------ nodes and values

    def node_values(self) -> Iterable[tuple[str, ValueRecord]]:
        for scope_id, scope in self.record.scopes.items():
            for node_key, node in scope.nodes.items():
                for i, value in enumerate(node.outputs):
                    yield f"{_scope_path(scope_id)}.Nodes{path_key(node_key)}.Outputs[{i}]", value

    def nodes(self) -> None:
        for scope_id, scope in self.record.scopes.items():
            for node_key, node in scope.nodes.items():
                path = f"{_scope_path(scope_id)}.Nodes{path_key(node_key)}"
                if node.node_id != node_key:
                    self.add(
                        f"{path}.NodeID",
                        "node-attempt",
                        f"NodeID {node.node_id!r} differs from its key {node_key!r}",
                    )
                if node.reason not in _NODE_REASONS:
                    self.add(
                        f"{path}.Reason",
                        "node-attempt",
                        f"Reason {node.reason!r} is not completed or skipped",
                    )
                self.node_attempt(path, scope_id, node_key, node.attempt)
                names = [value.name for value in node.outputs]
                self.names(path, node_key, names, exact=True)
                for i, value in enumerate(node.outputs):
                    self.value(f"{path}.Outputs[{i}]", value, managed=False)

    def node_attempt(self, path: str, scope_id: str, node_id: str, attempt_id: str) -> None:
        attempt = self.record.attempts.get(attempt_id)
        if attempt is None:
            self.add(
                f"{path}.Attempt",
                "node-attempt",
                f"Attempt {attempt_id!r} is not an attempt of the record",
            )
            return
        problems = []
        if attempt.boundary:
            problems.append("is a Retry attempt, not the node root attempt")
        if attempt.parent != scope_id:
            problems.append(f"belongs to scope {attempt.parent}")
        if attempt.node_id != node_id:
            problems.append(f"is an attempt of node {attempt.node_id!r}")
        if attempt.state != AttemptState.CONFIRMED:
            problems.append(f"is {attempt.state}, not confirmed")
        if problems:
            self.add(
                f"{path}.Attempt", "node-attempt", f"Attempt {attempt_id} " + "; ".join(problems)
            )

    def confirmed_roots(self) -> None:
        for attempt_id, attempt in self.record.attempts.items():
            if attempt.boundary or attempt.state != AttemptState.CONFIRMED:
                continue
            scope = self.record.scopes.get(attempt.parent)
            if scope is None:
                continue  # the broken Parent is reported by parent-chain
            node = scope.nodes.get(attempt.node_id)
            where = f"{_scope_path(attempt.parent)}.Nodes{path_key(attempt.node_id)}"
            if node is None:
                self.add(
                    f"{_attempt_path(attempt_id)}.State",
                    "node-attempt",
                    f"a confirmed root attempt has its NodeRecord, but {where} is missing",
                )
            elif node.attempt != attempt_id:
                self.add(
                    f"{_attempt_path(attempt_id)}.State",
                    "node-attempt",
                    f"a confirmed root attempt has its NodeRecord, but {where} "
                    f"names attempt {node.attempt}",
                )

    def names(self, path: str, node_id: str, names: list[str], *, exact: bool) -> None:
        """Output names: non-empty and unique; with ``provides``, all of the node's
        Provides (``exact``, NodeRecord) or some of them (ManagedRecord values)."""
        label = "Outputs" if exact else "Values"
        declared = None if self.provides is None else self.provides.get(node_id)
        seen: set[str] = set()
        for i, name in enumerate(names):
            name_path = f"{path}.{label}[{i}].Name"
            if not name:
                self.add(name_path, "node-outputs", "Name is empty")
            elif name in seen:
                self.add(name_path, "node-outputs", f"{name!r} appears twice")
            elif declared is not None and name not in declared:
                self.add(name_path, "node-outputs", f"node {node_id!r} does not provide {name!r}")
            seen.add(name)
        if exact and declared is not None and declared - seen:
            missing = ", ".join(repr(n) for n in sorted(declared - seen))
            self.add(
                f"{path}.Outputs",
                "node-outputs",
                f"exactly all Provides of node {node_id!r}: {missing} missing",
            )

    def value(self, path: str, value: ValueRecord, *, managed: bool) -> None:
        for name, text in (("TypeID", value.type_id), ("Version", value.version)):
            if not text:
                self.add(f"{path}.{name}", "value-state", f"{name} is empty")
        if value.state not in _VALUE_STATES:
            self.add(
                f"{path}.State", "value-state", f"State {value.state!r} is not ready or skipped"
            )
        if value.stream is not None:
            self.stream_value(path, value, value.stream, managed=managed)
        elif value.state == ValueState.READY:
            if not value.digest:
                self.add(f"{path}.Digest", "value-state", "a ready value has no Digest")
            elif _DIGEST.fullmatch(value.digest) is None:
                self.add(
                    f"{path}.Digest",
                    "value-state",
                    f"Digest {value.digest!r} is not 64 lowercase hex digits",
                )
            elif hashlib.sha256(value.data).hexdigest() != value.digest:
                self.add(
                    f"{path}.Digest",
                    "value-digest",
                    f"Digest is not the SHA-256 of the {len(value.data)} bytes of Data "
                    f"({hashlib.sha256(value.data).hexdigest()})",
                )
        elif value.state == ValueState.SKIPPED:
            if value.data:
                self.add(
                    f"{path}.Data",
                    "value-state",
                    f"a skipped value has no Data; this one has {len(value.data)} bytes",
                )
            if value.digest:
                self.add(f"{path}.Digest", "value-state", "a skipped value has an empty Digest")

    def stream_value(
        self, path: str, value: ValueRecord, stream: StreamDescriptorRecord, *, managed: bool
    ) -> None:
        if managed:
            self.add(
                f"{path}.Stream",
                "value-state",
                "managed values are ordinary outputs and carry no Stream",
            )
        elif value.state != ValueState.READY:
            self.add(f"{path}.Stream", "value-state", "a skipped value carries no Stream")
        if value.data:
            self.add(f"{path}.Data", "value-state", "Stream is mutually exclusive with Data")
        if value.digest:
            self.add(f"{path}.Digest", "value-state", "Stream is mutually exclusive with Digest")
        if stream.terminal not in _TERMINALS:
            self.add(
                f"{path}.Stream.Terminal",
                "value-state",
                f"Terminal {stream.terminal!r} is not a terminal",
            )
        if stream.capacity < 0:
            self.add(
                f"{path}.Stream.Capacity", "value-state", f"Capacity {stream.capacity} is negative"
            )
        if not stream.source_id:
            self.add(f"{path}.Stream.SourceID", "required-field", "SourceID is empty")
        writer = self.record.attempts.get(stream.writer_attempt)
        if writer is None:
            self.add(
                f"{path}.Stream.WriterAttempt",
                "stream-frontier",
                f"writer attempt {stream.writer_attempt!r} is not an attempt of the record",
            )
        elif writer.boundary:
            self.add(
                f"{path}.Stream.WriterAttempt",
                "stream-frontier",
                f"writer attempt {stream.writer_attempt} is a Retry attempt; a "
                "descriptor records the actual writer root attempt",
            )

    # ------------------------------------------------------------ streams

    def streams(self) -> None:
        identities: dict[tuple[str, str, str, str], str] = {}
        for stream_key in sorted(self.record.streams):
            stream = self.record.streams[stream_key]
            path = f"$.Streams{path_key(stream_key)}"
            for name, text in (("Key", stream.key), ("SourceID", stream.source_id)):
                if not text:
                    self.add(f"{path}.{name}", "required-field", f"{name} is empty")
            self.frontier(path, stream.generation, stream.last_sequence, stream.acked_through)
            previous: int | None = None
            for i, pending in enumerate(stream.pending):
                seq_path = f"{path}.Pending[{i}].Sequence"
                if previous is not None and pending.sequence <= previous:
                    self.add(
                        seq_path,
                        "stream-frontier",
                        f"Sequence {pending.sequence} does not follow {previous}: Pending "
                        "is strictly increasing",
                    )
                elif not stream.acked_through < pending.sequence <= stream.last_sequence:
                    self.add(
                        seq_path,
                        "stream-frontier",
                        f"Sequence {pending.sequence} is outside (AckedThrough "
                        f"{stream.acked_through}, LastSequence {stream.last_sequence}]",
                    )
                previous = pending.sequence if previous is None else max(previous, pending.sequence)
            if stream.pending and stream.pending[0].acked:
                self.add(
                    f"{path}.Pending[0].Acked",
                    "stream-frontier",
                    "the first pending message is acked: the contiguous frontier "
                    "AckedThrough would have advanced past it",
                )
            if stream.scope not in self.record.scopes:
                self.add(
                    f"{path}.Scope",
                    "stream-frontier",
                    f"Scope {stream.scope!r} is not a scope of the record",
                )
            elif not self.roots.get((stream.scope, stream.node_id)):
                self.add(
                    f"{path}.NodeID",
                    "stream-frontier",
                    f"node {stream.node_id!r} has no root attempt in scope {stream.scope}",
                )
            identity = (stream.scope, stream.node_id, stream.key, stream.group)
            if identity in identities:
                self.add(
                    path,
                    "stream-frontier",
                    f"same Scope/NodeID/Key/Group as $.Streams{path_key(identities[identity])}",
                )
            identities.setdefault(identity, stream_key)

    def frontier(self, path: str, generation: int, last: int, acked: int) -> None:
        if generation < 1:
            self.add(f"{path}.Generation", "stream-frontier", f"Generation {generation} is below 1")
        if last < 0:
            self.add(f"{path}.LastSequence", "stream-frontier", f"LastSequence {last} < 0")
        if acked < 0:
            self.add(f"{path}.AckedThrough", "stream-frontier", f"AckedThrough {acked} < 0")
        elif acked > last >= 0:
            self.add(
                f"{path}.AckedThrough",
                "stream-frontier",
                f"AckedThrough {acked} passes LastSequence {last}",
            )

    def terminals(self) -> None:
        by_writer: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for path, value in self.node_values():
            if value.stream is not None:
                by_writer[value.stream.writer_attempt].append((path, value.stream.terminal))
        for writer, descriptors in by_writer.items():
            failed = sorted(path for path, terminal in descriptors if terminal == Terminal.FAILED)
            if not failed:
                continue
            for path, terminal in descriptors:
                if terminal in (Terminal.COMPLETED, Terminal.CANCELLED):
                    self.add(
                        f"{path}.Stream.Terminal",
                        "stream-terminal",
                        f"terminal {terminal} beside the failed terminal of {failed[0]}: "
                        f"streams of writer root attempt {writer} cannot mix them",
                    )

    # ------------------------------------------------------------ messages

    def owner(self, path: str, scope: str, parent: str, node_id: str) -> None:
        """A message's or container's Scope/Parent/NodeID: the processing attempt of
        that node, running in that scope."""
        if scope not in self.record.scopes:
            self.add(f"{path}.Scope", "parent-chain", f"Scope {scope!r} is not a scope")
        attempt = self.record.attempts.get(parent)
        if attempt is None:
            self.add(f"{path}.Parent", "parent-chain", f"Parent {parent!r} is not an attempt")
        elif attempt.node_id != node_id:
            self.add(
                f"{path}.Parent",
                "parent-chain",
                f"processing attempt {parent} is of node {attempt.node_id!r}, not {node_id!r}",
            )
        elif scope in self.record.scopes and self.scope_of(parent) not in (None, scope):
            self.add(
                f"{path}.Parent",
                "parent-chain",
                f"processing attempt {parent} runs in scope {self.scope_of(parent)}, not {scope}",
            )

    def messages(self) -> None:
        owners = {(m.scope, m.parent, m.node_id) for m in self.record.managed.values()}
        for message_key, message in self.record.messages.items():
            path = f"$.Messages{path_key(message_key)}"
            self.bounds(
                path, message.index, message.limit, "message-container", "message-container"
            )
            if message.state not in _ATTEMPT_STATES:
                self.add(
                    f"{path}.State",
                    "attempt-state",
                    f"State {message.state!r} is not active, failed or confirmed",
                )
            self.owner(path, message.scope, message.parent, message.node_id)
            confirmed = message.state == AttemptState.CONFIRMED
            if confirmed and (message.scope, message.parent, message.node_id) not in owners:
                self.add(
                    path,
                    "message-container",
                    "a confirmed message attempt has a ManagedRecord with its Scope/"
                    "Parent/NodeID; none exists",
                )
            self.source(path, message.source, message.group, message.sequence, confirmed)

    def source(self, path: str, source: str, group: str, sequence: int, confirmed: bool) -> None:
        streams = [
            s for s in self.record.streams.values() if s.source_id == source and s.group == group
        ]
        if not streams:
            self.add(
                f"{path}.Source",
                "message-source",
                f"no stream has SourceID {source!r} and Group {group!r}",
            )
            return
        last = max(s.last_sequence for s in streams)
        if not 1 <= sequence <= last:
            self.add(
                f"{path}.Sequence",
                "message-source",
                f"Sequence {sequence} is outside the stream's [1, LastSequence {last}]",
            )
        elif confirmed and any(
            p.sequence == sequence and not p.acked for s in streams for p in s.pending
        ):
            self.add(
                f"{path}.Sequence",
                "message-source",
                f"message {sequence} is confirmed but still pending unacknowledged: "
                "acknowledgement commits in the same Save",
            )

    def managed(self) -> None:
        confirmed = {
            (m.scope, m.parent, m.node_id)
            for m in self.record.messages.values()
            if m.state == AttemptState.CONFIRMED
        }
        first: dict[tuple[str, str, str], str] = {}
        for managed_key in sorted(self.record.managed):
            container = self.record.managed[managed_key]
            path = f"$.Managed{path_key(managed_key)}"
            owner = (container.scope, container.parent, container.node_id)
            self.owner(path, *owner)
            if owner in first:
                self.add(
                    path,
                    "message-container",
                    f"same Scope/Parent/NodeID as $.Managed{path_key(first[owner])}",
                )
            first.setdefault(owner, managed_key)
            if owner not in confirmed:
                self.add(
                    path,
                    "message-container",
                    "a ManagedRecord needs at least one confirmed message attempt with "
                    "its Scope/Parent/NodeID; none exists",
                )
            self.names(path, container.node_id, [v.name for v in container.values], exact=False)
            for i, value in enumerate(container.values):
                self.value(f"{path}.Values[{i}]", value, managed=True)

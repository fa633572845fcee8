"""The data half of ``validate_run`` (``storage.run_records.validate``): values, streams,
messages and managed containers, and what both halves share (``Finding``, paths, the
indexes built once per record). Split off by area; the rules are documented in
``storage.run_records.validate``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from .records import (
    AttemptState,
    DurableRunRecord,
    StreamDescriptorRecord,
    StreamRecord,
    Terminal,
    ValueRecord,
    ValueState,
)

_DIGEST = re.compile(r"[0-9a-f]{64}")
# Enum members compare equal to their strings; a record built in memory may hold either.
_ATTEMPT_STATES = frozenset(state.value for state in AttemptState)
_VALUE_STATES = frozenset(state.value for state in ValueState)
_TERMINALS = frozenset(terminal.value for terminal in Terminal)


@dataclass(frozen=True)
class Finding:
    path: str  # the spec's JSON path of the offending field or record
    rule: str  # one of storage.run_records.validate.RULES
    message: str


def path_key(name: str) -> str:
    """The path step of a map key: ``["name"]``, JSON-quoted (escaped where the key is
    not valid UTF-8, so a path can always be printed)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return f"[{json.dumps(name)}]"
    return f"[{json.dumps(name, ensure_ascii=False)}]"


def attempt_path(attempt_id: str) -> str:
    return f"$.Attempts{path_key(attempt_id)}"


def scope_path(scope_id: str) -> str:
    return f"$.Scopes{path_key(scope_id)}"


@dataclass(frozen=True)
class Member:
    """One attempt (or message attempt) of a budget group, as the group checks see it."""

    path: str
    label: str  # its ID or map key, named in messages
    index: int
    limit: int
    state: str


class DataChecks:
    """One record's findings so far, its lookup indexes, and the data rules."""

    def __init__(
        self, record: DurableRunRecord, provides: Mapping[str, Collection[str]] | None
    ) -> None:
        self.record = record
        self.provides = (
            None if provides is None else {n: frozenset(names) for n, names in provides.items()}
        )
        self.findings: list[Finding] = []
        # Root attempts by (scope, node): streams and node records look them up.
        self.roots: dict[tuple[str, str], list[str]] = defaultdict(list)
        # Retry attempts by their outer attempt (a child scope's key must have none).
        self.inner: dict[str, list[str]] = defaultdict(list)
        for attempt_id, attempt in record.attempts.items():
            if attempt.boundary:
                self.inner[attempt.parent].append(attempt_id)
            else:
                self.roots[(attempt.parent, attempt.node_id)].append(attempt_id)
        # Streams by SourceID/Group, the pair a message attempt names.
        self.sources: dict[tuple[str, str], list[StreamRecord]] = defaultdict(list)
        self.unacked: dict[tuple[str, str], set[int]] = defaultdict(set)
        for stream in record.streams.values():
            self.sources[(stream.source_id, stream.group)].append(stream)
            self.unacked[(stream.source_id, stream.group)].update(
                p.sequence for p in stream.pending if not p.acked
            )

    def add(self, path: str, rule: str, message: str) -> None:
        self.findings.append(Finding(path, rule, message))

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

    def node_values(self) -> Iterable[tuple[str, ValueRecord]]:
        for scope_id, scope in self.record.scopes.items():
            for node_key, node in scope.nodes.items():
                for i, value in enumerate(node.outputs):
                    yield f"{scope_path(scope_id)}.Nodes{path_key(node_key)}.Outputs[{i}]", value

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

    def bounds(self, path: str, index: int, limit: int, index_rule: str, limit_rule: str) -> None:
        if index < 1:
            self.add(f"{path}.Index", index_rule, f"Index {index} is below 1")
        if limit < 1:
            self.add(f"{path}.Limit", limit_rule, f"Limit {limit} is not positive")
        elif index > limit:
            self.add(f"{path}.Index", limit_rule, f"Index {index} exceeds Limit {limit}")

    def attempt_state(self, path: str, state: str) -> None:
        if state not in _ATTEMPT_STATES:
            self.add(
                f"{path}.State",
                "attempt-state",
                f"State {state!r} is not active, failed or confirmed",
            )

    def budgets(
        self, members: list[Member], rules: tuple[str, str, str], *, root: bool, from_one: bool
    ) -> None:
        """One Parent/NodeID/Boundary group (or one message's attempts under one owner):
        indexes consecutive (from 1 when ``from_one``), one Limit, every attempt below
        the last one failed. ``rules`` name the index, limit and earlier-failed rules."""
        index_rule, limit_rule, failed_rule = rules
        members = sorted(members, key=lambda m: (m.index, m.label))
        # Indexes the per-attempt checks already refused take no part in the sequence.
        ranked = [m for m in members if m.index >= 1 and (not root or m.index == 1)]
        expected = 1 if from_one or not ranked else ranked[0].index
        previous = ""
        for member in ranked:
            if member.index != expected:
                if member.index < expected:
                    message = f"Index {member.index} repeats {previous} of the same group"
                elif expected == 1:
                    message = f"the group starts at Index {member.index}, not 1"
                else:
                    message = f"Index {member.index} follows {expected - 1}: an index is missing"
                self.add(f"{member.path}.Index", index_rule, message)
            expected, previous = max(expected, member.index + 1), member.label
        budgeted = [m for m in members if m.limit >= 1]
        for member in [] if root else budgeted[1:]:
            if member.limit != budgeted[0].limit:
                self.add(
                    f"{member.path}.Limit",
                    limit_rule,
                    f"Limit {member.limit} differs from Limit {budgeted[0].limit} of "
                    f"{budgeted[0].label} in the same group",
                )
        for member in ranked:
            if member.index < ranked[-1].index and member.state != AttemptState.FAILED:
                self.add(
                    f"{member.path}.State",
                    failed_rule,
                    f"attempt {member.index} is {member.state} but attempt {ranked[-1].index} "
                    "follows it in the group: earlier attempts must have failed",
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
                    f"a skipped value has no Data; this one has {len(value.data)} byte(s)",
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
            else:
                self.source_output(path, stream)
            identity = (stream.scope, stream.node_id, stream.key, stream.group)
            if identity in identities:
                self.add(
                    path,
                    "stream-frontier",
                    f"same Scope/NodeID/Key/Group as $.Streams{path_key(identities[identity])}",
                )
            identities.setdefault(identity, stream_key)

    def source_output(self, path: str, stream: StreamRecord) -> None:
        """A confirmed source keeps its NodeRecord: the output named Key there is the
        stream's descriptor, with the same SourceID."""
        node = self.record.scopes[stream.scope].nodes.get(stream.node_id)
        if node is None:
            return  # the source is still running: nothing to compare yet
        outputs = {value.name: value for value in reversed(node.outputs)}
        output = outputs.get(stream.key)
        where = f"{scope_path(stream.scope)}.Nodes{path_key(stream.node_id)}"
        if output is None or output.stream is None:
            self.add(
                f"{path}.Key",
                "stream-frontier",
                f"the confirmed source {where} has no stream output {stream.key!r}",
            )
        elif output.stream.source_id != stream.source_id:
            self.add(
                f"{path}.SourceID",
                "stream-frontier",
                f"SourceID differs from that of output {stream.key!r} of {where} "
                f"({output.stream.source_id!r})",
            )

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
        # One input's attempts under one owner. Not from 1: the spec does not say whether
        # a new parent attempt continues the input's budget ("restarts do not replenish").
        inputs: dict[tuple[str, ...], list[Member]] = defaultdict(list)
        for message_key, message in self.record.messages.items():
            path = f"$.Messages{path_key(message_key)}"
            owner = (
                message.source,
                message.group,
                str(message.sequence),
                message.scope,
                message.parent,
                message.node_id,
            )
            inputs[owner].append(
                Member(path, message_key, message.index, message.limit, message.state)
            )
            self.bounds(
                path, message.index, message.limit, "message-container", "message-container"
            )
            self.attempt_state(path, message.state)
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
        rules = ("message-container",) * 3
        for members in inputs.values():
            self.budgets(members, rules, root=False, from_one=False)

    def source(self, path: str, source: str, group: str, sequence: int, confirmed: bool) -> None:
        streams = self.sources.get((source, group), [])
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
        elif confirmed and sequence in self.unacked[(source, group)]:
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

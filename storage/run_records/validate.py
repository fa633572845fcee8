"""Structural checks of one ``DurableRunRecord`` (``durable-run-records.txt``), reported by path.

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
  message; the stream's Scope and a root attempt of its NodeID in it exist; a confirmed
  source's output Key is a stream with the same SourceID; one stream per
  Scope/NodeID/Key/Group; a descriptor's WriterAttempt is a root attempt.
- ``stream-terminal``: descriptors of one writer root attempt do not mix failed with
  completed or cancelled terminals.
- ``message-container``: message Index/Limit positive, Index <= Limit; one input's
  attempts under one owner (Source/Group/Sequence/Scope/Parent/NodeID) have consecutive
  indexes, one Limit, all but the last failed; a confirmed message attempt has a
  ManagedRecord with its Scope/Parent/NodeID, every ManagedRecord has a confirmed
  message attempt, one ManagedRecord per Scope/Parent/NodeID.
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
- Codec IDs/versions and whether Data decodes to the declared type: that is restoring
  (``storage.run_records.value_restore.restore_value``), which needs the host's codecs.
- Whether the runtime may still reuse a result under a failed ancestor ("logically
  invalid for reuse, not structurally corrupt"), and dependency completeness.
- That a confirmed root's inner last Retry attempt is active: an aspect above a Retry
  boundary may recover from an exhausted retry.
- That a message's indexes start at 1, and its budget across parent attempts or
  generations: whether a new parent attempt continues an input's budget ("restarts do
  not replenish budgets") is not stated. A confirmed message above AckedThrough that is
  no longer pending: Stop ends reading obligations without acknowledging, so its
  acknowledgement may have been dropped legitimately.
- Terminal against the writer attempt's state ("Legacy format 2 may contain only some
  failed terminals with an active root"); a descriptor's writer against its node (a Sub
  alias re-exposes a deeper writer's stream).
- A skipped node's outputs being all skipped (the spec does not say so).
- UTF-8 of metadata (``storage.run_records.check_utf8``; stores refuse it before writing) and
  Revision (the store sets it; a record not yet saved has 0).

``provides`` maps a node ID to the output names that node Provides. Node IDs are taken
as unique across the definition's graphs; a node the mapping does not name is not
checked, so a caller may pass a partial map.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Mapping

from .records import RUN_FORMATS, AttemptState, DurableRunRecord, NodeAttemptRecord, NodeReason
from .validate_data import (
    DataChecks,
    Finding,
    Member,
    attempt_path,
    path_key,
    scope_path,
)

__all__ = ["RULES", "Finding", "path_key", "validate_run"]

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
_NODE_REASONS = frozenset(reason.value for reason in NodeReason)


def validate_run(
    record: DurableRunRecord, provides: Mapping[str, Collection[str]] | None = None
) -> list[Finding]:
    """Every structural violation in ``record``, sorted by path then rule."""
    check = _Check(record, provides)
    check.run()
    return sorted(set(check.findings), key=_order)


def _order(finding: Finding) -> tuple[object, ...]:
    # List indexes sort as numbers, so Outputs[10] comes after Outputs[2].
    parts = re.split(r"\[(\d+)\]", finding.path)
    natural = tuple((0, int(p), "") if i % 2 else (1, 0, p) for i, p in enumerate(parts))
    return (natural, finding.rule, finding.message)


def _is_hex_id(text: str) -> bool:
    return _ID.fullmatch(text) is not None


class _Check(DataChecks):
    """The structure rules: record header, scopes, attempts and node records."""

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
            fields += sorted(path + ".Stream" for path, value in self.node_values() if value.stream)
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
                    self.add(f"{scope_path(scope_id)}.{name}", "required-field", f"{name} is empty")

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
                f"{scope_path(root)}.Inputs",
                "parent-chain",
                "the root scope's Inputs differ from $.Inputs",
            )
        if root in record.attempts:
            self.add("$.RootScope", "parent-chain", "RootScope is also an attempt ID")
        for attempt_id in record.attempts:
            if not _is_hex_id(attempt_id):
                self.add(
                    attempt_path(attempt_id),
                    "parent-chain",
                    f"attempt ID {attempt_id!r} is not 32 lowercase hex digits",
                )
        for scope_id in record.scopes:
            if scope_id == root:
                continue
            if scope_id not in record.attempts:
                self.add(
                    scope_path(scope_id),
                    "parent-chain",
                    "a child scope must be keyed by its parent node's attempt ID; "
                    "no attempt has this ID",
                )
                continue
            inner = sorted(self.inner.get(scope_id, ()))
            if inner:
                self.add(
                    scope_path(scope_id),
                    "parent-chain",
                    "a child scope uses its parent node's deepest attempt, but attempt "
                    f"{scope_id} has inner Retry attempts ({', '.join(inner)})",
                )

    def attempt(self, attempt_id: str, attempt: NodeAttemptRecord) -> None:
        path = attempt_path(attempt_id)
        if not attempt.node_id:
            self.add(f"{path}.NodeID", "required-field", "NodeID is empty")
        self.attempt_state(path, attempt.state)
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

    def parent(self, path: str, attempt: NodeAttemptRecord) -> None:
        record, parent = self.record, attempt.parent
        if not parent:
            self.add(f"{path}.Parent", "parent-chain", "Parent is empty")
        elif not attempt.boundary:
            # The root scope's absence is reported once, at $.RootScope.
            if parent not in record.scopes and parent != record.root_scope:
                known = parent in record.attempts
                what = "an attempt with no ScopeRecord" if known else "not a scope of the record"
                self.add(
                    f"{path}.Parent",
                    "parent-chain",
                    f"a root attempt's Parent is its scope, but {parent} is {what}",
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
        groups: dict[tuple[str, str, str], list[Member]] = defaultdict(list)
        for attempt_id, attempt in self.record.attempts.items():
            groups[(attempt.parent, attempt.node_id, attempt.boundary)].append(
                Member(
                    attempt_path(attempt_id),
                    attempt_id,
                    attempt.index,
                    attempt.limit,
                    attempt.state,
                )
            )
        rules = ("attempt-index", "attempt-limit", "earlier-failed")
        for (_, _, boundary), members in groups.items():
            self.budgets(members, rules, root=not boundary, from_one=True)

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
                    f"{attempt_path(first)}.Parent",
                    "parent-chain",
                    "the parent chain never reaches the root scope: " + " -> ".join(turn),
                )
            done.update(trail)

    def nodes(self) -> None:
        for scope_id, scope in self.record.scopes.items():
            for node_key, node in scope.nodes.items():
                path = f"{scope_path(scope_id)}.Nodes{path_key(node_key)}"
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
            where = f"{scope_path(attempt.parent)}.Nodes{path_key(attempt.node_id)}"
            if node is None:
                self.add(
                    f"{attempt_path(attempt_id)}.State",
                    "node-attempt",
                    f"a confirmed root attempt has its NodeRecord, but {where} is missing",
                )
            elif node.attempt != attempt_id:
                self.add(
                    f"{attempt_path(attempt_id)}.State",
                    "node-attempt",
                    f"a confirmed root attempt has its NodeRecord, but {where} "
                    f"names attempt {node.attempt}",
                )

"""A run's outcome, derived from its record: complete, failed, retrying or active, how
long it has run, and its last failure.

A ``DurableRunRecord`` (durable-run-records.txt) stores attempt *states*, not events: no
times per attempt, no error text ("without ... automatically captured business error
text"), and not the graph's definition (only its fingerprint), so the console cannot
know how many nodes a run will have. What is derived, and how (console/README.md
says the same for operators):

- **active**: an attempt (node, Retry or message) is ``active``, with no confirmed or
  failed attempt above it (a Retry success stays ``active`` under its confirmed node),
  and none of the retrying cases hold; or nothing is active but a Session owns the run now, or no
  attempt is recorded yet.
- **retrying**: an active attempt has index > 1 in its Parent/NodeID/Boundary group
  (the spec requires every earlier index to have failed), or a group's latest attempt
  failed with budget left (index < limit) while its outer attempt has not failed.
- **failed**: nothing is active and a node root attempt of the root scope failed: the
  node's real failure, after any Retry budget beneath it was spent.
- **complete**: nothing is active or failed, no Session owns the run, and every node
  root attempt of the root scope is confirmed. "As far as the record shows": a graph
  with nodes not yet started reads complete between a crash and its next Resume.

Duration: from the record's first save to its last for a complete or failed run, else
to now (the store keeps those two times beside the record). The last failure is the
failed attempt with the highest index, a Retry or message attempt before a node root
attempt (the inner one is the cause); ties go by key, so the choice is stable.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from console.run_records.tree import anchor
from storage.run_records import (
    AttemptState,
    DurableRunRecord,
    MessageAttemptRecord,
    NodeAttemptRecord,
    StoredRun,
)


class RunRecordStatus(enum.StrEnum):
    COMPLETE = "complete"
    FAILED = "failed"
    RETRYING = "retrying"
    ACTIVE = "active"

    @property
    def finished(self) -> bool:
        return self in (RunRecordStatus.COMPLETE, RunRecordStatus.FAILED)


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed attempt as the record holds it: where, which try of how many."""

    key: str  # the attempt's key in Attempts (or Messages)
    node_id: str
    kind: str  # "root", "retry" (its boundary is set) or "message"
    boundary: str
    index: int
    limit: int
    anchor: str  # the element id of this attempt on the run page

    @property
    def spent(self) -> bool:
        return self.index >= self.limit


@dataclass(frozen=True, slots=True)
class RunOutcome:
    status: RunRecordStatus
    why: str  # one sentence: what in the record decided the status
    duration_ns: int
    failures: tuple[Failure, ...]  # failed attempts of every kind, the last first

    @property
    def last_failure(self) -> Failure | None:
        return self.failures[0] if self.failures else None


def _latest[R: (NodeAttemptRecord, MessageAttemptRecord)](
    items: Iterable[tuple[tuple[object, ...], str, R]],
) -> dict[tuple[object, ...], tuple[str, R]]:
    """Each group's attempt with the highest index (then key, as the run tree sorts)."""
    latest: dict[tuple[object, ...], tuple[str, R]] = {}
    for group, key, record in items:
        seen = latest.get(group)
        if seen is None or (record.index, key) > (seen[1].index, seen[0]):
            latest[group] = (key, record)
    return latest


def _failures(record: DurableRunRecord) -> list[Failure]:
    out = [
        Failure(
            key,
            a.node_id,
            "retry" if a.boundary else "root",
            a.boundary,
            a.index,
            a.limit,
            anchor("attempt", key),
        )
        for key, a in record.attempts.items()
        if a.state is AttemptState.FAILED
    ]
    out += [
        Failure(key, m.node_id, "message", "", m.index, m.limit, anchor("message", key))
        for key, m in record.messages.items()
        if m.state is AttemptState.FAILED
    ]
    # The cause before its consequence: the highest index, an inner try before the node.
    rank = {"retry": 0, "message": 0, "root": 1}
    out.sort(key=lambda f: (-f.index, rank[f.kind], f.key))
    return out


def _settled(record: DurableRunRecord, parent: str) -> bool:
    """Whether an outer attempt up the chain is confirmed or failed. A successful Retry
    attempt stays ``active`` for good ("inner success stays active until root
    commit"), and attempts under a failed ancestor are history: neither is running.
    A child scope's ID is its owning attempt's, so one walk covers both."""
    seen: set[str] = set()
    while parent in record.attempts and parent not in seen:
        seen.add(parent)
        outer = record.attempts[parent]
        if outer.state is not AttemptState.ACTIVE:
            return True
        parent = outer.parent
    return False


def _failed(record: DurableRunRecord, attempt_id: object) -> bool:
    """Whether a Retry group's outer attempt failed: its budget left no longer counts."""
    outer = record.attempts.get(str(attempt_id))
    return outer is not None and outer.state is AttemptState.FAILED


def run_outcome(stored: StoredRun, owned: bool, now: int) -> RunOutcome:
    """The outcome of a decoded record (``stored.error`` unset)."""
    record = stored.record
    groups = _latest(
        ((a.parent, a.node_id, a.boundary), key, a) for key, a in record.attempts.items()
    )
    inputs = _latest(
        ((m.source, m.group, m.sequence, m.parent, m.node_id), key, m)
        for key, m in record.messages.items()
    )
    latest = [r for _, r in groups.values()] + [r for _, r in inputs.values()]
    roots = [r for (parent, _, boundary), (_, r) in groups.items() if parent == record.root_scope]
    roots = [r for r in roots if isinstance(r, NodeAttemptRecord) and not r.boundary]
    active = [
        r for r in latest if r.state is AttemptState.ACTIVE and not _settled(record, r.parent)
    ]
    failures = _failures(record)

    if any(r.index > 1 for r in active):
        status, why = RunRecordStatus.RETRYING, "an attempt after a failed one is running"
    elif any(r.state is AttemptState.FAILED for r in roots) and not active:
        status, why = RunRecordStatus.FAILED, "a node of the root graph failed"
    elif any(
        r.state is AttemptState.FAILED and r.index < r.limit and not _failed(record, group[0])
        for group, (_, r) in groups.items()
    ):
        status, why = RunRecordStatus.RETRYING, "an attempt failed with retry budget left"
    elif active:
        status, why = RunRecordStatus.ACTIVE, "an attempt is running"
    elif owned:
        status, why = RunRecordStatus.ACTIVE, "a Session holds the run between saves"
    elif not roots:
        status, why = RunRecordStatus.ACTIVE, "no attempt is recorded yet"
    else:
        status, why = RunRecordStatus.COMPLETE, "every node of the root graph is confirmed"
    end = stored.updated_ns if status.finished else now
    return RunOutcome(
        status=status,
        why=why,
        duration_ns=max(0, end - stored.created_ns),
        failures=tuple(failures),
    )

"""One workflow as the supervisor sees it: everything read in one snapshot
(``RoutedStore.view``), so a decision never mixes two moments."""

from __future__ import annotations

from dataclasses import dataclass, field

from storage.routed.enums import AttemptStatus, NodeStatus, RecoveryDisposition, WorkflowStatus
from storage.routed.envelope import TimeEnvelope
from storage.routed.errors import RoutedNotFound
from storage.routed.ids import AttemptID, ChildBatchID, RunID, WorkflowID
from storage.routed.records import (
    AttemptRecord,
    ChildBatch,
    ChildResult,
    InvocationReceipt,
    MCPServiceBinding,
    PipelineNode,
    RunRecord,
    Stored,
    WorkflowRecord,
)
from storage.routed.rules import RoutedRules
from storage.routed.transitions import ATTEMPT_TRANSITIONS, is_terminal

LIVE_ATTEMPT = frozenset(s for s, nxt in ATTEMPT_TRANSITIONS.items() if nxt)
RECOVERED = "lease expired; recovered under a new lease"  # a run ledger entry
HUNG = "waiting on a slow tool"  # the last heartbeat of a worker that hangs (a stall)


@dataclass
class Seen:
    wf: Stored[WorkflowRecord]
    receipt: InvocationReceipt
    nodes: list[Stored[PipelineNode]]  # in stage order
    runs: dict[RunID, Stored[RunRecord]]
    attempts: dict[RunID, list[Stored[AttemptRecord]]]  # by attempt number
    envelope: Stored[TimeEnvelope]
    services: list[Stored[MCPServiceBinding]]
    batches: list[Stored[ChildBatch]]
    results: dict[ChildBatchID, list[ChildResult]]
    done: dict[RunID, int]  # steps done: the latest safe checkpoint of the run's attempts
    recovered: set[RunID] = field(default_factory=set)  # runs whose lease was recovered once
    hung: set[AttemptID] = field(default_factory=set)  # running, its worker hanging
    restarted: bool = False

    @property
    def status(self) -> WorkflowStatus:
        return self.wf.record.status

    def current_node(self) -> Stored[PipelineNode] | None:
        """The first stage not finished: the one the workflow is at."""
        for node in self.nodes:
            if not is_terminal(node.record.status):
                return node
        return None

    def live_attempt(self, run_id: RunID) -> Stored[AttemptRecord] | None:
        attempts = self.attempts.get(run_id, [])
        if attempts and attempts[-1].record.status in LIVE_ATTEMPT:
            return attempts[-1]
        return None

    def running_attempts(self) -> list[Stored[AttemptRecord]]:
        return [
            a
            for attempts in self.attempts.values()
            for a in attempts
            if a.record.status is AttemptStatus.RUNNING
        ]

    def steps_done(self) -> int:
        """Steps done across the workflow's stages (what the spend is counted on)."""
        return sum(self.done.values())

    def next_node(self, node: PipelineNode) -> Stored[PipelineNode] | None:
        later = [n for n in self.nodes if n.record.stage_order == node.stage_order + 1]
        return later[0] if later else None


def read(rules: RoutedRules, workflow_id: WorkflowID) -> Seen:
    wf = rules.get_workflow(workflow_id)
    runs = {r.record.run_id: r for r in rules.list_runs(workflow_id)}
    attempts = {
        run_id: sorted(rules.list_attempts(run_id), key=lambda a: a.record.attempt_number)
        for run_id in runs
    }
    done: dict[RunID, int] = {}
    for run_id, listed in attempts.items():
        for attempt in reversed(listed):
            try:
                cp = rules.get_latest_checkpoint(attempt.record.attempt_id)
            except RoutedNotFound:
                continue
            done[run_id] = len(cp.completed_work)
            break
    batches = rules.list_child_batches(workflow_id)
    running = [
        a
        for listed in attempts.values()
        for a in listed
        if a.record.status is AttemptStatus.RUNNING
    ]
    try:
        rules.get_restart_provenance(workflow_id)
        restarted = True
    except RoutedNotFound:
        restarted = False
    nodes = sorted(rules.list_nodes(workflow_id), key=lambda n: n.record.stage_order)
    return Seen(
        wf=wf,
        receipt=rules.get_invocation(wf.record.invocation_id),
        nodes=nodes,
        runs=runs,
        attempts=attempts,
        envelope=rules.get_time_envelope(workflow_id),
        services=rules.list_services(workflow_id),
        batches=batches,
        results={
            b.record.child_batch_id: rules.list_child_results(b.record.child_batch_id)
            for b in batches
        },
        done=done,
        recovered={
            run_id
            for run_id in runs
            if any(e.entry == RECOVERED for e in rules.list_ledger(run_id))
        },
        restarted=restarted,
        hung={a.record.attempt_id for a in running if _last_phase(rules, a) == HUNG},
    )


def _last_phase(rules: RoutedRules, attempt: Stored[AttemptRecord]) -> str:
    try:
        return rules.get_attempt_progress(attempt.record.attempt_id).last_phase
    except RoutedNotFound:
        return ""


def node_waits(node: PipelineNode) -> bool:
    """A stage not launched yet (its launch intent, or its handoff, still to come)."""
    return node.status in (NodeStatus.PENDING, NodeStatus.READY)


@dataclass(frozen=True)
class Brief:
    """A live workflow in the tick's one overview read."""

    wf: Stored[WorkflowRecord]
    order: tuple[int, str]  # admission time, intent digest: never the store's random IDs
    waits_for_operator: bool  # its top-level run's last attempt failed for an operator


def overview(rules: RoutedRules, workflow_ids: set[WorkflowID]) -> list[Brief]:
    """The live workflows in a fixed order, read in one snapshot per tick."""
    out = []
    for workflow_id in workflow_ids:
        wf = rules.get_workflow(workflow_id)
        receipt = rules.get_invocation(wf.record.invocation_id)
        attempts = rules.list_attempts(receipt.run_id)
        last = max(attempts, key=lambda a: a.record.attempt_number).record if attempts else None
        waits = (
            last is not None
            and last.status is AttemptStatus.FAILED
            and last.recovery_disposition is RecoveryDisposition.NEEDS_REPLAN
        )
        out.append(Brief(wf, (wf.record.created_at, receipt.invocation_intent_digest), waits))
    return sorted(out, key=lambda b: b.order)

"""The workflow page's read: every record of one workflow in one View, and what the
page derives from them (the envelope bar, the attempts newest first with their
artifacts, journals and leases, the control history paired with its results).

Bounded reads: the records are the workflow's own (its nodes, runs, attempts,
services, batches, requests); artifacts are previewed for the ``PREVIEWED_ATTEMPTS``
newest attempts only, and journals verified for the ``VERIFIED_ATTEMPTS`` newest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from console.polling import polled_view
from console.routed.reads import NEAR_CEILING, routed_rules
from storage import Tx
from storage.errors import StorageError
from storage.routed.enums import WorkflowStatus
from storage.routed.envelope import TimeEnvelope, active_time_remaining_ms, consumed_ms
from storage.routed.errors import RoutedNotFound
from storage.routed.ids import WorkflowID
from storage.routed.journal import journal_attempts, open_control_journal
from storage.routed.records import (
    ArtifactMetadata,
    AttemptProgress,
    AttemptRecord,
    ChildBatch,
    ChildResult,
    ControlRequest,
    ControlResult,
    DeploymentRecord,
    DesiredState,
    HandoffEnvelope,
    InvocationReceipt,
    LimitAmendment,
    MCPServiceBinding,
    PipelineNode,
    RestartProvenance,
    RunRecord,
    Stored,
    WorkflowRecord,
)
from storage.routed.rules import RoutedRules
from storage.routed.transitions import is_terminal

VERIFIED_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class EnvelopeBar:
    """The time envelope as the bar draws it: consumed and remaining of the ceiling,
    in per cent, and whether the clock runs (a segment open) or is frozen."""

    ceiling_ms: int
    consumed_ms: int
    remaining_ms: int
    frozen: bool
    running: bool
    authority_generation: int
    cancellation_generation: int
    # The workflow has ended: its envelope is history, not a countdown. An ended
    # workflow is never "near its ceiling" and shows no percentage (an expired one
    # would read "(100%)", as if it still ran at its limit).
    ended: bool = False
    expired: bool = False

    @property
    def consumed_pct(self) -> int:
        if self.ceiling_ms <= 0:
            return 0
        return min(100, round(100 * self.consumed_ms / self.ceiling_ms))

    @property
    def near(self) -> bool:
        if self.ended or self.ceiling_ms <= 0:
            return False
        return self.consumed_ms >= NEAR_CEILING * self.ceiling_ms


def envelope_bar(env: TimeEnvelope, now_ms: int, status: WorkflowStatus) -> EnvelopeBar:
    return EnvelopeBar(
        ceiling_ms=env.current_max_active_duration_ms,
        consumed_ms=consumed_ms(env, now_ms),
        remaining_ms=active_time_remaining_ms(env, now_ms),
        # Paused is the one state whose envelope the store freezes (resolution 8).
        frozen=status is WorkflowStatus.PAUSED,
        running=env.running_segment_start_ms is not None,
        authority_generation=env.lifecycle_authority_generation,
        cancellation_generation=env.cancellation_generation,
        ended=is_terminal(status),
        expired=status is WorkflowStatus.EXPIRED,
    )


@dataclass(frozen=True, slots=True)
class JournalStatus:
    state: str  # "verified", "invalid", "none" (no journal), "unchecked" (older attempt)
    events: int = 0
    ingested: int | None = None
    problem: str = ""


@dataclass(slots=True)
class AttemptView:
    stored: Stored[AttemptRecord]
    run: RunRecord | None
    progress: AttemptProgress | None
    artifacts: list[ArtifactMetadata] = field(default_factory=list)
    journal: JournalStatus = JournalStatus("unchecked")

    @property
    def record(self) -> AttemptRecord:
        return self.stored.record


@dataclass(frozen=True, slots=True)
class ControlEntry:
    request: ControlRequest
    result: ControlResult | None


@dataclass(frozen=True, slots=True)
class BatchView:
    stored: Stored[ChildBatch]
    results: list[ChildResult]


@dataclass(slots=True)
class WorkflowDetail:
    now: int
    stamp: str
    workflow: Stored[WorkflowRecord]
    deployment: DeploymentRecord | None
    receipt: InvocationReceipt | None
    desired: DesiredState | None
    envelope: EnvelopeBar | None
    nodes: list[Stored[PipelineNode]]
    handoffs: list[HandoffEnvelope]
    runs: list[Stored[RunRecord]]
    attempts: list[AttemptView]  # newest first
    services: list[Stored[MCPServiceBinding]]
    batches: list[BatchView]
    controls: list[ControlEntry]  # newest first
    amendments: list[LimitAmendment]
    provenance: RestartProvenance | None
    restarted_as: list[str]  # workflows restarted from this one

    @property
    def live_attempt(self) -> bool:
        """An attempt of the workflow has not ended (no Continue while one has not)."""
        return any(not is_terminal(a.record.status) for a in self.attempts)


def _optional[T](fn: object, *args: object) -> T | None:
    try:
        return fn(*args)  # type: ignore[operator, no-any-return]
    except RoutedNotFound:
        return None


def read_workflow(workflow_id: str, seen: str = "") -> WorkflowDetail | None:
    """Every record of the workflow, in one View; ``RoutedNotFound`` (404) for an
    unknown ID. Re-renders at least once a second while it polls (the lease countdown
    and the consumed time move with time alone)."""

    rules = routed_rules()

    def build(tx: Tx, stamp: str) -> WorkflowDetail:
        return _build(rules(tx), WorkflowID(workflow_id), tx.now, stamp)

    return polled_view(seen, build, period=1_000_000_000)


def _build(r: RoutedRules, wf_id: WorkflowID, now: int, stamp: str) -> WorkflowDetail:
    wf = r.get_workflow(wf_id)
    record = wf.record
    env = _optional(r.get_time_envelope, wf_id)
    runs = r.list_runs(wf_id)
    run_ids = [s.record.run_id for s in runs]
    run_by_id = {s.record.run_id: s.record for s in runs}
    # One statement per table, whatever the number of runs, attempts and batches.
    artifacts = r.artifacts_of_runs(run_ids)
    progress = r.progress_of_runs(run_ids)
    attempts = [
        AttemptView(
            a,
            run_by_id.get(a.record.run_id),
            progress.get(a.record.attempt_id),
            [m for m in artifacts if m.attempt_id == a.record.attempt_id],
        )
        for a in r.attempts_of_runs(run_ids)
    ]
    attempts.sort(key=lambda v: (v.record.created_at, v.record.attempt_number), reverse=True)
    results = {c.control_request_id: c for c in r.list_control_results(wf_id)}
    controls = [
        ControlEntry(q, results.get(q.control_request_id)) for q in r.list_control_requests(wf_id)
    ]
    controls.reverse()
    stored_batches = r.list_child_batches(wf_id)
    child_results = r.child_results_of([b.record.child_batch_id for b in stored_batches])
    batches = [
        BatchView(b, [c for c in child_results if c.child_batch_id == b.record.child_batch_id])
        for b in stored_batches
    ]
    desired = _optional(r.get_desired_state, wf_id)
    detail = WorkflowDetail(
        now=now,
        stamp=stamp,
        workflow=wf,
        deployment=_optional(lambda i: r.get_deployment(i).record, record.deployment_id),
        receipt=_receipt(r, record),
        desired=desired.record if desired else None,
        envelope=envelope_bar(env.record, now // 1_000_000, record.status) if env else None,
        nodes=sorted(r.list_nodes(wf_id), key=lambda n: n.record.stage_order),
        handoffs=r.list_handoffs(wf_id),
        runs=runs,
        attempts=attempts,
        services=r.list_services(wf_id),
        batches=batches,
        controls=controls,
        amendments=list(reversed(r.list_limit_amendments(wf_id))),
        provenance=_optional(r.get_restart_provenance, wf_id),
        restarted_as=r.restarted_from(wf_id),
    )
    _verify_journals(detail)
    return detail


def _receipt(r: RoutedRules, wf: WorkflowRecord) -> InvocationReceipt | None:
    return _optional(r.get_invocation, wf.invocation_id)


def _verify_journals(detail: WorkflowDetail) -> None:
    """Each of the newest attempts' control journal, verified whole (HMAC and
    sequence), and compared with what the tailer ingested."""
    root = Path(settings.ROUTED_STATE_DIR)
    runs_seen: dict[str, set[str]] = {}
    for view in detail.attempts[:VERIFIED_ATTEMPTS]:
        a = view.record
        if a.run_id not in runs_seen:
            runs_seen[a.run_id] = set(journal_attempts(root, a.run_id))
        if a.attempt_id not in runs_seen[a.run_id]:
            view.journal = JournalStatus("none")
            continue
        ingested = view.progress.last_sequence if view.progress else None
        try:
            with open_control_journal(root, a.run_id, a.attempt_id, create=False) as journal:
                events = len(journal.read())
        except StorageError as exc:
            view.journal = JournalStatus("invalid", problem=str(exc))
            continue
        if ingested is not None and events < ingested:
            problem = f"holds {events} events but {ingested} were ingested"
            view.journal = JournalStatus("invalid", events, ingested, problem)
        else:
            view.journal = JournalStatus("verified", events, ingested)

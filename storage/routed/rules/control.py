"""Control requests, desired state, limit amendments and ``apply_transition``: the
control half of the spec's WorkflowStore, over ``Rows``.

``request_control`` is one transaction: the request is stored (idempotent per workflow
and key), its authority scope checked, DesiredState updated (cancel wins and stays,
resolution 9) and the immediate transition applied to the workflow and everything
under it. Pause asks (PAUSE_REQUESTED); the pause boundary is where no attempt of the
workflow runs (attempts have no pause state, resolution 8): the store moves the
workflow to PAUSED itself when a pause is desired and it gets there (the request finds
nothing running, or the last running attempt stops), and the supervisor may report
one through ``apply_transition``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum

from ..codec import check_record
from ..enums import (
    REQUIRED_SCOPE,
    AttemptStatus,
    ChildBatchStatus,
    CodedEnum,
    ControlCommand,
    FailureReason,
    FailureScope,
    NodeStatus,
    ResumeCapability,
    ResumeReason,
    RunStatus,
    ServiceStatus,
    WorkflowStatus,
)
from ..envelope import (
    close_active_segment,
    freeze_active_segment,
    start_active_segment,
    unfreeze_active_segment,
)
from ..errors import (
    AlreadyExists,
    AuthorityDenied,
    IdempotencyConflict,
    InvalidArgument,
    RoutedNotFound,
    TransitionError,
)
from ..ids import AttemptID, CheckpointID, InvocationID, RunID, WorkflowID
from ..records import (
    AttemptRecord,
    ControlRequest,
    ControlResult,
    DesiredState,
    InvocationReceipt,
    RestartProvenance,
    Stored,
    WorkflowRecord,
)
from ..transitions import MAPS, is_terminal
from .base import check_text
from .runs import LIVE_ATTEMPT
from .specs import (
    ATTEMPT,
    CONTROL,
    CONTROL_RESULT,
    DESIRED_STATE,
    INVOCATION,
    INVOCATION_REQUEST,
    RESTART,
    RUN,
    WORKFLOW,
    RequestRow,
    RestartRow,
    control_key,
)
from .workflows import WorkflowRules


class TransitionCommand(CodedEnum):
    """``apply_transition``'s commands (resolution 15: an enum, not free text)."""

    PAUSE_BOUNDARY_REACHED = 0
    PAUSE_BOUNDARY_UNAVAILABLE = 1


# How a service of an ending workflow gets to STOPPED (``_retire_services``).
_RETIRE: dict[ServiceStatus, tuple[ServiceStatus, ...]] = {
    ServiceStatus.DECLARED: (ServiceStatus.STARTING, ServiceStatus.STOPPED),
    ServiceStatus.STARTING: (ServiceStatus.STOPPED,),
    ServiceStatus.READY: (ServiceStatus.STOPPING,),
    ServiceStatus.UNHEALTHY: (ServiceStatus.STOPPING,),
    ServiceStatus.FENCED: (ServiceStatus.STOPPING,),
}


@dataclass(frozen=True)
class ControlOutcome:
    request: ControlRequest
    result: ControlResult
    replay: bool  # True: the key was seen before; nothing was applied now


# The commands that set the desired state (restart acts on a new workflow).
_DESIRED = frozenset(
    {ControlCommand.CANCEL, ControlCommand.PAUSE, ControlCommand.RESUME, ControlCommand.CONTINUE}
)


def _allows(status: object, to: object) -> bool:
    for kind, table in MAPS.values():
        if isinstance(status, kind):
            return to in table.get(status, frozenset())
    return False


def _ok(status: Enum, to: Enum, when: frozenset[str] | None) -> bool:
    """Move ``status`` to ``to``: the map allows it and, with ``when``, it is named in it."""
    if when is not None and status.name not in when:
        return False
    return status is not to and _allows(status, to)


class ControlRules(WorkflowRules):
    # -- requests --------------------------------------------------------------------
    def request_control(self, req: ControlRequest) -> ControlOutcome:
        check_record(req)
        check_text("actor_identity", req.actor_identity)
        check_text("idempotency_key", req.idempotency_key)
        if req.command is ControlCommand.AMEND_LIMITS:
            raise InvalidArgument("limit amendments go through append_limit_amendment")
        if req.authority_scope is not REQUIRED_SCOPE[req.command]:
            raise AuthorityDenied(
                f"{req.command.name} needs {REQUIRED_SCOPE[req.command].value}, "
                f"not {req.authority_scope.value}"
            )
        prior = self._read(CONTROL, control_key(req.workflow_id, req.idempotency_key))
        if prior is not None:
            if prior.record.command is not req.command:
                raise IdempotencyConflict(
                    f"key {req.idempotency_key!r} was a {prior.record.command.name} request"
                )
            done = self._require(CONTROL_RESULT, prior.record.control_request_id).record
            return ControlOutcome(prior.record, done, replay=True)
        wf = self.get_workflow(req.workflow_id)
        self._check_generation(WORKFLOW, wf, req.expected_generation)
        stored = self._create(CONTROL, dataclasses.replace(req, created_at=self.now)).record
        desired = self._read(DESIRED_STATE, req.workflow_id)
        cancelled = desired is not None and desired.record.cancel_precedence
        if cancelled and req.command in (ControlCommand.PAUSE, ControlCommand.RESUME):
            result = self._result(stored, applied=False, detail="superseded by cancel")
        else:
            result = self._apply(stored, wf)
            # A continue runs the workflow again: the desired state says so (a pause
            # desired before it would otherwise refuse the new attempt's claim).
            if req.command in _DESIRED:
                self._desire(stored, desired)
            if req.command is ControlCommand.PAUSE and self._pause_at_boundary(req.workflow_id):
                result = dataclasses.replace(result, detail="paused: no attempt was running")
        self.append_control_result(stored, result)
        return ControlOutcome(stored, result, replay=False)

    def _result(
        self, req: ControlRequest, *, applied: bool, detail: str, **more: object
    ) -> ControlResult:
        return ControlResult(
            control_request_id=req.control_request_id,
            workflow_id=req.workflow_id,
            command=req.command,
            applied=applied,
            detail=detail,
            created_at=self.now,
            **more,  # type: ignore[arg-type]
        )

    def _apply(self, req: ControlRequest, wf: Stored[WorkflowRecord]) -> ControlResult:
        if req.command is ControlCommand.CANCEL:
            self._cancel(wf)
            return self._result(req, applied=True, detail="cancelled")
        if req.command is ControlCommand.PAUSE:
            self._pause(wf)
            return self._result(req, applied=True, detail="pause requested")
        if req.command is ControlCommand.RESUME:
            self._resume(wf)
            return self._result(req, applied=True, detail="resumed")
        if req.command is ControlCommand.RESTART:
            receipt = self._restart(wf.record, req)
            return self._result(
                req,
                applied=True,
                detail=f"restarted as {receipt.workflow_id}",
                new_workflow_id=receipt.workflow_id,
                new_run_id=receipt.run_id,
            )
        attempt, checkpoint = self._continue(wf, req)
        return self._result(
            req,
            applied=True,
            detail=f"continued with attempt {attempt.attempt_number}",
            new_run_id=attempt.run_id,
            new_attempt_id=attempt.attempt_id,
            resume_reason=ResumeReason.FAILURE_CONTINUATION,
            resume_checkpoint_id=checkpoint,
        )

    def _desire(self, req: ControlRequest, current: Stored[DesiredState] | None) -> None:
        cancel = req.command is ControlCommand.CANCEL or (
            current is not None and current.record.cancel_precedence
        )
        state = DesiredState(
            workflow_id=req.workflow_id,
            desired_command=ControlCommand.CANCEL if cancel else req.command,
            control_request_id=req.control_request_id,
            cancel_precedence=cancel,
            created_at=self.now,
        )
        if current is None:
            self._create(DESIRED_STATE, state)
        else:
            self._replace(DESIRED_STATE, state, current.generation)

    def get_desired_state(self, workflow_id: WorkflowID) -> Stored[DesiredState]:
        return self._require(DESIRED_STATE, workflow_id)

    def append_control_result(self, req: ControlRequest, result: ControlResult) -> ControlResult:
        """Record what a stored request did; once per request (``AlreadyExists``)."""
        stored = self._require(CONTROL, control_key(req.workflow_id, req.idempotency_key)).record
        if (result.control_request_id, result.workflow_id) != (
            stored.control_request_id,
            stored.workflow_id,
        ):
            raise InvalidArgument("the result names another request")
        if self._read(CONTROL_RESULT, result.control_request_id) is not None:
            raise AlreadyExists(f"request {result.control_request_id} has its result")
        return self._create(CONTROL_RESULT, result).record

    def list_control_requests(self, workflow_id: WorkflowID) -> list[ControlRequest]:
        return [s.record for s in self._list(CONTROL, workflow_id)]

    def list_control_results(self, workflow_id: WorkflowID) -> list[ControlResult]:
        return [s.record for s in self._list(CONTROL_RESULT, workflow_id)]

    # -- the immediate transitions -----------------------------------------------------
    def _move_all(
        self,
        wf: WorkflowRecord,
        *,
        run: RunStatus | None = None,
        node: NodeStatus | None = None,
        batch: ChildBatchStatus | None = None,
        when: frozenset[str] | None = None,
    ) -> None:
        """Move every run, node and child batch of ``wf`` to its target where the map
        allows it (and, with ``when``, only those whose status name is in it)."""
        if run is not None:
            for r in self._list(RUN, wf.workflow_id):
                if _ok(r.record.status, run, when):
                    self.update_run(dataclasses.replace(r.record, status=run), r.generation)
        if node is not None:
            for n in self.list_nodes(wf.workflow_id):
                if _ok(n.record.status, node, when):
                    self._move_node(n, node, "control")
        if batch is not None:
            for b in self.list_child_batches(wf.workflow_id):
                if _ok(b.record.status, batch, when):
                    moved = dataclasses.replace(b.record, status=batch)
                    self.update_child_batch(moved, b.generation)

    def _set_workflow(
        self,
        wf: Stored[WorkflowRecord],
        status: WorkflowStatus,
        reason: FailureReason | None = None,
    ) -> Stored[WorkflowRecord]:
        record = dataclasses.replace(wf.record, status=status, terminal_reason=reason)
        return self._replace(WORKFLOW, self._stamp_wf(record), wf.generation)

    def _end_attempts(
        self, wf: WorkflowRecord, status: AttemptStatus, reason: FailureReason
    ) -> None:
        for run in self._list(RUN, wf.workflow_id):
            for attempt in self._list(ATTEMPT, run.record.run_id, LIVE_ATTEMPT):
                self.revoke_lease(
                    attempt, status, failure_reason=reason, failure_scope=FailureScope.WORKFLOW
                )

    def _cancel(self, wf: Stored[WorkflowRecord]) -> None:
        """Cancelled with every nonterminal attempt (its lease revoked, so a late write
        with it is fenced), run, node and child batch; one more cancellation generation."""
        if not _allows(wf.record.status, WorkflowStatus.CANCELLED):
            raise TransitionError("workflow", wf.record.status, WorkflowStatus.CANCELLED)
        self._end_attempts(wf.record, AttemptStatus.CANCELLED, FailureReason.USER_CANCELLED)
        self._retire_services(wf.record)
        self._move_all(
            wf.record,
            run=RunStatus.CANCELLED,
            node=NodeStatus.CANCELLED,
            batch=ChildBatchStatus.CANCELLED,
        )
        envelope = self._envelope(wf.record.workflow_id)
        env = close_active_segment(envelope.record.envelope, self.now_ms)
        env = dataclasses.replace(
            env,
            cancellation_generation=env.cancellation_generation + 1,
            attempt_lease_remaining_ms=None,
        )
        self._put_envelope(envelope, env)
        self._set_workflow(
            self.get_workflow(wf.record.workflow_id),
            WorkflowStatus.CANCELLED,
            FailureReason.USER_CANCELLED,
        )

    def _retire_services(self, wf: WorkflowRecord) -> None:
        """The services of a workflow that ends: the map has no Cancelled, so each
        takes the way to STOPPED its map allows. Running (READY, UNHEALTHY, FENCED):
        STOPPING, and the supervisor, which holds the process, records STOPPED once
        it is gone. STARTING: STOPPED. DECLARED, never started: STOPPED through
        STARTING in this one transaction (the map has no DECLARED -> STOPPED, and its
        FAILED would read as a fault)."""
        for svc in self.list_services(wf.workflow_id):
            steps = _RETIRE.get(svc.record.status, ())
            for status in steps:
                svc = self.update_service(
                    dataclasses.replace(svc.record, status=status), svc.generation
                )

    def _pause(self, wf: Stored[WorkflowRecord]) -> None:
        if wf.record.status is not WorkflowStatus.RUNNING:
            raise TransitionError("workflow", wf.record.status, WorkflowStatus.PAUSE_REQUESTED)
        running = frozenset({"RUNNING"})
        self._move_all(
            wf.record,
            run=RunStatus.PAUSE_REQUESTED,
            node=NodeStatus.PAUSE_REQUESTED,
            batch=ChildBatchStatus.PAUSE_REQUESTED,
            when=running,
        )
        self._set_workflow(self.get_workflow(wf.record.workflow_id), WorkflowStatus.PAUSE_REQUESTED)

    def _attempt_stopped(self, workflow_id: WorkflowID) -> None:
        self._pause_at_boundary(workflow_id)

    def _pause_at_boundary(self, workflow_id: WorkflowID) -> bool:
        """PAUSE_REQUESTED with pause the desired state and no attempt of the
        workflow running: the boundary is reached, so the workflow pauses now."""
        wf = self.get_workflow(workflow_id)
        if wf.record.status is not WorkflowStatus.PAUSE_REQUESTED:
            return False
        desired = self._read(DESIRED_STATE, workflow_id)
        if desired is None or desired.record.desired_command is not ControlCommand.PAUSE:
            return False
        for run in self._list(RUN, workflow_id):
            if self._list(ATTEMPT, run.record.run_id, frozenset({AttemptStatus.RUNNING.name})):
                return False
        self._reach_pause_boundary(wf)
        return True

    def _reach_pause_boundary(self, wf: Stored[WorkflowRecord]) -> Stored[WorkflowRecord]:
        """PAUSE_REQUESTED -> PAUSED for the workflow and what is under it; the time
        envelope freezes, so the pause is not charged (resolution 8)."""
        if wf.record.status is not WorkflowStatus.PAUSE_REQUESTED:
            raise TransitionError("workflow", wf.record.status, WorkflowStatus.PAUSED)
        requested = frozenset({"PAUSE_REQUESTED"})
        self._move_all(
            wf.record,
            run=RunStatus.PAUSED,
            node=NodeStatus.PAUSED,
            batch=ChildBatchStatus.PAUSED,
            when=requested,
        )
        envelope = self._envelope(wf.record.workflow_id)
        self._put_envelope(envelope, freeze_active_segment(envelope.record.envelope, self.now_ms))
        return self._set_workflow(self.get_workflow(wf.record.workflow_id), WorkflowStatus.PAUSED)

    def _resume(self, wf: Stored[WorkflowRecord]) -> None:
        was = wf.record.status
        if was not in (WorkflowStatus.PAUSED, WorkflowStatus.PAUSE_REQUESTED):
            raise TransitionError(
                "workflow", was, WorkflowStatus.RUNNING, f"resume from {was.name}"
            )
        paused = frozenset({"PAUSED", "PAUSE_REQUESTED"})
        self._move_all(
            wf.record,
            run=RunStatus.RUNNING,
            node=NodeStatus.RUNNING,
            batch=ChildBatchStatus.RUNNING,
            when=paused,
        )
        if was is WorkflowStatus.PAUSED:  # frozen at the boundary: unfreeze, accrue again
            envelope = self._envelope(wf.record.workflow_id)
            env = unfreeze_active_segment(envelope.record.envelope, self.now_ms)
            self._put_envelope(envelope, start_active_segment(env, self.now_ms))
        self._set_workflow(self.get_workflow(wf.record.workflow_id), WorkflowStatus.RUNNING)

    def _restart(self, wf: WorkflowRecord, req: ControlRequest) -> InvocationReceipt:
        """A new workflow and run from the source receipt: its exact deployment unless
        the request names another reference (an alias resolves to its target now)."""
        source = self._require(INVOCATION, wf.invocation_id).record
        request = self._require(INVOCATION_REQUEST, wf.invocation_id).record.request
        ref = req.target_deployment_ref or source.resolved_deployment_id
        dep = self._resolve(ref)
        self.check_admissible(dep)
        receipt = dataclasses.replace(
            source,
            invocation_id=InvocationID.new(),
            workflow_id=WorkflowID.new(),
            run_id=RunID.new(),
            resolved_deployment_id=dep.deployment_id,
            resolved_deployment_version=dep.package_version,
            resolved_deployment_digest=dep.bundle_digest,
            requested_deployment_ref=ref,
            nested_package_digests=dict(dep.nested_package_digests),
            admitted_at=self.now,
        )
        self._create(INVOCATION, receipt)
        self._create(INVOCATION_REQUEST, RequestRow(receipt.invocation_id, request))
        self.start_workflow(receipt, dep)
        provenance = RestartProvenance(
            source_run_id=source.run_id,
            source_workflow_id=wf.workflow_id,
            source_invocation_id=source.invocation_id,
            source_deployment_id=source.resolved_deployment_id,
            source_deployment_version=source.resolved_deployment_version,
            original_input_digest=request.input_digest,
            restarted_at=self.now,
        )
        self._create(RESTART, RestartRow(receipt.workflow_id, provenance))
        return receipt

    def get_restart_provenance(self, workflow_id: WorkflowID) -> RestartProvenance:
        return self._require(RESTART, workflow_id).record.provenance

    def _continue(
        self, wf: Stored[WorkflowRecord], req: ControlRequest
    ) -> tuple[AttemptRecord, CheckpointID | None]:
        """A new attempt of the workflow's top-level run after its last one ended,
        from the latest valid checkpoint when that attempt could resume from one."""
        if is_terminal(wf.record.status):
            raise TransitionError(
                "workflow", wf.record.status, WorkflowStatus.RUNNING, "continue a finished workflow"
            )
        run_id = self._require(INVOCATION, wf.record.invocation_id).record.run_id
        run = self.get_run(run_id)
        if is_terminal(run.record.status):
            raise TransitionError(
                "run", run.record.status, RunStatus.RUNNING, "continue a finished run"
            )
        attempts = self.list_attempts(run_id)
        if any(a.record.status.name in LIVE_ATTEMPT for a in attempts):
            raise InvalidArgument(f"run {run_id} has a live attempt; nothing to continue")
        checkpoint: CheckpointID | None = None
        if attempts and attempts[-1].record.resume_capability is ResumeCapability.SAFE_CHECKPOINT:
            try:
                checkpoint = self.get_latest_checkpoint(
                    attempts[-1].record.attempt_id
                ).checkpoint_id
            except RoutedNotFound:
                checkpoint = None  # no valid checkpoint: the new attempt starts over
        if run.record.status in (RunStatus.PAUSED, RunStatus.NEEDS_REPLAN):
            self.update_run(
                dataclasses.replace(run.record, status=RunStatus.RUNNING), run.generation
            )
        if wf.record.status in (WorkflowStatus.PAUSED, WorkflowStatus.NEEDS_REPLAN):
            self._set_workflow(wf, WorkflowStatus.RUNNING)
        attempt = AttemptRecord(
            attempt_id=AttemptID.new(),
            run_id=run_id,
            workflow_id=wf.record.workflow_id,
            attempt_number=len(attempts) + 1,
        )
        return self.create_attempt(attempt).record, checkpoint

"""The supervisor's writes: each a function of the rules, run in one transaction
(``RoutedStore.transact``), so a stage that finishes, a handoff and the next stage's
launch intent commit together or not at all."""

from __future__ import annotations

import dataclasses

from storage.routed.enums import (
    AttemptStatus,
    AuthorityScope,
    ChildBatchStatus,
    ControlCommand,
    DataClassification,
    FailureReason,
    FailureScope,
    NodeStatus,
    RecoveryDisposition,
    ResumeCapability,
    RunStatus,
    ServiceStatus,
    WorkflowStatus,
)
from storage.routed.envelope import close_active_segment, unfreeze_active_segment
from storage.routed.errors import InvalidArgument
from storage.routed.ids import (
    AttemptID,
    ChildBatchID,
    ChildResultID,
    ControlRequestID,
    HandoffID,
    LeaseID,
    RunID,
)
from storage.routed.records import (
    ArtifactRef,
    AttemptRecord,
    ChildBatch,
    ChildResult,
    ChildSpawnRequest,
    ControlRequest,
    HandoffEnvelope,
    JoinPolicy,
    RunRecord,
    Stored,
)
from storage.routed.rules import RoutedRules
from storage.routed.transitions import NODE_TRANSITIONS, RUN_TRANSITIONS, is_terminal

from .catalog import LEASE_MS

CHILD_PACKAGE = ("fanout.item", "1.0.0")


def lease_ms(run: RunRecord) -> int:
    """Our lease, within the run's ceiling (an operator may have raised it)."""
    return max(1, min(LEASE_MS, run.max_attempt_lease_ms))


def lease_of(attempt: AttemptRecord) -> LeaseID:
    """The lease a claim just minted."""
    if attempt.lease is None:
        raise InvalidArgument(f"attempt {attempt.attempt_id} holds no lease")
    return attempt.lease.lease_id


def new_attempt(rules: RoutedRules, run: RunRecord, attempt_id: AttemptID) -> None:
    number = len(rules.list_attempts(run.run_id)) + 1
    rules.create_attempt(AttemptRecord(attempt_id, run.run_id, run.workflow_id, number))


def claim(rules: RoutedRules, attempt_id: AttemptID) -> Stored[AttemptRecord]:
    """Claim (or reclaim: NEEDS_REPLAN after a pause, RUNNING on a lapsed lease) under
    a fresh lease the store mints; a declared MCP service starts with the first."""
    stored = rules.get_attempt(attempt_id)
    run = rules.get_run(stored.record.run_id).record
    claimed = rules.claim_attempt(attempt_id, stored.generation, lease_ms(run))
    if run.node_id is not None:
        # A stage continued after NEEDS_REPLAN: the store's continue moves the run and
        # the workflow; its node runs again with the new attempt.
        set_node(rules, run.node_id, NodeStatus.RUNNING, "continued")
    env = rules.get_time_envelope(run.workflow_id)
    if env.record.frozen_consumed_ms:
        rules.put_time_envelope(
            run.workflow_id, unfreeze_active_segment(env.record, rules.now_ms), env.generation
        )
    for svc in rules.list_services(run.workflow_id):
        if svc.record.status is ServiceStatus.DECLARED:
            for status in (ServiceStatus.STARTING, ServiceStatus.READY):
                svc = rules.update_service(
                    dataclasses.replace(svc.record, status=status), svc.generation
                )
    return claimed


def stop_attempt(
    rules: RoutedRules, attempt_id: AttemptID, lease_id: LeaseID | None, **changes: object
) -> Stored[AttemptRecord]:
    """The attempt's status change, under our lease. One we do not hold (an expired or
    foreign lease) is reclaimed first, in this transaction, so the write is fenced
    against whoever held it."""
    stored = rules.get_attempt(attempt_id)
    lease = stored.record.lease
    if lease is not None and (lease.lease_id != lease_id or rules.lease_expired(lease)):
        stored = claim(rules, attempt_id)
        lease = stored.record.lease
    record = dataclasses.replace(stored.record, **changes)  # type: ignore[arg-type]
    return rules.update_attempt(record, stored.generation, lease.lease_id if lease else None)


def set_run(rules: RoutedRules, run_id: RunID, status: RunStatus) -> None:
    run = rules.get_run(run_id)
    if run.record.status is not status and status in RUN_TRANSITIONS[run.record.status]:
        rules.update_run(dataclasses.replace(run.record, status=status), run.generation)


def set_node(rules: RoutedRules, node_id: object, status: NodeStatus, reason: str) -> None:
    node = rules.get_node(node_id)  # type: ignore[arg-type]
    if node.record.status is not status and status in NODE_TRANSITIONS[node.record.status]:
        rules.update_node(dataclasses.replace(node.record, status=status), node.generation, reason)


def finish_stage(
    rules: RoutedRules,
    attempt_id: AttemptID,
    lease_id: LeaseID,
    handoff_id: HandoffID,
    artifact: ArtifactRef | None,
) -> WorkflowStatus:
    """The stage's attempt, run and node succeed; then the next stage receives its
    handoff (its launch intent) or, at the last stage, the workflow succeeds."""
    attempt = stop_attempt(
        rules,
        attempt_id,
        lease_id,
        status=AttemptStatus.SUCCEEDED,
        recovery_disposition=RecoveryDisposition.NOT_NEEDED,
    ).record
    run = rules.get_run(attempt.run_id).record
    set_run(rules, run.run_id, RunStatus.SUCCEEDED)
    if run.node_id is None:
        return rules.get_workflow(run.workflow_id).record.status
    set_node(rules, run.node_id, NodeStatus.SUCCEEDED, "stage done")
    node = rules.get_node(run.node_id).record
    later = [
        n for n in rules.list_nodes(run.workflow_id) if n.record.stage_order == node.stage_order + 1
    ]
    if later:
        rules.commit_handoff(
            HandoffEnvelope(
                handoff_id=handoff_id,
                workflow_id=run.workflow_id,
                source_node_id=node.node_id,
                target_node_id=later[0].record.node_id,
                context_json=f'{{"from_stage": {node.stage_order}, "records": 1200}}',
                classification=DataClassification.INTERNAL,
                artifact_refs=(artifact,) if artifact is not None else (),
            )
        )
        return WorkflowStatus.RUNNING
    end_workflow(rules, run.workflow_id, WorkflowStatus.SUCCEEDED, None)
    return WorkflowStatus.SUCCEEDED


def end_workflow(
    rules: RoutedRules,
    workflow_id: object,
    status: WorkflowStatus,
    reason: FailureReason | None,
    run_status: RunStatus | None = None,
) -> None:
    """The workflow ends: what is still live under it ends with it (runs that never
    started are cancelled, stages not reached skipped, child batches cancelled), the
    services stop and the envelope's open segment closes, so active time stops."""
    wf = rules.get_workflow(workflow_id)  # type: ignore[arg-type]
    for run in rules.list_runs(wf.record.workflow_id):
        for attempt in rules.list_attempts(run.record.run_id):
            if not is_terminal(attempt.record.status):
                # The control plane ends it: its lease is revoked, never taken over
                # (a live lease is not the supervisor's to claim; its worker is
                # fenced at its next write).
                rules.revoke_lease(
                    attempt,
                    AttemptStatus.FAILED if reason else AttemptStatus.CANCELLED,
                    failure_reason=reason,
                    failure_scope=FailureScope.WORKFLOW,
                    recovery_disposition=RecoveryDisposition.TERMINAL,
                )
        current = rules.get_run(run.record.run_id).record.status
        if current is RunStatus.PENDING:
            set_run(rules, run.record.run_id, RunStatus.CANCELLED)
        elif not is_terminal(current):
            set_run(rules, run.record.run_id, run_status or RunStatus.FAILED)
    for node in rules.list_nodes(wf.record.workflow_id):
        waiting = node.record.status in (NodeStatus.PENDING, NodeStatus.READY)
        target = NodeStatus.SKIPPED if waiting else NodeStatus.FAILED
        set_node(rules, node.record.node_id, target, f"workflow {status.name.lower()}")
    for batch in rules.list_child_batches(wf.record.workflow_id):
        if not is_terminal(batch.record.status):
            rules.update_child_batch(
                dataclasses.replace(batch.record, status=ChildBatchStatus.CANCELLED),
                batch.generation,
            )
    stop_services(rules, wf.record.workflow_id)
    env = rules.get_time_envelope(wf.record.workflow_id)
    closed = dataclasses.replace(
        close_active_segment(env.record, rules.now_ms), attempt_lease_remaining_ms=None
    )
    if closed != env.record:
        rules.put_time_envelope(wf.record.workflow_id, closed, env.generation)
    wf = rules.get_workflow(wf.record.workflow_id)
    rules.update_workflow(
        dataclasses.replace(wf.record, status=status, terminal_reason=reason), wf.generation
    )


def stop_services(rules: RoutedRules, workflow_id: object) -> int:
    """Services on their way down (STOPPING after a cancel, or still running) reach
    STOPPED: the supervisor held their processes. Returns how many it stopped."""
    stopped = 0
    steps = {
        ServiceStatus.DECLARED: (ServiceStatus.STARTING, ServiceStatus.STOPPED),
        ServiceStatus.STARTING: (ServiceStatus.STOPPED,),
        ServiceStatus.READY: (ServiceStatus.STOPPING, ServiceStatus.STOPPED),
        ServiceStatus.UNHEALTHY: (ServiceStatus.STOPPING, ServiceStatus.STOPPED),
        ServiceStatus.FENCED: (ServiceStatus.STOPPING, ServiceStatus.STOPPED),
        ServiceStatus.STOPPING: (ServiceStatus.STOPPED,),
    }
    for svc in rules.list_services(workflow_id):  # type: ignore[arg-type]
        path = steps.get(svc.record.status, ())
        for status in path:
            svc = rules.update_service(
                dataclasses.replace(svc.record, status=status), svc.generation
            )
        stopped += bool(path)
    return stopped


def fail_attempt(
    rules: RoutedRules,
    attempt_id: AttemptID,
    lease_id: LeaseID,
    reason: FailureReason,
    scope: FailureScope,
    disposition: RecoveryDisposition,
) -> None:
    stop_attempt(
        rules,
        attempt_id,
        lease_id,
        status=AttemptStatus.FAILED,
        failure_reason=reason,
        failure_scope=scope,
        recovery_disposition=disposition,
        resume_capability=ResumeCapability.SAFE_CHECKPOINT,
    )


def fail_workflow(
    rules: RoutedRules,
    attempt_id: AttemptID,
    lease_id: LeaseID,
    reason: FailureReason,
    scope: FailureScope,
) -> None:
    """The attempt fails for good, and its workflow with it."""
    fail_attempt(rules, attempt_id, lease_id, reason, scope, RecoveryDisposition.TERMINAL)
    workflow_id = rules.get_attempt(attempt_id).record.workflow_id
    end_workflow(rules, workflow_id, WorkflowStatus.FAILED, reason)


SUPERVISOR = "supervisor:sim"


def needs_replan(
    rules: RoutedRules,
    attempt_id: AttemptID,
    lease_id: LeaseID,
    request_id: ControlRequestID,
    reason: FailureReason,
) -> None:
    """The worker finds its plan no longer fits (its input outgrew the model's
    context): the workflow must stop for an operator. The maps reach NEEDS_REPLAN only
    from PAUSED, so, in one transaction, the supervisor asks a pause of its own (in
    the control history as ``supervisor:sim``), the attempt fails resumable (its stop
    is the boundary: the store pauses and freezes the envelope), and the workflow, its
    runs and nodes move from PAUSED to NEEDS_REPLAN. An operator's continue resumes it
    from the checkpoint with a new attempt."""
    attempt = rules.get_attempt(attempt_id).record
    wf = rules.get_workflow(attempt.workflow_id)
    rules.request_control(
        ControlRequest(
            control_request_id=request_id,
            workflow_id=attempt.workflow_id,
            command=ControlCommand.PAUSE,
            expected_generation=wf.generation,
            actor_identity=SUPERVISOR,
            authority_scope=AuthorityScope.CONTROL,
            idempotency_key=f"{SUPERVISOR}/replan/{attempt_id}",
        )
    )
    fail_attempt(
        rules,
        attempt_id,
        lease_id,
        reason,
        FailureScope.MODEL_CALL,
        RecoveryDisposition.NEEDS_REPLAN,
    )
    for run in rules.list_runs(attempt.workflow_id):
        if run.record.status is RunStatus.PAUSED:
            set_run(rules, run.record.run_id, RunStatus.NEEDS_REPLAN)
    for node in rules.list_nodes(attempt.workflow_id):
        if node.record.status is NodeStatus.PAUSED:
            set_node(rules, node.record.node_id, NodeStatus.NEEDS_REPLAN, "plan no longer fits")
    wf = rules.get_workflow(attempt.workflow_id)
    if wf.record.status is WorkflowStatus.PAUSED:
        rules.update_workflow(
            dataclasses.replace(wf.record, status=WorkflowStatus.NEEDS_REPLAN), wf.generation
        )


# -- child batches ---------------------------------------------------------------------
def spawn_batch(
    rules: RoutedRules,
    parent: RunRecord,
    batch_id: ChildBatchID,
    run_ids: list[RunID],
    join: str,
) -> None:
    """The parent's fan-out: the batch as INTENT, its child runs, ALLOCATED, RUNNING."""
    if parent.node_id is None:
        raise InvalidArgument(f"run {parent.run_id} is no stage's: it cannot fan out")
    spawn = ChildSpawnRequest(
        child_package_name=CHILD_PACKAGE[0],
        child_package_version=CHILD_PACKAGE[1],
        max_fan_out=len(run_ids),
        max_concurrency=min(2, len(run_ids)),
        input_json_template='{"item": "{{index}}"}',
    )
    batch = rules.create_child_batch(
        ChildBatch(batch_id, parent.workflow_id, parent.node_id, spawn, JoinPolicy(join))
    )
    for run_id in run_ids:
        rules.create_run(
            RunRecord(
                run_id=run_id,
                workflow_id=parent.workflow_id,
                run_kind="child",
                policy_digest=parent.policy_digest,
                max_active_duration_ms=parent.max_active_duration_ms,
                max_attempt_lease_ms=parent.max_attempt_lease_ms,
                max_llm_spend_decimal=parent.max_llm_spend_decimal,
            )
        )
    for status in (ChildBatchStatus.ALLOCATED, ChildBatchStatus.RUNNING):
        batch = rules.update_child_batch(
            dataclasses.replace(batch.record, status=status, child_run_ids=tuple(run_ids)),
            batch.generation,
        )


def run_child(
    rules: RoutedRules,
    batch_id: ChildBatchID,
    run_id: RunID,
    attempt_id: AttemptID,
    result_id: ChildResultID,
    fails: bool,
) -> RunStatus:
    """One child run, start to result: attempt claimed and finished, run ended, its
    result committed to the batch."""
    run = rules.get_run(run_id).record
    rules.create_attempt(AttemptRecord(attempt_id, run_id, run.workflow_id, 1))
    lease = lease_of(claim(rules, attempt_id).record)
    status = RunStatus.FAILED if fails else RunStatus.SUCCEEDED
    changes: dict[str, object] = {"status": AttemptStatus.SUCCEEDED}
    if fails:
        changes = {
            "status": AttemptStatus.FAILED,
            "failure_reason": FailureReason.EXTERNAL_DEPENDENCY_FAILED,
            "failure_scope": FailureScope.EXTERNAL,
            "recovery_disposition": RecoveryDisposition.TERMINAL,
        }
    stop_attempt(rules, attempt_id, lease, **changes)
    set_run(rules, run_id, status)
    rules.commit_child_result(
        ChildResult(
            child_result_id=result_id,
            child_batch_id=batch_id,
            child_run_id=run_id,
            status=status,
            output_json=None if fails else f'{{"item": "{run_id[-6:]}", "rows": 40}}',
            failure_reason=FailureReason.EXTERNAL_DEPENDENCY_FAILED if fails else None,
        )
    )
    return status


def join_batch(rules: RoutedRules, batch_id: ChildBatchID, failed: bool) -> ChildBatchStatus:
    """The join: JOINING, then SUCCEEDED, or FAILED when a child failed."""
    batch = rules.get_child_batch(batch_id)
    if failed and batch.record.join_policy.mode == "all_first":
        # all_first fails the batch at its first failed child: the rest never run.
        for run_id in batch.record.child_run_ids:
            set_run(rules, run_id, RunStatus.CANCELLED)
        target = ChildBatchStatus.FAILED
        rules.update_child_batch(dataclasses.replace(batch.record, status=target), batch.generation)
        return target
    batch = rules.update_child_batch(
        dataclasses.replace(batch.record, status=ChildBatchStatus.JOINING), batch.generation
    )
    target = ChildBatchStatus.FAILED if failed else ChildBatchStatus.SUCCEEDED
    rules.update_child_batch(dataclasses.replace(batch.record, status=target), batch.generation)
    return target

"""Control on every backend: each command from each workflow status, cancel
precedence and fencing, pause boundaries, restart, continue and limit amendments."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from storage.routed import envelope as te
from storage.routed.enums import (
    AttemptStatus,
    AuthorityScope,
    ChildBatchStatus,
    ControlCommand,
    FailureReason,
    NodeStatus,
    ResumeCapability,
    ResumeReason,
    RunStatus,
    ServiceStatus,
    WorkflowStatus,
)
from storage.routed.errors import (
    AuthorityDenied,
    CASConflict,
    IdempotencyConflict,
    InvalidArgument,
    LeaseFenced,
    TransitionError,
)
from storage.routed.ids import LimitAmendmentID
from storage.routed.records import LimitAmendment
from storage.routed.rules import Admission, TransitionCommand
from storage.routed.rules import specs as S
from storage.routed.store import RoutedStore

from ..support import FakeClock
from .support import (
    _batch,
    _service,
    admit,
    alias,
    checkpoint,
    claimed,
    control,
    force,
    send,
    setup_deployment,
)
from .support import snapshot as bodies

C = ControlCommand
W = WorkflowStatus


def _expected(command: ControlCommand, status: WorkflowStatus) -> bool:
    live = status.name in {"PENDING", "RUNNING", "PAUSE_REQUESTED", "PAUSED", "NEEDS_REPLAN"}
    return {
        C.CANCEL: live,
        C.PAUSE: status is W.RUNNING,
        C.RESUME: status in (W.PAUSED, W.PAUSE_REQUESTED),
        C.RESTART: True,
        C.CONTINUE: live,
    }[command]


@pytest.mark.parametrize("command", [c for c in C if c is not C.AMEND_LIMITS], ids=lambda c: c.name)
def test_each_command_from_each_workflow_status(
    routed: RoutedStore, command: ControlCommand
) -> None:
    for status in W:
        admission = admit(routed, f"key-{command.name}-{status.name}")
        wf_id = admission.receipt.workflow_id
        wf = routed.view(lambda r, wf_id=wf_id: r.get_workflow(wf_id)).record
        routed.transact(
            lambda r, wf=wf, status=status: force(
                r, S.WORKFLOW, dataclasses.replace(wf, status=status)
            )
        )
        before = bodies(routed)
        req = control(routed, wf_id, command)
        if _expected(command, status):
            outcome = routed.transact(lambda r, req=req: r.request_control(req))
            assert outcome.result.applied, (command, status)
            assert not outcome.replay
        else:
            with pytest.raises(TransitionError):
                routed.transact(lambda r, req=req: r.request_control(req))
            assert bodies(routed) == before, (command, status)


def test_cancel_ends_everything_under_the_workflow_and_fences_the_old_lease(
    routed: RoutedStore, clock: FakeClock
) -> None:
    admission = admit(routed)
    r = admission.receipt
    attempt = claimed(routed, admission)
    lease = attempt.record.lease
    assert lease is not None
    [node] = routed.view(lambda rules: rules.list_nodes(r.workflow_id))
    routed.transact(
        lambda rules: rules.create_child_batch(_batch(r.workflow_id, node.record.node_id))
    )
    clock.advance(seconds=3)
    outcome = send(routed, control(routed, r.workflow_id, C.CANCEL))
    assert outcome.result.applied
    wf = routed.view(lambda rules: rules.get_workflow(r.workflow_id)).record
    assert wf.status is W.CANCELLED
    assert wf.terminal_reason is FailureReason.USER_CANCELLED
    assert routed.view(lambda rules: rules.get_run(r.run_id)).record.status is RunStatus.CANCELLED
    gone = routed.view(lambda r: r.get_attempt(attempt.record.attempt_id))
    assert gone.record.status is AttemptStatus.CANCELLED
    assert gone.record.lease is None
    assert {
        n.record.status for n in routed.view(lambda rules: rules.list_nodes(r.workflow_id))
    } == {NodeStatus.CANCELLED}
    assert {
        b.record.status for b in routed.view(lambda rules: rules.list_child_batches(r.workflow_id))
    } == {ChildBatchStatus.CANCELLED}
    env = routed.view(lambda rules: rules.get_time_envelope(r.workflow_id)).record
    assert env.cancellation_generation == 1
    assert env.running_segment_start_ms is None
    assert env.consumed_active_duration_ms == 3000
    desired = routed.view(lambda rules: rules.get_desired_state(r.workflow_id)).record
    assert (desired.desired_command, desired.cancel_precedence) == (C.CANCEL, True)
    # The supervisor's late write with the revoked lease is fenced, whatever it says.
    late = dataclasses.replace(attempt.record, status=AttemptStatus.SUCCEEDED)
    before = bodies(routed)
    with pytest.raises(LeaseFenced):
        routed.transact(lambda r: r.update_attempt(late, gone.generation, lease.lease_id))
    with pytest.raises(LeaseFenced):
        routed.transact(lambda r: r.save_checkpoint(checkpoint(attempt.record)))
    assert bodies(routed) == before


def test_cancel_wins_and_stays_later_pause_and_resume_are_superseded(routed: RoutedStore) -> None:
    admission = admit(routed)
    wf_id = admission.receipt.workflow_id
    claimed(routed, admission)
    send(routed, control(routed, wf_id, C.PAUSE))
    send(routed, control(routed, wf_id, C.CANCEL))
    for command in (C.PAUSE, C.RESUME):
        outcome = send(routed, control(routed, wf_id, command, key=f"late-{command.name}"))
        assert not outcome.result.applied
        assert outcome.result.detail == "superseded by cancel"
    desired = routed.view(lambda r: r.get_desired_state(wf_id)).record
    assert (desired.desired_command, desired.cancel_precedence) == (C.CANCEL, True)
    assert routed.view(lambda r: r.get_workflow(wf_id)).record.status is W.CANCELLED
    history = [
        (q.command, res.applied)
        for q, res in zip(
            routed.view(lambda r: r.list_control_requests(wf_id)),
            routed.view(lambda r: r.list_control_results(wf_id)),
            strict=True,
        )
    ]
    assert history == [(C.PAUSE, True), (C.CANCEL, True), (C.PAUSE, False), (C.RESUME, False)]


def test_control_requests_are_idempotent_per_workflow_and_key(routed: RoutedStore) -> None:
    admission = admit(routed)
    wf_id = admission.receipt.workflow_id
    claimed(routed, admission)
    req = control(routed, wf_id, C.PAUSE, key="op-1")
    first = routed.transact(lambda r: r.request_control(req))
    before = bodies(routed)
    again = routed.transact(
        lambda r: r.request_control(dataclasses.replace(req, expected_generation=999))
    )
    assert again.replay
    assert again.result == first.result
    assert bodies(routed) == before
    with pytest.raises(IdempotencyConflict):
        send(routed, control(routed, wf_id, C.CANCEL, key="op-1"))


def test_control_needs_its_authority_scope_and_the_current_generation(
    routed: RoutedStore,
) -> None:
    wf_id = admit(routed).receipt.workflow_id
    before = bodies(routed)
    for scope in (AuthorityScope.DEFAULT, AuthorityScope.AMEND_LIMITS):
        with pytest.raises(AuthorityDenied):
            send(routed, control(routed, wf_id, C.CANCEL, scope=scope))
    with pytest.raises(CASConflict):
        send(routed, dataclasses.replace(control(routed, wf_id, C.CANCEL), expected_generation=7))
    with pytest.raises(InvalidArgument):
        send(routed, control(routed, wf_id, C.AMEND_LIMITS, scope=AuthorityScope.AMEND_LIMITS))
    assert bodies(routed) == before


def _running(routed: RoutedStore) -> Admission:
    admission = admit(routed)
    claimed(routed, admission)
    return admission


def test_pause_waits_for_the_boundary_and_the_pause_is_not_charged(
    routed: RoutedStore, clock: FakeClock
) -> None:
    admission = _running(routed)
    wf_id = admission.receipt.workflow_id
    clock.advance(seconds=1)
    send(routed, control(routed, wf_id, C.PAUSE))
    assert routed.view(lambda r: r.get_workflow(wf_id)).record.status is W.PAUSE_REQUESTED
    assert (
        routed.view(lambda r: r.get_run(admission.receipt.run_id)).record.status
        is RunStatus.PAUSE_REQUESTED
    )
    clock.advance(seconds=1)  # still accruing until the boundary
    wf = routed.view(lambda r: r.get_workflow(wf_id))
    paused = routed.transact(
        lambda r: r.apply_transition(
            wf_id, wf.generation, TransitionCommand.PAUSE_BOUNDARY_REACHED, "b1"
        )
    )
    assert paused.record.status is W.PAUSED
    assert (
        routed.view(lambda r: r.get_run(admission.receipt.run_id)).record.status is RunStatus.PAUSED
    )
    env = routed.view(lambda r: r.get_time_envelope(wf_id)).record
    assert (env.consumed_active_duration_ms, env.frozen_consumed_ms) == (2000, 2000)
    # The same key again applies nothing; another command under it is a conflict.
    assert routed.transact(
        lambda r: r.apply_transition(wf_id, 1, TransitionCommand.PAUSE_BOUNDARY_REACHED, "b1")
    ) == routed.view(lambda r: r.get_workflow(wf_id))
    with pytest.raises(IdempotencyConflict):
        routed.transact(
            lambda r: r.apply_transition(
                wf_id, 1, TransitionCommand.PAUSE_BOUNDARY_UNAVAILABLE, "b1"
            )
        )
    clock.advance(seconds=3600)  # paused for an hour: not charged
    send(routed, control(routed, wf_id, C.RESUME))
    assert routed.view(lambda r: r.get_workflow(wf_id)).record.status is W.RUNNING
    clock.advance(seconds=1)
    env = routed.view(lambda r: r.get_time_envelope(wf_id)).record
    now_ms = clock() // 1_000_000
    assert te.consumed_ms(env, now_ms) == 3000
    assert env.frozen_consumed_ms == 0


def _stop(routed: RoutedStore, admission: Admission, status: AttemptStatus) -> None:
    """The supervisor's write ending the running attempt under its lease."""
    [attempt] = routed.view(lambda r: r.list_attempts(admission.receipt.run_id))
    lease = attempt.record.lease
    assert lease is not None
    stopped = dataclasses.replace(attempt.record, status=status)
    routed.transact(lambda r: r.update_attempt(stopped, attempt.generation, lease.lease_id))


def _statuses(routed: RoutedStore, admission: Admission) -> tuple[Any, ...]:
    r = admission.receipt
    nodes = {n.record.status for n in routed.view(lambda rules: rules.list_nodes(r.workflow_id))}
    return (
        routed.view(lambda rules: rules.get_workflow(r.workflow_id)).record.status,
        routed.view(lambda rules: rules.get_run(r.run_id)).record.status,
        nodes,
    )


@pytest.mark.parametrize("status", [AttemptStatus.NEEDS_REPLAN, AttemptStatus.SUCCEEDED])
def test_the_store_pauses_when_the_last_running_attempt_stops_under_a_pause(
    routed: RoutedStore, clock: FakeClock, status: AttemptStatus
) -> None:
    admission = _running(routed)
    wf_id = admission.receipt.workflow_id
    clock.advance(seconds=1)
    send(routed, control(routed, wf_id, C.PAUSE))
    clock.advance(seconds=1)

    _stop(routed, admission, status)  # the boundary: nothing of the workflow runs now

    assert _statuses(routed, admission) == (W.PAUSED, RunStatus.PAUSED, {NodeStatus.PAUSED})
    env = routed.view(lambda r: r.get_time_envelope(wf_id)).record
    assert (env.consumed_active_duration_ms, env.frozen_consumed_ms) == (2000, 2000)
    clock.advance(seconds=60)
    assert (
        te.consumed_ms(
            routed.view(lambda r: r.get_time_envelope(wf_id)).record, clock() // 1_000_000
        )
        == 2000
    )


def test_a_pause_asked_while_nothing_runs_is_at_its_boundary_at_once(
    routed: RoutedStore,
) -> None:
    admission = _running(routed)
    wf_id = admission.receipt.workflow_id
    _stop(routed, admission, AttemptStatus.NEEDS_REPLAN)  # no pause asked: nothing moves
    assert _statuses(routed, admission)[:2] == (W.RUNNING, RunStatus.RUNNING)

    outcome = send(routed, control(routed, wf_id, C.PAUSE))

    assert (outcome.result.applied, outcome.result.detail) == (
        True,
        "paused: no attempt was running",
    )
    assert _statuses(routed, admission) == (W.PAUSED, RunStatus.PAUSED, {NodeStatus.PAUSED})
    assert routed.view(lambda r: r.get_time_envelope(wf_id)).record.running_segment_start_ms is None


def test_a_reconciled_attempt_under_a_pause_reaches_the_boundary(routed: RoutedStore) -> None:
    admission = _running(routed)
    send(routed, control(routed, admission.receipt.workflow_id, C.PAUSE))

    routed.transact(lambda r: r.reconcile_interrupted(admission.receipt.run_id))

    assert _statuses(routed, admission)[:2] == (W.PAUSED, RunStatus.PAUSED)


def test_an_attempt_stopping_pauses_nothing_once_the_pause_was_withdrawn(
    routed: RoutedStore,
) -> None:
    admission = _running(routed)
    wf_id = admission.receipt.workflow_id
    send(routed, control(routed, wf_id, C.PAUSE))
    send(routed, control(routed, wf_id, C.RESUME))

    _stop(routed, admission, AttemptStatus.NEEDS_REPLAN)

    assert _statuses(routed, admission)[:2] == (W.RUNNING, RunStatus.RUNNING)


def test_no_reachable_pause_boundary_fails_the_run(routed: RoutedStore) -> None:
    admission = _running(routed)
    wf_id = admission.receipt.workflow_id
    send(routed, control(routed, wf_id, C.PAUSE))
    wf = routed.view(lambda r: r.get_workflow(wf_id))
    failed = routed.transact(
        lambda r: r.apply_transition(
            wf_id, wf.generation, TransitionCommand.PAUSE_BOUNDARY_UNAVAILABLE, "b1"
        )
    )
    assert failed.record.status is W.FAILED
    assert failed.record.terminal_reason is FailureReason.PAUSE_BOUNDARY_UNAVAILABLE
    assert (
        routed.view(lambda r: r.get_run(admission.receipt.run_id)).record.status is RunStatus.FAILED
    )
    [attempt] = routed.view(lambda r: r.list_attempts(admission.receipt.run_id))
    assert attempt.record.failure_reason is FailureReason.PAUSE_BOUNDARY_UNAVAILABLE
    assert attempt.record.lease is None


def test_restart_creates_a_new_workflow_from_the_source_receipt(routed: RoutedStore) -> None:
    admission = _running(routed)
    source = admission.receipt
    send(routed, control(routed, source.workflow_id, C.CANCEL))
    outcome = send(routed, control(routed, source.workflow_id, C.RESTART))
    new_wf = outcome.result.new_workflow_id
    assert new_wf is not None
    assert new_wf != source.workflow_id
    wf = routed.view(lambda r: r.get_workflow(new_wf)).record
    assert wf.deployment_id == source.resolved_deployment_id  # exact by default
    assert wf.status is W.PENDING
    provenance = routed.view(lambda r: r.get_restart_provenance(new_wf))
    assert provenance.source_workflow_id == source.workflow_id
    assert provenance.source_run_id == source.run_id
    assert provenance.source_invocation_id == source.invocation_id
    assert (
        routed.view(lambda r: r.get_run(outcome.result.new_run_id)).record.status
        is RunStatus.PENDING
    )  # type: ignore[arg-type]
    # Idempotent per key: the same request again creates nothing more.
    again = send(
        routed, control(routed, source.workflow_id, C.RESTART, key=outcome.request.idempotency_key)
    )
    assert again.replay
    assert len(routed.view(lambda r: r.list_workflows())) == 2


def test_restart_through_an_alias_takes_its_current_target(routed: RoutedStore) -> None:
    v1 = setup_deployment(routed, version="1.0.0")
    v2 = setup_deployment(routed, version="2.0.0")
    routed.transact(lambda r: r.compare_and_swap_alias(alias("prod", v1.record)))
    from .support import request

    source = routed.transact(lambda r: r.admit_invocation(request("prod"), v1.generation)).receipt
    routed.transact(lambda r: r.compare_and_swap_alias(alias("prod", v2.record, 1)))
    outcome = send(
        routed, control(routed, source.workflow_id, C.RESTART, target_deployment_ref="prod")
    )
    assert outcome.result.new_workflow_id is not None
    wf = routed.view(lambda r: r.get_workflow(outcome.result.new_workflow_id)).record
    assert wf.deployment_id == v2.record.deployment_id


def test_continue_adds_an_attempt_resuming_from_the_latest_valid_checkpoint(
    routed: RoutedStore,
) -> None:
    admission = _running(routed)
    r = admission.receipt
    [first] = routed.view(lambda rules: rules.list_attempts(r.run_id))
    lease = first.record.lease
    assert lease is not None
    cp = checkpoint(first.record, 2)
    routed.transact(lambda r: r.save_checkpoint(cp))
    routed.transact(
        lambda r: r.update_attempt(
            dataclasses.replace(
                first.record,
                status=AttemptStatus.FAILED,
                failure_reason=FailureReason.AGENT_EXCEPTION,
                resume_capability=ResumeCapability.SAFE_CHECKPOINT,
            ),
            first.generation,
            lease.lease_id,
        )
    )
    outcome = send(routed, control(routed, r.workflow_id, C.CONTINUE))
    result = outcome.result
    assert result.resume_reason is ResumeReason.FAILURE_CONTINUATION
    assert result.resume_checkpoint_id == cp.checkpoint_id
    second = routed.view(lambda r: r.get_attempt(result.new_attempt_id))  # type: ignore[arg-type]
    assert (second.record.attempt_number, second.record.status) == (2, AttemptStatus.PENDING)
    with pytest.raises(InvalidArgument):  # a live attempt: nothing to continue
        send(routed, control(routed, r.workflow_id, C.CONTINUE, key="again"))


def _amend(wf_id: Any, generation: int, key: str = "a1", **values: Any) -> LimitAmendment:
    return LimitAmendment(
        amendment_id=LimitAmendmentID.new(),
        workflow_id=wf_id,
        expected_authority_generation=generation,
        reason="more time",
        actor_identity="admin",
        idempotency_key=key,
        **values,
    )


def test_amendments_are_increase_only_cas_on_authority_and_record_before_after(
    routed: RoutedStore, clock: FakeClock
) -> None:
    admission = _running(routed)
    wf_id = admission.receipt.workflow_id
    clock.advance(seconds=5)
    scope = AuthorityScope.AMEND_LIMITS
    with pytest.raises(AuthorityDenied):
        routed.transact(
            lambda r: r.append_limit_amendment(
                wf_id,
                1,
                _amend(wf_id, 1, new_max_active_duration_ms=7_200_000),
                AuthorityScope.CONTROL,
            )
        )
    before = bodies(routed)
    for bad in (
        {"new_max_active_duration_ms": 1},
        {"new_current_attempt_lease_ms": 1},
        {"new_max_llm_spend_decimal": "4.99"},
        {"new_max_llm_spend_decimal": "NaN"},
        {},
    ):
        with pytest.raises(InvalidArgument):
            routed.transact(
                lambda r, bad=bad: r.append_limit_amendment(
                    wf_id, 1, _amend(wf_id, 1, **bad), scope
                )
            )
    with pytest.raises(CASConflict):
        routed.transact(
            lambda r: r.append_limit_amendment(
                wf_id, 2, _amend(wf_id, 2, new_max_active_duration_ms=7_200_000), scope
            )
        )
    assert bodies(routed) == before
    done = routed.transact(
        lambda r: r.append_limit_amendment(
            wf_id,
            1,
            _amend(
                wf_id, 1, new_max_active_duration_ms=7_200_000, new_max_llm_spend_decimal="9.50"
            ),
            scope,
        )
    )
    assert (done.before_max_active_duration_ms, done.after_max_active_duration_ms) == (
        3_600_000,
        7_200_000,
    )
    assert (done.before_max_llm_spend_decimal, done.after_max_llm_spend_decimal) == ("5.00", "9.50")
    assert done.after_max_attempt_lease_ms == done.before_max_attempt_lease_ms
    assert done.new_authority_generation == 2
    assert done.consumed_active_time_ms == 5000
    wf = routed.view(lambda r: r.get_workflow(wf_id)).record
    assert (wf.authority_generation, wf.max_active_duration_ms) == (2, 7_200_000)
    assert (
        routed.view(lambda r: r.get_run(admission.receipt.run_id)).record.max_active_duration_ms
        == 7_200_000
    )
    env = routed.view(lambda r: r.get_time_envelope(wf_id)).record
    assert (env.current_max_active_duration_ms, env.lifecycle_authority_generation) == (
        7_200_000,
        2,
    )
    assert te.consumed_ms(env, clock() // 1_000_000) == 5000  # amending loses no time
    # Replay by key returns the amendment; the same key with other values conflicts.
    assert (
        routed.transact(
            lambda r: r.append_limit_amendment(
                wf_id,
                1,
                _amend(
                    wf_id, 1, new_max_active_duration_ms=7_200_000, new_max_llm_spend_decimal="9.50"
                ),
                scope,
            )
        )
        == done
    )
    with pytest.raises(IdempotencyConflict):
        routed.transact(
            lambda r: r.append_limit_amendment(
                wf_id, 2, _amend(wf_id, 2, new_max_active_duration_ms=9_000_000), scope
            )
        )
    assert routed.view(lambda r: r.list_limit_amendments(wf_id)) == [done]


_PATHS = {
    "DECLARED": (),
    "STARTING": ("STARTING",),
    "READY": ("STARTING", "READY"),
    "UNHEALTHY": ("STARTING", "READY", "UNHEALTHY"),
    "FENCED": ("STARTING", "READY", "UNHEALTHY", "FENCED"),
    "STOPPING": ("STARTING", "READY", "STOPPING"),
    "STOPPED": ("STARTING", "STOPPED"),
    "FAILED": ("FAILED",),
}
# The services' map has no Cancelled: what a cancel leaves each status as.
_RETIRED = {
    "DECLARED": "STOPPED",
    "STARTING": "STOPPED",
    "READY": "STOPPING",
    "UNHEALTHY": "STOPPING",
    "FENCED": "STOPPING",
    "STOPPING": "STOPPING",
    "STOPPED": "STOPPED",
    "FAILED": "FAILED",
}


def _services_in_every_status(routed: RoutedStore, wf_id: Any) -> dict[str, Any]:
    made = {}
    for status, path in _PATHS.items():
        svc = routed.transact(
            lambda r, status=status: r.register_service(
                dataclasses.replace(_service(wf_id), service_name=f"svc-{status.lower()}")
            )
        )
        for step in path:
            moved = dataclasses.replace(svc.record, status=ServiceStatus[step])
            svc = routed.transact(
                lambda r, moved=moved, svc=svc: r.update_service(moved, svc.generation)
            )
        made[status] = svc.record.service_id
    return made


@pytest.mark.parametrize("how", ["cancel", "no-pause-boundary"])
def test_an_ending_workflow_retires_its_services_through_their_map(
    routed: RoutedStore, how: str
) -> None:
    admission = _running(routed)
    wf_id = admission.receipt.workflow_id
    made = _services_in_every_status(routed, wf_id)

    if how == "cancel":
        send(routed, control(routed, wf_id, C.CANCEL))
    else:
        send(routed, control(routed, wf_id, C.PAUSE))
        wf = routed.view(lambda r: r.get_workflow(wf_id))
        routed.transact(
            lambda r: r.apply_transition(
                wf_id, wf.generation, TransitionCommand.PAUSE_BOUNDARY_UNAVAILABLE, "b1"
            )
        )

    now = {
        s.record.service_id: s.record.status.name
        for s in routed.view(lambda r: r.list_services(wf_id))
    }
    assert {status: now[made[status]] for status in made} == _RETIRED
    # The supervisor, which holds the process, records the stop once it is done.
    stopping = routed.transact(lambda r: r.get_service(made["READY"]))
    done = dataclasses.replace(stopping.record, status=ServiceStatus.STOPPED)
    assert (
        routed.transact(lambda r: r.update_service(done, stopping.generation)).record.status
        is ServiceStatus.STOPPED
    )

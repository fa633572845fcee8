"""What a routed-run action will do, read before the operator confirms it: the
workflow's transition and everything under it that moves (runs, attempts and their
leases, nodes, child batches, services, the time envelope), from one snapshot.

The targets are worked out from the spec's transition maps exactly as
``storage.routed.rules.control`` applies them (a thing moves only where its map
allows it, and pause/resume only move what is running/paused), so the page never
promises a change the store would not make.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum

from console.actions.routed import RoutedAction
from storage.routed.enums import (
    AttemptStatus,
    ChildBatchStatus,
    DeploymentStatus,
    NodeStatus,
    ResumeCapability,
    RunStatus,
    ServiceStatus,
    WorkflowStatus,
)
from storage.routed.envelope import TimeEnvelope, active_time_remaining_ms, consumed_ms
from storage.routed.errors import RoutedNotFound
from storage.routed.ids import CheckpointID, DeploymentID, WorkflowID
from storage.routed.records import (
    AliasRecord,
    AttemptRecord,
    DeploymentRecord,
    DesiredState,
    RunRecord,
    Stored,
    WorkflowRecord,
)
from storage.routed.rules import RoutedRules
from storage.routed.store import RoutedStore
from storage.routed.transitions import MAPS, is_terminal

W = WorkflowStatus
_LIVE = frozenset(s for s in AttemptStatus if not is_terminal(s))


def _allows(status: Enum, to: Enum) -> bool:
    for kind, table in MAPS.values():
        if isinstance(status, kind):
            return status is not to and to in table.get(status, frozenset())
    return False


# The statuses a continue leaves running: RUNNING stays (its last attempt ended and
# the supervisor has not finished the workflow), PAUSED and NEEDS_REPLAN move to
# RUNNING by the map. Not PENDING (nothing ran yet: the supervisor claims the first
# attempt) nor PAUSE_REQUESTED (a pause is under way; its attempt runs to the boundary).
CONTINUED_FROM = frozenset({W.RUNNING, W.PAUSED, W.NEEDS_REPLAN})


def allowed_actions(
    status: WorkflowStatus, *, cancel_desired: bool = False, live_attempt: bool = False
) -> tuple[RoutedAction, ...]:
    """The workflow actions its status allows, by the workflow map. Restart is offered
    for a finished workflow only: on a live one it would start a second run of the
    same input beside it. Continue is offered from ``CONTINUED_FROM`` only, and not
    while an attempt is ``live_attempt`` (not terminal; the store refuses it then;
    ``Preview`` checks again and names the attempt)."""
    found: list[RoutedAction] = []
    if status is W.RUNNING and not cancel_desired:
        found.append(RoutedAction.PAUSE)
    paused = status in (W.PAUSED, W.PAUSE_REQUESTED) and _allows(status, W.RUNNING)
    if paused and not cancel_desired:
        found.append(RoutedAction.RESUME)
    if status in CONTINUED_FROM and not live_attempt:
        found.append(RoutedAction.CONTINUE)
    if not is_terminal(status):
        found.append(RoutedAction.AMEND_LIMITS)
    if _allows(status, W.CANCELLED):
        found.append(RoutedAction.CANCEL)
    if is_terminal(status):
        found.append(RoutedAction.RESTART)
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Touch:
    """One thing the action touches: what it is, its ID, its status now and after."""

    kind: str
    ident: str
    now: str
    after: str
    note: str = ""


@dataclass(frozen=True)
class Preview:
    action: RoutedAction
    workflow: Stored[WorkflowRecord]
    deployment: DeploymentRecord
    envelope: TimeEnvelope
    now_ms: int
    desired: DesiredState | None
    touches: list[Touch]
    transition: str
    refusal: str = ""
    next_attempt: int = 0
    checkpoint: CheckpointID | None = None
    # Restart: the aliases offered (those pointing at a compatible deployment) and
    # each one left out with why (alias name, reason).
    aliases: list[Stored[AliasRecord]] = field(default_factory=list)
    absent_aliases: list[tuple[str, str]] = field(default_factory=list)

    @property
    def consumed_ms(self) -> int:
        return consumed_ms(self.envelope, self.now_ms)

    @property
    def remaining_ms(self) -> int:
        return active_time_remaining_ms(self.envelope, self.now_ms)


_TARGETS: dict[RoutedAction, tuple[RunStatus, NodeStatus, ChildBatchStatus, frozenset[str]]] = {
    RoutedAction.PAUSE: (
        RunStatus.PAUSE_REQUESTED,
        NodeStatus.PAUSE_REQUESTED,
        ChildBatchStatus.PAUSE_REQUESTED,
        frozenset({"RUNNING"}),
    ),
    RoutedAction.RESUME: (
        RunStatus.RUNNING,
        NodeStatus.RUNNING,
        ChildBatchStatus.RUNNING,
        frozenset({"PAUSED", "PAUSE_REQUESTED"}),
    ),
    RoutedAction.CANCEL: (
        RunStatus.CANCELLED,
        NodeStatus.CANCELLED,
        ChildBatchStatus.CANCELLED,
        frozenset(),  # empty: everything the map lets reach Cancelled
    ),
}
_WORKFLOW_TO = {
    RoutedAction.PAUSE: W.PAUSE_REQUESTED,
    RoutedAction.RESUME: W.RUNNING,
    RoutedAction.CANCEL: W.CANCELLED,
}


def read_preview(routed: RoutedStore, action: RoutedAction, workflow_id: str) -> Preview:
    """The preview of ``action`` on the workflow, from one snapshot."""
    wf_id = WorkflowID.parse(workflow_id)
    return routed.view(lambda r: _preview(r, action, wf_id))


def _preview(r: RoutedRules, action: RoutedAction, wf_id: WorkflowID) -> Preview:
    wf = r.get_workflow(wf_id)
    status = wf.record.status
    try:
        desired: DesiredState | None = r.get_desired_state(wf_id).record
    except RoutedNotFound:
        desired = None
    cancel_desired = desired is not None and desired.cancel_precedence
    runs = r.list_runs(wf_id)
    # One statement for every run's attempts: the confirmation's cost does not grow
    # with a pipeline's stages (pinned in tests/console/test_routed_control_views.py).
    attempts = r.attempts_of_runs([run.record.run_id for run in runs])
    live = [a.record for a in attempts if a.record.status in _LIVE]
    touches = _touches(r, action, wf_id, runs, live)
    refusal = ""
    if action not in allowed_actions(status, cancel_desired=cancel_desired):
        refusal = f"the workflow is {status.name}"
        if cancel_desired and action in (RoutedAction.PAUSE, RoutedAction.RESUME):
            refusal += " and a cancel has precedence"
    to = _WORKFLOW_TO.get(action)
    transition = f"{status.name} -> {to.name}" if to is not None else ""
    preview = Preview(
        action=action,
        workflow=wf,
        deployment=r.get_deployment(wf.record.deployment_id).record,
        envelope=r.get_time_envelope(wf_id).record,
        now_ms=r.now_ms,
        desired=desired,
        touches=touches,
        transition=transition,
        refusal=refusal,
    )
    if action is RoutedAction.CONTINUE:
        return _continue(r, preview, wf.record, live)
    if action is RoutedAction.RESTART:
        offered, absent = restart_aliases(r, preview.deployment)
        return _replace(
            preview, aliases=offered, absent_aliases=absent, transition="a new workflow"
        )
    return preview


def restart_aliases(
    r: RoutedRules, own: DeploymentRecord
) -> tuple[list[Stored[AliasRecord]], list[tuple[str, str]]]:
    """The aliases a restart of a workflow that ran on ``own`` may use, and the others
    with why not. Compatible is another deployment of the same package (the input
    was written for that package; an alias of another one, say the summariser's for
    a failed fan-out, would run it on foreign input), and active (the store refuses
    to admit on an inactive one). One read per distinct target."""
    offered: list[Stored[AliasRecord]] = []
    absent: list[tuple[str, str]] = []
    targets: dict[str, DeploymentRecord | None] = {}
    for stored in r.list_aliases():
        alias = stored.record
        target_id = alias.target_deployment_id
        if target_id not in targets:
            targets[target_id] = _optional_deployment(r, target_id)
        dep = targets[target_id]
        if dep is None:
            absent.append((alias.alias, f"its target {target_id} is not a deployment"))
        elif dep.package_name != own.package_name:
            absent.append(
                (
                    alias.alias,
                    f"points at {dep.package_name}@{dep.package_version}, "
                    f"another package than {own.package_name}",
                )
            )
        elif dep.status is not DeploymentStatus.ACTIVE:
            absent.append(
                (
                    alias.alias,
                    f"points at {dep.package_name}@{dep.package_version}, "
                    f"which is {dep.status.name.lower()}",
                )
            )
        else:
            offered.append(stored)
    return offered, absent


def _optional_deployment(r: RoutedRules, deployment_id: DeploymentID) -> DeploymentRecord | None:
    try:
        return r.get_deployment(deployment_id).record
    except RoutedNotFound:
        return None


def _replace(preview: Preview, **changes: object) -> Preview:
    return dataclasses.replace(preview, **changes)  # type: ignore[arg-type]


def _continue(
    r: RoutedRules, preview: Preview, wf: WorkflowRecord, live: list[AttemptRecord]
) -> Preview:
    run_id = r.get_invocation(wf.invocation_id).run_id
    attempts = r.list_attempts(run_id)
    if live and not preview.refusal:
        return _replace(preview, refusal=f"attempt {live[0].attempt_id} is still live")
    checkpoint: CheckpointID | None = None
    last = attempts[-1].record if attempts else None
    if last is not None and last.resume_capability is ResumeCapability.SAFE_CHECKPOINT:
        try:
            checkpoint = r.get_latest_checkpoint(last.attempt_id).checkpoint_id
        except RoutedNotFound:
            checkpoint = None  # the store starts over too
    touches = [Touch("attempt", "(new)", "-", AttemptStatus.PENDING.name, f"run {run_id}")]
    return _replace(
        preview,
        next_attempt=len(attempts) + 1,
        checkpoint=checkpoint,
        touches=touches,
        transition=f"{wf.status.name} -> RUNNING" if wf.status is not W.RUNNING else "",
    )


def _touches(
    r: RoutedRules,
    action: RoutedAction,
    wf_id: WorkflowID,
    runs: list[Stored[RunRecord]],
    live: list[AttemptRecord],
) -> list[Touch]:
    spec = _TARGETS.get(action)
    if spec is None:
        return []
    run_to, node_to, batch_to, when = spec

    def moves(status: Enum, to: Enum) -> bool:
        return (not when or status.name in when) and _allows(status, to)

    found: list[Touch] = []
    for attempt in live:
        lease = attempt.lease
        held = f"lease {lease.lease_id}" if lease else "no lease"
        if action is RoutedAction.CANCEL:
            found.append(
                Touch(
                    "attempt",
                    attempt.attempt_id,
                    attempt.status.name,
                    AttemptStatus.CANCELLED.name,
                    f"{held} revoked: a late write with it is fenced",
                )
            )
        elif action is RoutedAction.PAUSE and attempt.status is AttemptStatus.RUNNING:
            found.append(
                Touch(
                    "attempt",
                    attempt.attempt_id,
                    attempt.status.name,
                    attempt.status.name,
                    f"runs on to its pause boundary, keeping {held}",
                )
            )
    for run in runs:
        if moves(run.record.status, run_to):
            found.append(Touch("run", run.record.run_id, run.record.status.name, run_to.name))
    for node in r.list_nodes(wf_id):
        if moves(node.record.status, node_to):
            found.append(Touch("node", node.record.node_id, node.record.status.name, node_to.name))
    for batch in r.list_child_batches(wf_id):
        if moves(batch.record.status, batch_to):
            found.append(
                Touch(
                    "child batch",
                    batch.record.child_batch_id,
                    batch.record.status.name,
                    batch_to.name,
                )
            )
    if action is RoutedAction.CANCEL:
        for svc in r.list_services(wf_id):
            status = svc.record.status
            if not is_terminal(status) and status is not ServiceStatus.STOPPING:
                # Never started: stopped at once; running: stopping, until its process ends.
                after = "STOPPED" if status.name in ("DECLARED", "STARTING") else "STOPPING"
                found.append(Touch("service", svc.record.service_id, status.name, after))
    return found

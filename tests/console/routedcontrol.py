"""The action tests' view of the routed pages' factories (``routedfactories``):
workflows in the states an operator acts on, built through ``RoutedStore``'s public
API the way the supervisor would, plus the one step those factories leave out (the
supervisor reporting the pause boundary)."""

from __future__ import annotations

from typing import Any

from storage.routed.enums import AttemptStatus
from storage.routed.records import AttemptRecord, Stored
from storage.routed.rules import Admission, TransitionCommand
from tests.console import routedfactories as rf

routed = rf.routed


def admitted(key: str = "", version: str = "1.0.0") -> Admission:
    """A PENDING workflow of a fresh deployment (no attempt claimed yet)."""
    return rf.invoke(rf.deployment(version=version).deployment_id, key=key)


def running(key: str = "") -> tuple[Admission, Stored[AttemptRecord]]:
    """A RUNNING workflow whose first attempt holds a lease."""
    return rf.running(key=key)


def end_attempt(
    attempt: Stored[AttemptRecord], status: AttemptStatus, **changes: Any
) -> Stored[AttemptRecord]:
    """The supervisor's write as the attempt stops (its lease let go)."""
    if "resume_capability" in changes:
        changes["resume"] = changes.pop("resume_capability")
    return rf.end_attempt(attempt, status, **changes)


def reach_pause_boundary(workflow_id: str, key: str = "boundary-1") -> None:
    """The supervisor reports the pause boundary (its attempt at a safe point)."""
    store = routed()
    wf = store.view(lambda r: r.get_workflow(workflow_id))  # type: ignore[arg-type]
    store.transact(
        lambda r: r.apply_transition(
            wf.record.workflow_id, wf.generation, TransitionCommand.PAUSE_BOUNDARY_REACHED, key
        )
    )


def alias_to(name: str, admission: Admission) -> None:
    dep = routed().view(lambda r: r.get_deployment(admission.receipt.resolved_deployment_id)).record
    rf.alias(name, dep)

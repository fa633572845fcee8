"""Routed-run fixtures for the action tests: workflows in the states an operator acts
on, built through ``RoutedStore``'s public API the way the supervisor would (admit,
claim under a lease, end an attempt, report the pause boundary)."""

from __future__ import annotations

import dataclasses
from typing import Any

from storage.default import default_routed_store
from storage.routed.enums import AttemptStatus, FailureReason, FailureScope
from storage.routed.records import AttemptRecord, Stored
from storage.routed.rules import Admission, TransitionCommand
from storage.routed.store import RoutedStore
from tests.storage.routed.support import LEASE_MS, alias, claimed, request, setup_deployment


def routed() -> RoutedStore:
    return default_routed_store()


def admitted(key: str = "key-1", version: str = "1.0.0") -> Admission:
    store = routed()
    dep = setup_deployment(store, version=version)
    return store.admit_invocation(request(dep.record.deployment_id, key), dep.generation)


def running(key: str = "key-1") -> tuple[Admission, Stored[AttemptRecord]]:
    """A RUNNING workflow whose first attempt holds a lease."""
    admission = admitted(key)
    return admission, claimed(routed(), admission)


def end_attempt(
    attempt: Stored[AttemptRecord], status: AttemptStatus, **changes: Any
) -> Stored[AttemptRecord]:
    """The supervisor's write as the attempt stops (its lease let go)."""
    record = attempt.record
    lease = record.lease.lease_id if record.lease else None
    failed = status is AttemptStatus.FAILED
    moved = dataclasses.replace(
        record,
        status=status,
        failure_reason=FailureReason.MODEL_TIMEOUT if failed else None,
        failure_scope=FailureScope.WORKER if failed else None,
        **changes,
    )
    return routed().update_attempt(moved, attempt.generation, lease)


def reach_pause_boundary(workflow_id: str, key: str = "boundary-1") -> None:
    """The supervisor reports the pause boundary (its attempt at a safe point)."""
    store = routed()
    wf = store.get_workflow(workflow_id)  # type: ignore[arg-type]
    store.apply_transition(
        wf.record.workflow_id, wf.generation, TransitionCommand.PAUSE_BOUNDARY_REACHED, key
    )


def alias_to(name: str, admission: Admission) -> None:
    store = routed()
    dep = store.get_deployment(admission.receipt.resolved_deployment_id).record
    store.compare_and_swap_alias(alias(name, dep))


__all__ = ["LEASE_MS", "admitted", "alias_to", "end_attempt", "reach_pause_boundary", "running"]

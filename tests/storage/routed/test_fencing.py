"""Fencing and the time envelope's authority on every backend (issue 33, storage):
a paused workflow accrues no active time, a renewal keeps under the attempt-lease
ceiling, a live lease is never taken by a second claim, an attempt runs only under a
lease the store minted, and a fenced or cancelled attempt's artifacts are refused.
The readings are written down in ``storage/routed/README.md`` ("Readings")."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import pytest

from storage.routed.enums import AttemptStatus, ControlCommand, WorkflowStatus
from storage.routed.envelope import FakeClock as TwoAxes
from storage.routed.errors import InvalidArgument, LeaseFenced, TransitionError
from storage.routed.records import ArtifactMetadata, AttemptRecord
from storage.routed.store import RoutedStore
from storage.routed.workspace import artifact_id_for

from ..support import FakeClock
from .support import LEASE_MS, admit, claimed, control, first_attempt, send, snapshot

SECOND = 1_000_000_000


@pytest.fixture
def axes(clock: FakeClock) -> TwoAxes:
    return TwoAxes(wall=clock())


@pytest.fixture
def routed(store: Any, axes: TwoAxes) -> RoutedStore:
    return RoutedStore(store, clock=axes, monotonic=axes.now_monotonic)


def _paused(routed: RoutedStore, axes: TwoAxes) -> tuple[Any, AttemptRecord, int]:
    """Claimed, run 1 s, pause requested, the attempt stopped at the boundary
    (NEEDS_REPLAN): the workflow is PAUSED."""
    admission = admit(routed)
    receipt = admission.receipt
    running = claimed(routed, admission)
    axes.advance(SECOND)
    send(routed, control(routed, receipt.workflow_id, ControlCommand.PAUSE))
    current = routed.view(lambda r: r.get_attempt(running.record.attempt_id))
    lease = running.record.lease
    assert lease is not None
    stopped = routed.transact(
        lambda r: r.update_attempt(
            dataclasses.replace(current.record, status=AttemptStatus.NEEDS_REPLAN),
            current.generation,
            lease.lease_id,
        )
    )
    assert (
        routed.view(lambda r: r.get_workflow(receipt.workflow_id)).record.status
        is WorkflowStatus.PAUSED
    )
    return receipt, stopped.record, stopped.generation


def test_a_paused_workflow_refuses_a_claim_and_accrues_no_active_time(
    routed: RoutedStore, axes: TwoAxes
) -> None:
    receipt, attempt, generation = _paused(routed, axes)
    axes.advance(20 * SECOND)
    before = snapshot(routed)
    with pytest.raises(TransitionError, match="PAUSED"):
        routed.transact(lambda r: r.claim_attempt(attempt.attempt_id, generation, LEASE_MS))
    assert snapshot(routed) == before
    env = routed.view(lambda r: r.get_time_envelope(receipt.workflow_id)).record
    assert (env.consumed_active_duration_ms, env.running_segment_start_ms) == (1_000, None)
    # Resumed, it claims again and accrues from the resume on.
    send(routed, control(routed, receipt.workflow_id, ControlCommand.RESUME))
    routed.transact(lambda r: r.claim_attempt(attempt.attempt_id, generation, LEASE_MS))
    axes.advance(2 * SECOND)
    send(routed, control(routed, receipt.workflow_id, ControlCommand.CANCEL))
    env = routed.view(lambda r: r.get_time_envelope(receipt.workflow_id)).record
    assert env.consumed_active_duration_ms == 3_000


def test_a_claim_is_refused_while_pause_is_the_desired_state(routed: RoutedStore) -> None:
    admission = admit(routed)
    receipt = admission.receipt
    created = first_attempt(routed, admission)
    # A PENDING workflow cannot be paused (only RUNNING can): desire it past the map,
    # as a supervisor's pause of the workflow before its first claim would.
    pause = control(routed, receipt.workflow_id, ControlCommand.PAUSE)
    routed.transact(lambda r: r._desire(pause, None))
    with pytest.raises(TransitionError, match="desired to pause"):
        routed.transact(
            lambda r: r.claim_attempt(created.record.attempt_id, created.generation, LEASE_MS)
        )


def test_a_renewal_over_the_attempt_lease_ceiling_is_refused(routed: RoutedStore) -> None:
    stored = claimed(routed, admit(routed))
    lease = stored.record.lease
    assert lease is not None
    before = snapshot(routed)
    with pytest.raises(InvalidArgument, match="ceiling"):
        routed.transact(
            lambda r: r.renew_lease(stored.record.attempt_id, lease.lease_id, 30_000_000)
        )
    with pytest.raises(InvalidArgument, match="ceiling"):
        routed.transact(
            lambda r: r.renew_lease(stored.record.attempt_id, lease.lease_id, LEASE_MS + 1)
        )
    assert snapshot(routed) == before
    assert routed.transact(
        lambda r: r.renew_lease(stored.record.attempt_id, lease.lease_id, LEASE_MS)
    ).record.lease


def test_a_second_claim_of_a_live_lease_is_refused_until_it_expires(
    routed: RoutedStore, axes: TwoAxes
) -> None:
    stored = claimed(routed, admit(routed))
    lease = stored.record.lease
    assert lease is not None
    before = snapshot(routed)
    with pytest.raises(TransitionError, match="live lease"):
        routed.transact(
            lambda r: r.claim_attempt(stored.record.attempt_id, stored.generation, LEASE_MS)
        )
    assert snapshot(routed) == before
    axes.advance_monotonic(LEASE_MS * 1_000_000)  # expired: a claim takes it over
    taken = routed.transact(
        lambda r: r.claim_attempt(stored.record.attempt_id, stored.generation, LEASE_MS)
    )
    assert taken.record.lease is not None
    assert taken.record.lease.lease_id != lease.lease_id
    with pytest.raises(LeaseFenced):  # the old holder is fenced
        routed.transact(lambda r: r.update_attempt(taken.record, taken.generation, lease.lease_id))


def test_an_attempt_runs_only_under_a_lease_the_store_minted(routed: RoutedStore) -> None:
    created = first_attempt(routed, admit(routed))
    before = snapshot(routed)
    running = dataclasses.replace(created.record, status=AttemptStatus.RUNNING)
    with pytest.raises(LeaseFenced, match="holds no lease"):
        routed.transact(lambda r: r.update_attempt(running, created.generation, None))
    assert snapshot(routed) == before
    assert (
        routed.view(lambda r: r.get_attempt(created.record.attempt_id)).record.status
        is AttemptStatus.PENDING
    )


def _artifact(attempt: AttemptRecord, rel: str = "out.txt") -> ArtifactMetadata:
    return ArtifactMetadata(
        artifact_id=artifact_id_for(attempt.run_id, rel),
        run_id=attempt.run_id,
        attempt_id=attempt.attempt_id,
        relative_path=rel,
        byte_size=2,
        digest=hashlib.sha256(b"hi").hexdigest(),
        media_type="text/plain",
        creating_attempt=attempt.attempt_id,
    )


def test_artifacts_of_a_cancelled_or_fenced_attempt_are_refused(
    routed: RoutedStore, axes: TwoAxes
) -> None:
    admission = admit(routed)
    pending = first_attempt(routed, admission).record
    with pytest.raises(LeaseFenced):  # not running: no lease to write under
        routed.transact(lambda r: r.accept_artifact(_artifact(pending)))
    running = routed.transact(lambda r: r.claim_attempt(pending.attempt_id, 1, LEASE_MS)).record
    assert running.lease is not None
    assert routed.transact(
        lambda r: r.accept_artifact(_artifact(running), running.lease.lease_id)
    ).record
    lease = pending.lease or _other(routed)  # claimed in a transaction of its own
    with pytest.raises(LeaseFenced):  # a lease that is not the attempt's
        routed.transact(lambda r: r.accept_artifact(_artifact(running, "b.txt"), lease))
    axes.advance_monotonic(LEASE_MS * 1_000_000)
    with pytest.raises(LeaseFenced):  # the lease expired: fenced
        routed.transact(lambda r: r.accept_artifact(_artifact(running, "late.txt")))
    second = admit(routed, "key-2")
    live = claimed(routed, second).record
    send(routed, control(routed, live.workflow_id, ControlCommand.CANCEL))
    before = snapshot(routed)
    with pytest.raises(LeaseFenced):  # cancelled
        routed.transact(lambda r: r.accept_artifact(_artifact(live)))
    assert snapshot(routed) == before
    assert routed.view(lambda r: r.list_artifacts(live.run_id)) == []


def _other(routed: RoutedStore) -> Any:
    """A live lease of another workflow's attempt."""
    lease = claimed(routed, admit(routed, "key-other")).record.lease
    assert lease is not None
    return lease.lease_id

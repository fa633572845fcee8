"""Attempts under leases, reconciliation after a restart, and checkpoints, on every
backend."""

from __future__ import annotations

import dataclasses

import pytest

from storage.routed.enums import (
    AttemptStatus,
    FailureReason,
    NodeStatus,
    RunStatus,
    WorkflowStatus,
)
from storage.routed.errors import (
    AlreadyExists,
    InvalidArgument,
    LeaseCallerSelected,
    LeaseFenced,
    RoutedNotFound,
)
from storage.routed.ids import AttemptID, LeaseID
from storage.routed.records import AttemptLease, AttemptRecord
from storage.routed.rules import checkpoint_digest
from storage.routed.store import RoutedStore

from ..support import FakeClock
from .support import LEASE_MS, admit, checkpoint, claimed, first_attempt

MS = 1_000_000


def test_claim_mints_the_lease_and_starts_run_workflow_node_and_segment(
    routed: RoutedStore, clock: FakeClock
) -> None:
    admission = admit(routed)
    attempt = claimed(routed, admission).record
    lease = attempt.lease
    assert attempt.status is AttemptStatus.RUNNING
    assert lease is not None
    assert LeaseID.valid(lease.lease_id)
    assert lease.expires_at == lease.acquired_at + LEASE_MS * MS
    r = admission.receipt
    assert routed.view(lambda rules: rules.get_run(r.run_id)).record.status is RunStatus.RUNNING
    assert (
        routed.view(lambda rules: rules.get_workflow(r.workflow_id)).record.status
        is WorkflowStatus.RUNNING
    )
    [node] = routed.view(lambda rules: rules.list_nodes(r.workflow_id))
    assert node.record.status is NodeStatus.RUNNING
    env = routed.view(lambda rules: rules.get_time_envelope(r.workflow_id)).record
    assert env.running_segment_start_ms is not None
    assert env.attempt_lease_remaining_ms == LEASE_MS


def test_two_claims_mint_different_leases(routed: RoutedStore) -> None:
    a = claimed(routed, admit(routed, "k1")).record.lease
    b = claimed(routed, admit(routed, "k2")).record.lease
    assert a is not None
    assert b is not None
    assert a.lease_id != b.lease_id


def test_a_caller_selected_lease_is_refused(routed: RoutedStore) -> None:
    admission = admit(routed)
    r = admission.receipt
    mine = AttemptLease(LeaseID.new(), AttemptID.new(), r.run_id, 1000, 0, 10**18, "t")
    record = AttemptRecord(mine.attempt_id, r.run_id, r.workflow_id, 1, lease=mine)
    with pytest.raises(LeaseCallerSelected):
        routed.transact(lambda r: r.create_attempt(record))
    stored = claimed(routed, admission)
    forged = dataclasses.replace(stored.record.lease, lease_id=LeaseID.new())  # type: ignore[type-var]
    lease_id = stored.record.lease.lease_id  # type: ignore[union-attr]
    with pytest.raises(LeaseCallerSelected):
        routed.transact(
            lambda r: r.update_attempt(
                dataclasses.replace(stored.record, lease=forged), stored.generation, lease_id
            )
        )
    assert routed.view(lambda r: r.get_attempt(stored.record.attempt_id)) == stored


def test_every_supervisor_write_carries_the_live_lease(routed: RoutedStore) -> None:
    stored = claimed(routed, admit(routed))
    attempt = stored.record
    assert attempt.lease is not None
    for wrong in (None, LeaseID.new()):
        with pytest.raises(LeaseFenced):
            routed.transact(
                lambda r, wrong=wrong: r.update_attempt(attempt, stored.generation, wrong)
            )
    done = routed.transact(
        lambda r: r.update_attempt(
            dataclasses.replace(attempt, status=AttemptStatus.SUCCEEDED),
            stored.generation,
            attempt.lease.lease_id,
        )
    )
    assert done.record.lease is None  # a finished attempt lets go of its lease
    assert done.record.terminated_at is not None
    with pytest.raises(LeaseFenced):  # the old lease fences every later write
        routed.transact(
            lambda r: r.update_attempt(done.record, done.generation, attempt.lease.lease_id)
        )


def test_lease_expiry_is_exclusive_at_expires_at(routed: RoutedStore, clock: FakeClock) -> None:
    stored = claimed(routed, admit(routed))
    lease = stored.record.lease
    assert lease is not None
    clock.set(lease.expires_at - 1)
    renewed = routed.transact(
        lambda r: r.renew_lease(stored.record.attempt_id, lease.lease_id, LEASE_MS)
    )
    assert renewed.record.lease is not None
    clock.set(renewed.record.lease.expires_at)
    with pytest.raises(LeaseFenced):
        routed.transact(lambda r: r.renew_lease(stored.record.attempt_id, lease.lease_id, LEASE_MS))
    with pytest.raises(LeaseFenced):
        routed.transact(
            lambda r: r.update_attempt(renewed.record, renewed.generation, lease.lease_id)
        )


def test_a_lease_longer_than_the_run_ceiling_is_refused(routed: RoutedStore) -> None:
    created = first_attempt(routed, admit(routed))
    with pytest.raises(InvalidArgument):
        routed.transact(
            lambda r: r.claim_attempt(created.record.attempt_id, created.generation, LEASE_MS + 1)
        )


def test_a_run_has_one_live_attempt_numbered_in_order(routed: RoutedStore) -> None:
    admission = admit(routed)
    first_attempt(routed, admission)
    r = admission.receipt
    with pytest.raises(InvalidArgument):
        routed.transact(
            lambda rules: rules.create_attempt(
                AttemptRecord(AttemptID.new(), r.run_id, r.workflow_id, 2)
            )
        )


def test_reconcile_interrupted_revokes_fails_and_is_idempotent(
    routed: RoutedStore, clock: FakeClock
) -> None:
    admission = admit(routed)
    stored = claimed(routed, admission)
    lease = stored.record.lease
    assert lease is not None
    clock.advance(seconds=2)
    [failed] = routed.transact(lambda r: r.reconcile_interrupted(admission.receipt.run_id))
    assert failed.record.status is AttemptStatus.FAILED
    assert failed.record.failure_reason is FailureReason.DAEMON_RESTARTED
    assert failed.record.lease is None
    env = routed.view(lambda r: r.get_time_envelope(admission.receipt.workflow_id)).record
    assert env.running_segment_start_ms is None
    assert env.consumed_active_duration_ms == 2000  # the interrupted segment, once
    assert routed.transact(lambda r: r.reconcile_interrupted(admission.receipt.run_id)) == []
    assert routed.view(lambda r: r.get_time_envelope(admission.receipt.workflow_id)).record == env
    with pytest.raises(LeaseFenced):
        routed.transact(
            lambda r: r.update_attempt(failed.record, failed.generation, lease.lease_id)
        )
    ledger = routed.view(lambda r: r.list_ledger(admission.receipt.run_id))
    assert [e.sequence for e in ledger] == [1, 2]


def test_checkpoints_are_never_overwritten(routed: RoutedStore) -> None:
    attempt = claimed(routed, admit(routed)).record
    cp = checkpoint(attempt)
    routed.transact(lambda r: r.save_checkpoint(cp))
    changed = dataclasses.replace(cp, phase="other")
    changed = dataclasses.replace(changed, checkpoint_digest=checkpoint_digest(changed))
    with pytest.raises(AlreadyExists):
        routed.transact(lambda r: r.save_checkpoint(changed))
    with pytest.raises(AlreadyExists):
        routed.transact(lambda r: r.save_checkpoint(cp))
    assert routed.view(lambda r: r.get_checkpoint(cp.checkpoint_id)).phase == cp.phase


def test_the_latest_checkpoint_is_the_highest_safe_valid_sequence(routed: RoutedStore) -> None:
    attempt = claimed(routed, admit(routed)).record
    one = checkpoint(attempt, 1)
    three = checkpoint(attempt, 3)
    unsafe = checkpoint(attempt, 5, safe=False)
    for cp in (one, three, unsafe):
        routed.transact(lambda r, cp=cp: r.save_checkpoint(cp))
    assert routed.view(
        lambda r: r.get_latest_checkpoint(attempt.attempt_id)
    ) == dataclasses.replace(
        three, created_at=routed.view(lambda r: r.get_checkpoint(three.checkpoint_id)).created_at
    )
    with pytest.raises(RoutedNotFound):
        routed.view(lambda r: r.get_latest_checkpoint(AttemptID.new()))


def test_a_checkpoint_needs_a_valid_digest_and_the_live_lease(routed: RoutedStore) -> None:
    attempt = claimed(routed, admit(routed)).record
    with pytest.raises(InvalidArgument):
        routed.transact(
            lambda r: r.save_checkpoint(
                dataclasses.replace(checkpoint(attempt), checkpoint_digest="")
            )
        )
    with pytest.raises(InvalidArgument):
        routed.transact(
            lambda r: r.save_checkpoint(dataclasses.replace(checkpoint(attempt), phase="tampered"))
        )
    with pytest.raises(LeaseFenced):
        routed.transact(
            lambda r: r.save_checkpoint(
                dataclasses.replace(checkpoint(attempt), lease_id=LeaseID.new())
            )
        )

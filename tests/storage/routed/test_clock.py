"""The two clock axes on every backend (issue 33): wall time for evidence, the store's
monotonic axis for every duration, lease and deadline decision, each moved on its own
by a fake clock (``envelope.FakeClock``: ``set_wall`` jumps only the wall axis,
``advance_monotonic`` moves only the monotonic one). The axis survives a restart: a
new process resumes from the persisted high-water mark (``storage.routed.clock``)."""

from __future__ import annotations

from typing import Any

import pytest

from storage.routed.enums import ControlCommand
from storage.routed.envelope import FakeClock as TwoAxes
from storage.routed.envelope import consumed_ms, effective_operation_deadline_ms
from storage.routed.errors import LeaseFenced
from storage.routed.store import RoutedStore

from ..support import FakeClock
from .support import admit, control, first_attempt, send

SECOND = 1_000_000_000
HOUR = 3600 * SECOND
LEASE_MS = 30_000


@pytest.fixture
def axes(clock: FakeClock) -> TwoAxes:
    return TwoAxes(wall=clock(), monotonic=5 * SECOND)


@pytest.fixture
def routed(store: Any, axes: TwoAxes) -> RoutedStore:
    return RoutedStore(store, clock=axes, monotonic=axes.now_monotonic)


def _claim(routed: RoutedStore) -> tuple[Any, Any]:
    admission = admit(routed)
    created = first_attempt(routed, admission)
    stored = routed.transact(
        lambda r: r.claim_attempt(created.record.attempt_id, created.generation, LEASE_MS)
    )
    return admission.receipt, stored.record


def _consumed(routed: RoutedStore, workflow_id: Any) -> int:
    return routed.view(lambda r: consumed_ms(r.get_time_envelope(workflow_id).record, r.now_ms))


def test_a_wall_jump_forward_neither_expires_a_lease_nor_charges_active_time(
    routed: RoutedStore, axes: TwoAxes
) -> None:
    receipt, attempt = _claim(routed)
    axes.advance_monotonic(2 * SECOND)
    axes.set_wall(axes.now() + HOUR)
    assert _consumed(routed, receipt.workflow_id) == 2_000
    # The 30 s lease is 2 s old, not an hour: its holder still writes.
    renewed = routed.transact(
        lambda r: r.renew_lease(attempt.attempt_id, attempt.lease.lease_id, LEASE_MS)
    )
    assert renewed.record.lease.expires_at == axes.now() + LEASE_MS * 1_000_000  # wall evidence
    send(routed, control(routed, receipt.workflow_id, ControlCommand.CANCEL))
    env = routed.view(lambda r: r.get_time_envelope(receipt.workflow_id)).record
    assert env.consumed_active_duration_ms == 2_000


def test_a_wall_jump_backward_neither_stops_time_nor_keeps_a_lease_alive(
    routed: RoutedStore, axes: TwoAxes
) -> None:
    receipt, attempt = _claim(routed)
    axes.set_wall(axes.now() - HOUR)
    axes.advance_monotonic(31 * SECOND)
    assert _consumed(routed, receipt.workflow_id) == 31_000
    with pytest.raises(LeaseFenced):
        routed.transact(
            lambda r: r.renew_lease(attempt.attempt_id, attempt.lease.lease_id, LEASE_MS)
        )
    send(routed, control(routed, receipt.workflow_id, ControlCommand.CANCEL))
    env = routed.view(lambda r: r.get_time_envelope(receipt.workflow_id)).record
    assert env.consumed_active_duration_ms == 31_000


def test_lease_expiry_is_exclusive_on_the_monotonic_axis(
    routed: RoutedStore, axes: TwoAxes
) -> None:
    _receipt, attempt = _claim(routed)
    axes.advance_monotonic(LEASE_MS * 1_000_000 - 1)
    renewed = routed.transact(
        lambda r: r.renew_lease(attempt.attempt_id, attempt.lease.lease_id, LEASE_MS)
    )
    axes.advance_monotonic(LEASE_MS * 1_000_000)
    with pytest.raises(LeaseFenced):
        routed.transact(
            lambda r: r.update_attempt(renewed.record, renewed.generation, attempt.lease.lease_id)
        )


def test_the_envelopes_remaining_lease_decreases_and_bounds_the_deadline(
    routed: RoutedStore, axes: TwoAxes
) -> None:
    receipt, attempt = _claim(routed)
    axes.advance_monotonic(10 * SECOND)

    def read(r: Any) -> tuple[Any, int]:
        env = r.get_time_envelope(receipt.workflow_id).record
        return env.attempt_lease_remaining_ms, effective_operation_deadline_ms(
            env, r.now_ms, 120_000
        )

    assert routed.view(read) == (20_000, 20_000)
    axes.advance_monotonic(25 * SECOND)  # past the lease: nothing is left, never negative
    assert routed.view(read) == (0, 0)
    with pytest.raises(LeaseFenced):
        routed.transact(
            lambda r: r.renew_lease(attempt.attempt_id, attempt.lease.lease_id, LEASE_MS)
        )


def test_the_monotonic_axis_resumes_from_its_mark_after_a_restart(
    routed: RoutedStore, axes: TwoAxes, reopen: Any
) -> None:
    receipt, attempt = _claim(routed)
    axes.advance_monotonic(20 * SECOND)
    routed.transact(
        lambda r: r.append_ledger(receipt.run_id, "a write: the mark moves to this reading")
    )
    before = routed.view(lambda r: r.monotonic_ns)
    # A new process: its own monotonic clock restarted far below the old one's.
    fresh = TwoAxes(wall=axes.now(), monotonic=7)
    again = RoutedStore(reopen(), clock=fresh, monotonic=fresh.now_monotonic)
    assert again.view(lambda r: r.monotonic_ns) == before  # never backward
    left = again.view(
        lambda r: r.get_time_envelope(receipt.workflow_id)
    ).record.attempt_lease_remaining_ms
    assert left == 10_000  # the lease kept its 10 s, not 30 s nor an expiry
    fresh.advance_monotonic(4 * SECOND)
    again.transact(lambda r: r.renew_lease(attempt.attempt_id, attempt.lease.lease_id, LEASE_MS))
    fresh.advance_monotonic(LEASE_MS * 1_000_000)
    with pytest.raises(LeaseFenced):
        again.transact(
            lambda r: r.renew_lease(attempt.attempt_id, attempt.lease.lease_id, LEASE_MS)
        )
    assert again.view(lambda r: r.monotonic_ns) == before + (4 * SECOND + LEASE_MS * 1_000_000)


def test_two_processes_share_one_axis_that_never_runs_backward(store: Any, axes: TwoAxes) -> None:
    first = RoutedStore(store, clock=axes, monotonic=axes.now_monotonic)
    other = TwoAxes(wall=axes.now(), monotonic=0)
    second = RoutedStore(store, clock=other, monotonic=other.now_monotonic)
    admission = admit(first)
    axes.advance_monotonic(50 * SECOND)
    first.transact(lambda r: r.append_ledger(admission.receipt.run_id, "first moves the mark"))
    mark = first.view(lambda r: r.monotonic_ns)
    # The second process saw an older mark; it follows the newer one, never reads less.
    assert second.view(lambda r: r.monotonic_ns) >= mark
    other.advance_monotonic(SECOND)
    assert second.view(lambda r: r.monotonic_ns) == mark + SECOND

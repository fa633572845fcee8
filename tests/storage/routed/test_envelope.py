"""The time envelope's formulas as properties (hypothesis), the fake clock's two axes
and the termination precedence."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.routed import envelope as te
from storage.routed.enums import TerminationReason as TR
from storage.routed.errors import SegmentAlreadyOpen
from storage.routed.records import ActiveTimeLedger

INT64 = 2**63 - 1
ms = st.integers(min_value=0, max_value=INT64)
small = st.integers(min_value=0, max_value=10**12)


@st.composite
def envelopes(draw: st.DrawFn) -> te.TimeEnvelope:
    env = te.new_time_envelope(draw(ms), draw(small), draw(small), draw(small))
    return te.TimeEnvelope(
        current_max_active_duration_ms=env.current_max_active_duration_ms,
        consumed_active_duration_ms=draw(ms),
        running_segment_start_ms=draw(st.none() | ms),
        attempt_lease_remaining_ms=draw(st.none() | st.integers(-(10**6), 10**12)),
        stall_timeout_ms=env.stall_timeout_ms,
        model_call_timeout_ms=env.model_call_timeout_ms,
    )


@given(envelopes(), ms)
def test_remaining_is_never_negative_and_never_above_the_ceiling(
    env: te.TimeEnvelope, now: int
) -> None:
    left = te.active_time_remaining_ms(env, now)
    assert 0 <= left <= max(0, env.current_max_active_duration_ms)


@given(envelopes(), ms)
def test_consumed_never_overflows_int64(env: te.TimeEnvelope, now: int) -> None:
    closed = te.close_active_segment(env, now)
    assert 0 <= closed.consumed_active_duration_ms <= INT64
    assert closed.consumed_active_duration_ms >= env.consumed_active_duration_ms


@given(envelopes(), ms, st.integers(min_value=-(10**12), max_value=10**12))
def test_the_deadline_is_the_clamped_minimum_of_its_bounds(
    env: te.TimeEnvelope, now: int, timeout: int
) -> None:
    got = te.effective_operation_deadline_ms(env, now, timeout)
    bounds = [timeout, te.active_time_remaining_ms(env, now)]
    if env.attempt_lease_remaining_ms is not None:
        bounds.append(env.attempt_lease_remaining_ms)
    assert got == max(0, min(bounds))
    assert got >= 0


@given(small, small, small)
def test_an_absent_lease_is_no_lease_bound(max_active: int, timeout: int, now: int) -> None:
    env = te.new_time_envelope(max_active, 0, 0, 0)
    assert env.attempt_lease_remaining_ms is None
    assert te.effective_operation_deadline_ms(env, now, timeout) == max(0, min(timeout, max_active))


@given(small, small, st.integers(min_value=0, max_value=10**9))
def test_a_backward_monotonic_jump_charges_nothing(consumed: int, start: int, back: int) -> None:
    env = te.TimeEnvelope(10**13, consumed_active_duration_ms=consumed)
    env = te.start_active_segment(env, start)
    closed = te.close_active_segment(env, start - back)
    assert closed.consumed_active_duration_ms == consumed
    assert closed.running_segment_start_ms is None


@given(small, small, small, small, small)
def test_frozen_intervals_are_not_charged(
    max_active: int, run1: int, paused: int, run2: int, t0: int
) -> None:
    env = te.start_active_segment(te.new_time_envelope(max_active, 0, 0, 0), t0)
    env = te.freeze_active_segment(env, t0 + run1)
    assert env.frozen_consumed_ms == run1 == env.consumed_active_duration_ms
    # While frozen nothing accrues, however long the pause.
    assert te.active_time_remaining_ms(env, t0 + run1 + paused) == max(0, max_active - run1)
    env = te.unfreeze_active_segment(env, t0 + run1 + paused)
    assert env.frozen_consumed_ms == 0
    env = te.start_active_segment(env, t0 + run1 + paused)
    env = te.close_active_segment(env, t0 + run1 + paused + run2)
    assert env.consumed_active_duration_ms == run1 + run2


@given(envelopes(), ms, st.integers(min_value=1, max_value=10**6))
def test_amending_keeps_consumed_time_and_moves_the_generation(
    env: te.TimeEnvelope, new_max: int, generation: int
) -> None:
    amended = te.with_amended_ceiling(env, new_max, generation)
    assert amended.consumed_active_duration_ms == env.consumed_active_duration_ms
    assert amended.running_segment_start_ms == env.running_segment_start_ms
    assert amended.current_max_active_duration_ms == new_max
    assert amended.lifecycle_authority_generation == generation


@given(envelopes(), ms)
def test_functions_return_new_envelopes_and_leave_the_argument_alone(
    env: te.TimeEnvelope, now: int
) -> None:
    before = te.marshal_for_payload(env)
    te.close_active_segment(env, now)
    te.freeze_active_segment(env, now)
    te.unfreeze_active_segment(env, now)
    te.with_amended_ceiling(env, 1, 2)
    assert te.marshal_for_payload(env) == before


@given(envelopes())
def test_payload_round_trip(env: te.TimeEnvelope) -> None:
    payload = {te.PAYLOAD_KEY: te.marshal_for_payload(env), "other": 1}
    assert te.unmarshal_from_payload(payload) == env


def test_payload_without_or_with_a_broken_envelope_is_the_legacy_signal() -> None:
    assert te.unmarshal_from_payload({}) is None
    assert te.unmarshal_from_payload({te.PAYLOAD_KEY: {"bogus": 1}}) is None
    assert te.unmarshal_from_payload({te.PAYLOAD_KEY: "x"}) is None


@given(envelopes(), ms)
def test_expired_exactly_when_active_time_or_the_lease_ran_out(
    env: te.TimeEnvelope, now: int
) -> None:
    lease = env.attempt_lease_remaining_ms
    expected = te.active_time_remaining_ms(env, now) <= 0 or (lease is not None and lease <= 0)
    assert te.is_expired(env, now) == expected


def test_a_second_start_is_refused_and_close_is_idempotent() -> None:
    env = te.start_active_segment(te.new_time_envelope(1000, 10, 5, 5), 100)
    with pytest.raises(SegmentAlreadyOpen):
        te.start_active_segment(env, 150)
    closed = te.close_active_segment(env, 400)
    assert closed.consumed_active_duration_ms == 300
    assert te.close_active_segment(closed, 900) is closed


def test_new_envelopes_start_at_generation_one_and_zero_cancellations() -> None:
    env = te.new_time_envelope(1000, 10, 5, 7)
    assert (env.lifecycle_authority_generation, env.cancellation_generation) == (1, 0)
    assert te.time_envelope_from_ceilings(0, 10, 5, 7) is None
    assert te.time_envelope_from_ceilings(-1, 10, 5, 7) is None


def test_the_fake_clock_keeps_wall_and_monotonic_axes_apart() -> None:
    clock = te.FakeClock(wall=5_000_000, monotonic=1_000_000)
    clock.set_wall(1)  # a wall jump backwards
    assert clock.now_monotonic() == 1_000_000
    clock.advance_monotonic(-10)
    assert clock.now_monotonic() == 1_000_000
    clock.advance_monotonic(2_000_000)
    assert (clock(), clock.now_monotonic_ms()) == (1, 3)


@given(st.lists(st.tuples(st.sampled_from(list(TR)), small), max_size=8))
def test_termination_precedence_is_kind_then_earliest(events: list[tuple[TR, int]]) -> None:
    got = te.resolve_termination(None, [te.TerminationEvent(k, t) for k, t in events])
    real = [k for k, _ in events if k is not TR.UNKNOWN]
    assert got is (min(real, key=lambda k: k.value) if real else TR.UNKNOWN)


def test_user_cancel_beats_every_coinciding_signal() -> None:
    events = [
        te.TerminationEvent(TR.PROCESS_FAILURE, 1),
        te.TerminationEvent(TR.STALL, 2),
        te.TerminationEvent(TR.LEASE_EXPIRED, 3),
        te.TerminationEvent(TR.ACTIVE_TIME_EXHAUSTED, 4),
        te.TerminationEvent(TR.USER_CANCEL, 5),
    ]
    assert te.resolve_termination(None, events) is TR.USER_CANCEL
    assert te.resolve_termination(None, events[:4]) is TR.ACTIVE_TIME_EXHAUSTED


def test_the_older_ledger_falls_back_to_wall_time_after_a_monotonic_reset() -> None:
    ledger = ActiveTimeLedger(
        consumed_ms=100, updated_at=0, running_segment_start_ms=5000, segment_start_wall_ms=9000
    )
    assert te.ledger_consumed_ms(ledger, now_ms=6000, now_wall_ms=0) == 1100
    assert te.ledger_consumed_ms(ledger, now_ms=10, now_wall_ms=9500) == 600
    assert te.ledger_consumed_ms(ledger, now_ms=10, now_wall_ms=1) == 100


def test_an_envelope_from_a_receipt_takes_its_ceilings_and_the_default_timeouts() -> None:
    from storage.routed.ids import DeploymentID, InvocationID, RunID, WorkflowID
    from storage.routed.records import InvocationReceipt

    receipt = InvocationReceipt(
        invocation_id=InvocationID.new(),
        workflow_id=WorkflowID.new(),
        run_id=RunID.new(),
        resolved_deployment_id=DeploymentID.new(),
        resolved_deployment_version="1",
        resolved_deployment_digest="d",
        requested_deployment_ref="prod",
        invocation_intent_digest="i",
        caller_identity="alice",
        initial_max_active_duration_ms=9000,
        initial_attempt_lease_ms=3000,
        initial_max_cost_usd_decimal="1",
        admitted_at=0,
    )
    env = te.time_envelope_from_receipt(receipt)
    assert env == te.TimeEnvelope(
        current_max_active_duration_ms=9000,
        attempt_lease_remaining_ms=3000,
        stall_timeout_ms=te.DEFAULT_STALL_TIMEOUT_MS,
        model_call_timeout_ms=te.DEFAULT_MODEL_CALL_TIMEOUT_MS,
    )
    legacy = dataclasses.replace(receipt, initial_max_active_duration_ms=0)
    assert te.time_envelope_from_receipt(legacy) is None

"""The time envelope: pure functions over an immutable ``TimeEnvelope``.

Every function returns a new envelope and never changes its argument. ``now_ms`` is a
*monotonic* millisecond reading (``FakeClock.now_monotonic_ms`` in tests). Arithmetic
saturates at the int64 bounds instead of wrapping, and a reading that precedes the
segment start charges zero (resolution 12: the envelope is authoritative and clamps;
only the older ``ActiveTimeLedger`` falls back to wall-clock deltas).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .codec import INT64_MAX, SCHEMA_VERSION, from_data, to_data
from .enums import TerminationReason
from .errors import InvalidArgument, SegmentAlreadyOpen, UnknownSchemaVersion
from .records import ActiveTimeLedger, InvocationReceipt, Nanos

DEFAULT_MODEL_CALL_TIMEOUT_MS = 120_000
DEFAULT_STALL_TIMEOUT_MS = 120_000
PAYLOAD_KEY = "time_envelope"


@dataclass(frozen=True)
class TimeEnvelope:
    current_max_active_duration_ms: int
    consumed_active_duration_ms: int = 0
    running_segment_start_ms: int | None = None
    attempt_lease_remaining_ms: int | None = None
    stall_timeout_ms: int = 0
    model_call_timeout_ms: int = 0
    lifecycle_authority_generation: int = 1
    cancellation_generation: int = 0
    frozen_consumed_ms: int = 0
    schema_version: str = SCHEMA_VERSION


def _sat(value: int) -> int:
    return min(value, INT64_MAX)


def new_time_envelope(
    max_active_ms: int, attempt_lease_ms: int, stall_timeout_ms: int, model_call_timeout_ms: int
) -> TimeEnvelope:
    """Fresh ceilings: authority generation 1, cancellation generation 0, nothing
    consumed, no segment open; a positive lease is the attempt lease remaining."""
    return TimeEnvelope(
        current_max_active_duration_ms=max_active_ms,
        attempt_lease_remaining_ms=attempt_lease_ms if attempt_lease_ms > 0 else None,
        stall_timeout_ms=stall_timeout_ms,
        model_call_timeout_ms=model_call_timeout_ms,
    )


def time_envelope_from_ceilings(
    max_active_ms: int, attempt_lease_ms: int, stall_timeout_ms: int, model_call_timeout_ms: int
) -> TimeEnvelope | None:
    """None when ``max_active_ms`` is not positive (the legacy fallback signal)."""
    if max_active_ms <= 0:
        return None
    return new_time_envelope(
        max_active_ms, attempt_lease_ms, stall_timeout_ms, model_call_timeout_ms
    )


def time_envelope_from_receipt(receipt: InvocationReceipt) -> TimeEnvelope | None:
    """The receipt's initial ceilings with the default per-operation timeouts."""
    return time_envelope_from_ceilings(
        receipt.initial_max_active_duration_ms,
        receipt.initial_attempt_lease_ms,
        DEFAULT_STALL_TIMEOUT_MS,
        DEFAULT_MODEL_CALL_TIMEOUT_MS,
    )


def start_active_segment(env: TimeEnvelope, now_ms: int) -> TimeEnvelope:
    """Open a segment at ``now_ms``; ``SegmentAlreadyOpen`` if one is open (a second
    start never silently closes the first)."""
    if env.running_segment_start_ms is not None:
        raise SegmentAlreadyOpen(f"segment open since {env.running_segment_start_ms}")
    return replace(env, running_segment_start_ms=now_ms)


def _elapsed(env: TimeEnvelope, now_ms: int) -> int:
    start = env.running_segment_start_ms
    if start is None or now_ms <= start:
        return 0  # no segment, or a backward monotonic jump: charge nothing
    return now_ms - start


def close_active_segment(env: TimeEnvelope, now_ms: int) -> TimeEnvelope:
    """Accrue the open segment and close it; unchanged if none is open (idempotent)."""
    if env.running_segment_start_ms is None:
        return env
    consumed = _sat(env.consumed_active_duration_ms + _elapsed(env, now_ms))
    return replace(env, consumed_active_duration_ms=consumed, running_segment_start_ms=None)


def freeze_active_segment(env: TimeEnvelope, now_ms: int) -> TimeEnvelope:
    """Close (accruing) and record the consumed time at freeze (PAUSED, NEEDS_REPLAN)."""
    closed = close_active_segment(env, now_ms)
    return replace(closed, frozen_consumed_ms=closed.consumed_active_duration_ms)


def unfreeze_active_segment(env: TimeEnvelope, now_ms: int) -> TimeEnvelope:
    """Clear the frozen mark; consumed time is kept, the frozen interval uncharged."""
    del now_ms  # the spec's signature; unfreezing charges nothing whatever the time
    return replace(env, frozen_consumed_ms=0)


def with_amended_ceiling(
    env: TimeEnvelope, new_max_active_ms: int, new_authority_generation: int
) -> TimeEnvelope:
    """New ceiling and authority generation together; consumed time is kept."""
    return replace(
        env,
        current_max_active_duration_ms=new_max_active_ms,
        lifecycle_authority_generation=new_authority_generation,
    )


def consumed_ms(env: TimeEnvelope, now_ms: int) -> int:
    return _sat(env.consumed_active_duration_ms + _elapsed(env, now_ms))


def active_time_remaining_ms(env: TimeEnvelope, now_ms: int) -> int:
    """Ceiling minus consumed (including the open segment), never below zero."""
    return max(0, env.current_max_active_duration_ms - consumed_ms(env, now_ms))


def effective_operation_deadline_ms(
    env: TimeEnvelope, now_ms: int, operation_timeout_ms: int
) -> int:
    """min(operation timeout, attempt lease remaining, active time remaining), 0 when
    any bound is zero or negative. No active lease (None) is no lease bound
    (resolution 12)."""
    bounds = [operation_timeout_ms, active_time_remaining_ms(env, now_ms)]
    if env.attempt_lease_remaining_ms is not None:
        bounds.append(env.attempt_lease_remaining_ms)
    low = min(bounds)
    return low if low > 0 else 0


def is_expired(env: TimeEnvelope, now_ms: int) -> bool:
    """Active time exhausted, or the attempt lease (when there is one) run out."""
    if active_time_remaining_ms(env, now_ms) <= 0:
        return True
    lease = env.attempt_lease_remaining_ms
    return lease is not None and lease <= 0


def marshal_for_payload(env: TimeEnvelope) -> dict[str, Any]:
    """The envelope as plain JSON data, for an invoke payload's ``time_envelope`` key."""
    data: dict[str, Any] = to_data(env)
    return data


def unmarshal_from_payload(payload: Mapping[str, Any]) -> TimeEnvelope | None:
    """The envelope under ``time_envelope``, or None when absent or invalid."""
    data = payload.get(PAYLOAD_KEY)
    if data is None:
        return None
    try:
        return from_data(TimeEnvelope, data)
    except (InvalidArgument, UnknownSchemaVersion):
        return None


@dataclass(frozen=True)
class TerminationEvent:
    kind: TerminationReason
    observed_at: Nanos


def resolve_termination(
    env: TimeEnvelope | None, events: Sequence[TerminationEvent]
) -> TerminationReason:
    """The winning reason among coinciding signals: user cancel, active-time
    exhaustion, lease expiry, stall, process failure, in that order (resolution 9);
    equal kinds resolve to the earliest observation. UNKNOWN when there are none.
    Pure: the envelope is accepted for the spec's signature and not consulted."""
    del env
    real = [e for e in events if e.kind is not TerminationReason.UNKNOWN]
    if not real:
        return TerminationReason.UNKNOWN
    return min(real, key=lambda e: (e.kind.value, e.observed_at)).kind


def ledger_consumed_ms(ledger: ActiveTimeLedger, now_ms: int, now_wall_ms: int) -> int:
    """Consumed time of the older ledger: when the monotonic clock reset since the
    segment start (``now_ms`` < start), the wall-clock delta is charged instead (F20);
    a negative wall delta charges nothing."""
    start = ledger.running_segment_start_ms
    if start is None:
        return ledger.consumed_ms
    if now_ms >= start:
        delta = now_ms - start
    elif ledger.segment_start_wall_ms is not None:
        delta = max(0, now_wall_ms - ledger.segment_start_wall_ms)
    else:
        delta = 0
    return _sat(ledger.consumed_ms + delta)


class FakeClock:
    """A test clock with independent wall and monotonic axes (nanoseconds).

    ``set_wall`` jumps only the wall axis, forward or back; ``advance_monotonic``
    moves only the monotonic axis and ignores negative steps. Calling the clock returns
    the wall axis, so it can be a store's clock (``Guard.now`` source)."""

    def __init__(self, wall: Nanos = 1_700_000_000_000_000_000, monotonic: Nanos | None = None):
        self._lock = threading.Lock()
        self._wall = wall
        self._mono = wall if monotonic is None else monotonic

    def __call__(self) -> Nanos:
        return self.now()

    def now(self) -> Nanos:
        with self._lock:
            return self._wall

    def now_monotonic(self) -> Nanos:
        with self._lock:
            return self._mono

    def now_monotonic_ms(self) -> int:
        return self.now_monotonic() // 1_000_000

    def set_wall(self, wall: Nanos) -> None:
        with self._lock:
            self._wall = wall

    def advance_monotonic(self, nanos: int) -> None:
        if nanos <= 0:
            return  # monotonic time never moves backward
        with self._lock:
            self._mono += nanos

    def advance(self, nanos: int) -> None:
        """Both axes forward together, as real time passes."""
        if nanos <= 0:
            return
        with self._lock:
            self._wall += nanos
            self._mono += nanos

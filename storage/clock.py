"""Time as integer UTC nanoseconds, and conversions at the edges.

Naive datetimes are refused: an instant without a zone is ambiguous, and the contract
orders Work across time zones by instant.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from .errors import Invalid
from .records import Nanos

NS_PER_SECOND = 1_000_000_000


def wall_clock() -> Nanos:
    """The host's UTC clock in nanoseconds (the default store clock)."""
    return time.time_ns()


def to_ns(value: datetime | int) -> Nanos:
    """An aware datetime or an integer of nanoseconds -> nanoseconds since the epoch."""
    if isinstance(value, bool):
        raise Invalid("a time must be a datetime or integer nanoseconds, not a bool")
    if isinstance(value, int):
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        raise Invalid(f"naive datetime {value.isoformat()} has no time zone")
    delta = value - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * NS_PER_SECOND + delta.microseconds * 1000


def from_ns(ns: Nanos) -> datetime:
    """Nanoseconds -> an aware UTC datetime (truncated to microseconds for display)."""
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)


def seconds(value: float) -> Nanos:
    """A duration in seconds as nanoseconds."""
    return int(value * NS_PER_SECOND)

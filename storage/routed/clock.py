"""The routed store's two clock axes (the spec's ``Clock``: ``Now`` and ``NowMonotonic``).

Wall time is the contract's: ``Guard.now`` (``rules.now``, nanoseconds), for evidence
timestamps (``created_at``, a lease's ``acquired_at``/``expires_at``, ...). Every
duration, lease and deadline decision reads the *monotonic axis* instead
(``rules.monotonic_ns``, ``rules.now_ms``), which a wall-clock jump, forward or back,
does not move.

The axis must survive a process restart, and a process's own monotonic clock does not
(it restarts at an arbitrary value with every boot, and each host has its own). So the
axis is a persisted high-water mark plus the process's monotonic delta:

    reading = max(mark, last reading of this process, base + (source() - anchor))

- ``mark`` is the ``meta`` row ``monotonic`` (``MonotonicMark``), read in the
  transaction or View. Every routed write transaction raises it to its reading, with its
  first write (``RulesBase._mark``), so whatever a transaction decides on the axis is
  committed together with a mark at least as high: after a restart the axis resumes
  from there and never goes back.
- ``(base, anchor)`` pairs an axis value with a reading of the process's source
  (``time.monotonic_ns`` by default; a fake in tests). The first reading anchors at
  the mark, or at the transaction's wall time when there is no mark yet (a new
  database, or one written before the axis existed: values stored then are wall
  readings, so they stay comparable). Whenever the mark is ahead of this process's
  own reading (another process moved it further), the process re-anchors at the mark:
  processes converge on the furthest one and the axis never runs backward.
- Reads never write: a View computes the reading from the mark it sees and keeps it
  in memory only.

Failure modes, by design: time while no process runs is not counted (the axis resumes
at the last mark, so a lease or segment open at a crash resumes with the time it had
left; ``reconcile_interrupted`` fails such attempts at restart anyway); time a
process read but never wrote is lost at its restart (no decision was committed on
it); a host whose monotonic clock runs fast pushes the axis for every process
(bounded by that clock's rate, never by a wall jump); and a process whose source
steps backward is clamped to its last reading.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .codec import SCHEMA_VERSION
from .records import Nanos


@dataclass(frozen=True)
class MonotonicMark:
    """The ``meta`` row ``monotonic``: the highest committed monotonic reading (ns)."""

    reading_ns: int
    schema_version: str = SCHEMA_VERSION


class MonotonicAxis:
    """One process's view of the store's monotonic axis (one per ``RoutedStore``)."""

    def __init__(self, source: Callable[[], Nanos] = time.monotonic_ns) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._base: Nanos | None = None
        self._anchor: Nanos = 0
        self._last: Nanos = 0

    def reading(self, mark: Nanos | None, wall: Nanos) -> Nanos:
        """The axis now, given the stored ``mark`` (None: none stored yet) and the
        transaction's wall time (the start of the axis when there is no mark)."""
        with self._lock:
            raw = self._source()
            if self._base is None:
                self._base, self._anchor = wall if mark is None else mark, raw
            own = self._base + (raw - self._anchor)
            if mark is not None and own < mark:  # another process went further: follow
                self._base, self._anchor, own = mark, raw, mark
            self._last = max(self._last, own)
            return self._last

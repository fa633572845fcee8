"""The spread of repeated measurements: min, median and max, never a lone number."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Spread:
    """Repeated measurements of one figure, in the unit they were taken in."""

    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            raise ValueError("a spread needs at least one measurement")
        return cls(tuple(float(v) for v in values))

    @property
    def min(self) -> float:
        return min(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def max(self) -> float:
        return max(self.values)

    @property
    def n(self) -> int:
        return len(self.values)

    def scaled(self, factor: float) -> Spread:
        return Spread(tuple(v * factor for v in self.values))

    def rates(self, work: float) -> Spread:
        """Durations (seconds) of ``work`` units each, as units per second."""
        return Spread(tuple(work / v if v > 0 else float("inf") for v in self.values))

    def quantile(self, q: float) -> float:
        """Nearest-rank quantile (q in [0, 1]); for latency percentiles."""
        ordered = sorted(self.values)
        rank = max(1, min(len(ordered), round(q * len(ordered) + 0.5)))
        return ordered[rank - 1]


def timed(fn: Callable[[], object], repeat: int, warmup: int = 1) -> list[float]:
    """Seconds per call of ``fn``, ``repeat`` times after ``warmup`` untimed calls (the
    first call pays for cold caches and lazy imports, which is not what we measure)."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def rounds(calls: Mapping[str, Callable[[], object]], reps: int) -> dict[str, list[float]]:
    """Seconds per call of each of ``calls``: ``reps`` rounds, each calling every one in
    turn, after one warm-up round that is not kept. Interleaved, so every call sees the
    same machine conditions (a drifting load falls on all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for rep in range(reps + 1):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            if rep:
                times[name].append(time.perf_counter() - started)
    return times

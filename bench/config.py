"""Sizes of a run: quick (the default), full (BENCH_FULL=1) and toy (the smoke test)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sizes:
    name: str
    seed: int  # Work written by `manage.py generate` (the real history)
    unrouted: int  # Events accepted and left unrouted in the seed
    small: int  # benchmark 2's histories, in Work (amplified from the seed)
    large: int
    reps: int  # timed repetitions of each read (benchmarks 2 and 4)
    # Benchmark 1: (operations per transaction, repetitions, transactions per repetition)
    tx_plan: tuple[tuple[int, int, int], ...]
    page_reps: int  # benchmark 3: requests per page
    hold: float  # benchmark 4: seconds the writer holds its transaction open
    load_seconds: float  # benchmark 5
    load_clients: int = 8
    sim_rate: float = 10.0  # simulate ticks per second during benchmark 5
    bulk: int = 1_000  # benchmark 7: exhausted Work one bulk retry run takes (the cap is 10,000)
    routed_workflows: int = 10_000  # benchmark 9: workflows, and Work in its history
    wire_seconds: float = 60.0  # benchmark 10: how long the tabs poll
    # Benchmark 1's floor (bench/commit_floor.py): interleaved rounds, transactions each.
    floor_rounds: int = 15
    floor_per_round: int = 40

    @property
    def prepared(self) -> int:
        """Work (each with a pending attempt) that benchmark 1 consumes, plus two
        warm-up transactions in each interleaved round's child."""
        return sum(b * r * t for b, r, t in self.tx_plan) + 2 * max(r for _, r, _ in self.tx_plan)


QUICK = Sizes(
    name="quick",
    seed=5_000,
    unrouted=150,
    small=10_000,
    large=100_000,
    reps=7,
    tx_plan=((1, 5, 100), (10, 5, 20), (100, 5, 2)),
    page_reps=5,
    hold=2.0,
    load_seconds=10.0,
)
FULL = Sizes(
    name="full",
    seed=10_000,
    unrouted=150,
    small=10_000,
    large=1_000_000,
    reps=9,
    tx_plan=((1, 7, 200), (10, 7, 30), (100, 7, 3)),
    page_reps=7,
    hold=2.0,
    load_seconds=30.0,
    routed_workflows=100_000,
    wire_seconds=120.0,
    floor_rounds=21,
    floor_per_round=50,
)
# The smoke test: every code path, in seconds.
TOY = Sizes(
    name="toy",
    seed=200,
    unrouted=120,
    small=300,
    large=600,
    reps=2,
    tx_plan=((1, 2, 3), (10, 2, 1), (100, 1, 1)),
    page_reps=2,
    hold=0.6,
    load_seconds=1.5,
    sim_rate=5.0,
    bulk=30,
    routed_workflows=300,
    wire_seconds=2.0,
    floor_rounds=2,
    floor_per_round=3,
)

"""The production-density history (bench/density.py) at a toy size: built by the bulk
path, it keeps the contract's invariants and its tallies, and its census shows the
shape the density promises (ratios and counts, never timings)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from bench import density
from bench.proc import PYTHON, ROOT, DataDir

from .conftest import SEED_WORKS, WORKS

# The fixture runs generate and the bulk path in child processes (~15 s on a quiet
# machine): slow, as the harness's own test.
pytestmark = [pytest.mark.slow, pytest.mark.multiprocess, pytest.mark.sqlite_only]


def test_a_production_history_keeps_the_invariants_its_tallies_and_error_groups(
    production_history: Path,
) -> None:
    proc = subprocess.run(
        [PYTHON, "-m", "tests.bench.support"],
        cwd=ROOT,
        env=DataDir(production_history).env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_the_census_of_a_production_history_shows_its_density_and_long_tails(
    production_history: Path,
) -> None:
    c = density.census(DataDir(production_history).db, time.time_ns())
    seed = density.census(production_history.parent / "seed" / "conduit.sqlite3")

    assert c["works"] == WORKS
    # The live set grows in proportion: the seed's share, about 1%.
    assert 0.002 <= c["live"] / WORKS <= 0.05
    assert abs(c["live"] / WORKS - seed["live"] / SEED_WORKS) < 0.01
    # At RATE new Work a day the copies (all but the seed's own Work, spread over its
    # ~20 days) fall in the last day; the seed alone has a few a day.
    cloned = WORKS - SEED_WORKS
    assert c["windows"]["24h"]["created"] >= 0.9 * min(cloned, density.RATE)
    assert seed["windows"]["24h"]["created"] <= 0.2 * SEED_WORKS
    assert c["windows"]["30d"]["created"] == WORKS
    # Long tails: several times the seed's error groups, executors and sources.
    for facet in ("error_groups", "executors", "sources", "kinds"):
        assert c["distinct"][facet] >= 3 * seed["distinct"][facet], facet
    # A heavy Work, while the rest keep the seed's Events per Work.
    assert c["events"]["max"] >= density.HEAVY_EVENTS
    assert c["events"]["p99"] <= 2 * seed["events"]["p99"] + 1
    assert c["attempts"]["max"] == seed["attempts"]["max"]
    # Run records and routed workflows, one of each per ROUTED_EVERY Work at least.
    assert c["run_records"] >= WORKS // density.ROUTED_EVERY
    assert c["workflows"] >= WORKS // density.ROUTED_EVERY
    assert seed["run_records"] == seed["workflows"] == 0

"""Fixtures of the benchmark harness's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

# A production-density history at a toy size (bench/density.py): a 200-Work seed
# cloned to 2,000 Work, ten copies, so every long tail has a few members.
SEED_WORKS = 200
WORKS = 2_000


@pytest.fixture(scope="module")
def production_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data folder of a production-density history built by the bulk path."""
    from bench import history
    from bench.density import PRODUCTION
    from bench.proc import Workspace

    ws = Workspace(root=tmp_path_factory.mktemp("density"), keep=True)
    seed = history.seed(ws, SEED_WORKS, 20, progress=False)
    data = history.amplify(ws, seed, WORKS, "history-production", density=PRODUCTION)
    return data.path

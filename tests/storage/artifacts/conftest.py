"""Fixtures for the artifact store's tests: a store on a fresh folder with a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.artifacts import FileArtifactStore
from tests.storage.support.artifacts import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> FileArtifactStore:
    return FileArtifactStore(tmp_path / "artifacts", clock=clock)

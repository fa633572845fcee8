"""Fixtures shared by the SQLite and PostgreSQL backup tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_django import Settings as SettingsWrapper

from storage.artifacts import FileArtifactStore


@pytest.fixture
def artifacts(tmp_path: Path, settings: SettingsWrapper) -> FileArtifactStore:
    """The artifact store a backup reads, at the path the settings give it (and the
    routed-run state a backup copies, empty unless a test makes it: never the real
    data folder's)."""
    settings.ARTIFACT_DIR = tmp_path / "artifacts"
    settings.ROUTED_STATE_DIR = tmp_path / "routed"
    return FileArtifactStore(settings.ARTIFACT_DIR)

"""Fixtures of the demo tests: each test gets its own artifact folder and fresh stores."""

import pytest

from storage.default import reset_defaults


@pytest.fixture(autouse=True)
def fresh_stores(settings, tmp_path):
    """Point the artifact store and the routed-run state at tmp_path; forget stores
    cached by earlier tests."""
    settings.ARTIFACT_DIR = tmp_path / "artifacts"
    settings.ROUTED_STATE_DIR = tmp_path / "routed"
    reset_defaults()
    yield
    reset_defaults()

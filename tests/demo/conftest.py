"""Fixtures of the demo tests: each test gets its own artifact folder and fresh stores."""

import pytest

from console import stores


@pytest.fixture(autouse=True)
def fresh_stores(settings, tmp_path):
    """Point the artifact store at tmp_path; forget stores cached by earlier tests."""
    settings.ARTIFACT_DIR = tmp_path / "artifacts"
    stores.reset()
    yield
    stores.reset()

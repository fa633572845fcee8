"""Fixtures of the ORM backend's own tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from storage.orm import OrmStore

from ..support import FakeClock


@pytest.fixture
def orm_store() -> Iterator[OrmStore]:
    """The ORM backend alone (not the contract suite's double-and-ORM ``store``), on a
    fake clock. The plan tests older than it open their own."""
    opened = OrmStore(clock=FakeClock())
    yield opened
    opened.close()

"""The routed-run suite runs once per backend of the contract's ``store`` fixture
(the reference double, then SQLite or PostgreSQL as the settings select)."""

from __future__ import annotations

import pytest

from storage import Store
from storage.routed.store import RoutedStore

from ..support import FakeClock


@pytest.fixture
def routed(store: Store, clock: FakeClock) -> RoutedStore:
    # The suite's clock is one axis that moves as time passes: wall and monotonic
    # together (test_clock.py moves them apart).
    return RoutedStore(store, monotonic=clock)

"""The routed-run suite runs once per backend of the contract's ``store`` fixture
(the reference double, then SQLite or PostgreSQL as the settings select)."""

from __future__ import annotations

import pytest

from storage import Store
from storage.routed.store import RoutedStore


@pytest.fixture
def routed(store: Store) -> RoutedStore:
    return RoutedStore(store)

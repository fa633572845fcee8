"""Fixtures of the storage suite: a fake clock and one fresh store per backend.

``store`` runs each test once on the reference double ("memory") and once on the
Django ORM backend over the test database ("sqlite", or "postgresql" when DATABASE_URL
selects PostgreSQL). The ORM needs a real transaction per test (``transaction=True``):
the cases commit, open Views on the ``view`` alias and use threads, none of which work
inside pytest-django's wrapping transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.conf import settings

from storage import Store

from .support import FakeClock

# The ORM backend's ID names the engine the settings select: "sqlite" by default,
# "postgresql" when DATABASE_URL names one (test IDs read test_claim_rules[postgresql]).
ORM = "postgresql" if settings.POSTGRES else "sqlite"

BACKENDS = [
    "memory",
    pytest.param(
        ORM,
        marks=pytest.mark.django_db(transaction=True, databases=["default", "view"]),
    ),
]


def open_store(backend: str, clock: FakeClock) -> Store:
    if backend == "memory":
        from storage.memory import MemoryStore

        return MemoryStore(clock=clock)
    # Imported here: the ORM backend needs Django's apps loaded.
    from storage.orm import OrmStore

    return OrmStore(clock=clock)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[Store]:
    opened = open_store(request.param, clock)
    yield opened
    opened.close()


@pytest.fixture
def reopen(
    request: pytest.FixtureRequest, store: Store, clock: FakeClock
) -> Iterator[Callable[[], Store]]:
    """Opens a new store over the same data, as after a restart. The memory double has
    no data outside its object, so it reopens as itself."""
    backend = request.node.callspec.params["store"]
    opened: list[Store] = []

    def again() -> Store:
        if backend == "memory":
            return store
        store.close()
        opened.append(open_store(backend, clock))
        return opened[-1]

    yield again
    for extra in opened:
        extra.close()

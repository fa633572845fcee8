"""Test-wide setup.

conduit.settings switches to test behaviour on its own (pytest-django imports it before
any conftest.py, and it sees pytest loaded). Exporting CONDUIT_TESTING=1 here gives the
same settings to processes that tests start, which do not import pytest.
"""

import os

import pytest

os.environ["CONDUIT_TESTING"] = "1"


def pytest_sessionstart(session: pytest.Session) -> None:
    # Django replaces an old test database by deleting only the main file. A -wal left by
    # a crashed run would then be replayed into the new, unrelated database.
    if session.config.getoption("reuse_db", default=False):
        return
    from django.conf import settings

    for suffix in ("", "-wal", "-shm"):
        path = settings.TEST_SQLITE_PATH.with_name(settings.TEST_SQLITE_PATH.name + suffix)
        path.unlink(missing_ok=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # The per-process test database (see conduit.settings) is dropped by Django, but its
    # -wal and -shm companions are not; remove them so data/ does not fill up.
    if session.config.getoption("reuse_db", default=False):
        return
    from django.conf import settings

    for suffix in ("-wal", "-shm"):
        path = settings.TEST_SQLITE_PATH.with_name(settings.TEST_SQLITE_PATH.name + suffix)
        path.unlink(missing_ok=True)

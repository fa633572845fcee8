"""Settings of the test suite: pytest-django loads this module (``DJANGO_SETTINGS_MODULE``
in pyproject.toml), before any conftest.py and before Django reads a setting.

It says "this is a test run" explicitly instead of ``conduit.settings`` guessing it from
the modules loaded: ``CONDUIT_TESTING`` is set before the project's settings read it,
and in ``os.environ``, so the processes tests start (``manage.py``, ``python -c``
children that name ``conduit.settings`` themselves) get the same test settings: the
per-process test database, fast hashers, no collectstatic.
"""

import hashlib
import os
from pathlib import Path

# Forced, not defaulted: a CONDUIT_TESTING=0 left in the shell must never point the
# suite at the development database.
os.environ["CONDUIT_TESTING"] = "1"

# An xdist worker inherits the names conduit.settings exported for its parent's process
# (the test database per process: CONDUIT_TEST_SQLITE_PATH, CONDUIT_TEST_DATABASE); it
# drops them so that conduit.settings names its own, as for any pytest process. A name
# the user set (not ending in the parent's pid) is kept, and so is the worker's own in
# the processes its tests start (they inherit PYTEST_XDIST_WORKER too, and the mark).
if os.environ.get("PYTEST_XDIST_WORKER") and "CONDUIT_TEST_WORKER_PID" not in os.environ:
    os.environ["CONDUIT_TEST_WORKER_PID"] = str(os.getpid())
    for _name in ("CONDUIT_TEST_SQLITE_PATH", "CONDUIT_TEST_DATABASE"):
        _value = os.environ.get(_name, "")
        if _value.removesuffix(".sqlite3").endswith(f"_{os.getppid()}"):
            del os.environ[_name]

# The test database files (one per process, data/test_conduit_<pid>.sqlite3) live on
# tmpfs when the machine has one: the connections still ask for synchronous=FULL, as in
# production, but a commit's fsync costs 0.01 ms there instead of 6.5 ms on this
# machine's disk (measured; the suite commits tens of thousands of times). The same
# choice as the PostgreSQL throwaway cluster's fsync=off (scripts/pg-throwaway.sh): the
# files are thrown away, a crash loses nothing we keep. A CONDUIT_DATA_DIR in the
# environment wins; the folder is per checkout, so two worktrees never share one.
_TMPFS = Path("/dev/shm")  # noqa: S108 - the folder below is made 0700 (private_folder)
if "CONDUIT_DATA_DIR" not in os.environ and _TMPFS.is_dir() and os.access(_TMPFS, os.W_OK):
    _checkout = hashlib.sha256(str(Path(__file__).resolve().parents[1]).encode()).hexdigest()
    os.environ["CONDUIT_DATA_DIR"] = str(_TMPFS / f"conduit-tests-{os.getuid()}-{_checkout[:12]}")

from conduit.settings import *  # noqa: E402, F403 - the project's settings, under test

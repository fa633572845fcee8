"""Run storage code in another OS process against the test database.

The child imports Django with the same settings; ``conduit.settings`` exports the test
database (``CONDUIT_TEST_SQLITE_PATH``, or ``CONDUIT_TEST_DATABASE`` with the
``DATABASE_URL`` on PostgreSQL), so the child opens the very database the test process
is using. Children coordinate with the parent through files in ``tmp_path``, never
through sleeps alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PRELUDE = """
import os, sys, time, json
from pathlib import Path
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conduit.settings")
django.setup()
from storage import *
from storage.orm import OrmStore


def start_line(ready, go):
    # Say "imported and ready", then wait for the parent's start signal.
    Path(ready).touch()
    while not Path(go).exists():
        time.sleep(0.001)
"""


def spawn(body: str, *args: str) -> subprocess.Popen[str]:
    """Start a Python child running PRELUDE + body; ``sys.argv[1:]`` are ``args``."""
    code = PRELUDE + textwrap.dedent(body)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "conduit.settings"}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, timeout: float = 30.0) -> None:
    """Block until a child creates ``path`` (its "I am holding the lock" signal)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"child never created {path}")
        time.sleep(0.01)


def release(ready: list[Path], go: Path, timeout: float = 60.0) -> None:
    """Wait until every child is ready (Django imported, store open), then start them
    all at once, so they really compete."""
    for path in ready:
        wait_for(path, timeout)
    go.touch()


def finish(proc: subprocess.Popen[str], timeout: float = 60.0) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{err}"
    return out

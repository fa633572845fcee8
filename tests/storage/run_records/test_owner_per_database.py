"""On SQLite, run ownership belongs to the database file, whatever the data folder
(issue 20): two processes that open one database with different CONDUIT_DATA_DIR (the
database path set apart with CONDUIT_SQLITE_PATH) must not both own a run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from storage import Busy
from storage.ops.run_record_sessions import OrmRunStore
from storage.orm import OrmStore

from ..support.proc import PRELUDE, ROOT, finish, wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
    pytest.mark.multiprocess,
    pytest.mark.sqlite_only,
]

HOLDER = """
from storage.ops.run_record_sessions import OrmRunStore
session = OrmRunStore(OrmStore()).acquire(sys.argv[1])
Path(sys.argv[2]).touch()
time.sleep(600)  # until killed
"""

TRY_ONCE = """
from storage.ops.run_record_sessions import OrmRunStore
try:
    OrmRunStore(OrmStore()).acquire(sys.argv[1]).close()
    print("acquired")
except Busy:
    print("busy")
"""


def spawn_in(data_dir: Path, body: str, *args: str) -> subprocess.Popen[str]:
    """A child on the test database (exported by conduit.settings) with its own data
    folder."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "conduit.settings"}
    env["CONDUIT_DATA_DIR"] = str(data_dir)
    return subprocess.Popen(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_data_folders_over_one_database_share_run_ownership(tmp_path: Path) -> None:
    held = tmp_path / "held"
    holder = spawn_in(tmp_path / "data-a", HOLDER, "run-1", str(held))
    try:
        wait_for(held)
        # This process's data folder is neither: ownership must still be seen.
        runs = OrmRunStore(OrmStore())
        with pytest.raises(Busy):
            runs.acquire("run-1")
        assert runs.owned(["run-1"]) == {"run-1"}
        assert finish(spawn_in(tmp_path / "data-b", TRY_ONCE, "run-1")).split() == ["busy"]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=30)
    assert finish(spawn_in(tmp_path / "data-b", TRY_ONCE, "run-1")).split() == ["acquired"]

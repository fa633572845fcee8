"""Processes and folders: fresh data folders, the environment of child processes, and
running `manage.py` commands and `bench.child` tasks in them.

A child's environment is built from scratch for the folder it works on (never the
parent's CONDUIT_* or DATABASE_URL), so a benchmark can only touch the database it was
given, even when the harness itself runs under pytest (CONDUIT_TESTING=1).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
MANAGE = str(ROOT / "manage.py")
DB_NAME = "conduit.sqlite3"

# Variables a child must not inherit: they would point it at another database or
# switch it to test settings.
_STRIPPED = ("CONDUIT_", "DATABASE_URL", "DJANGO_SETTINGS_MODULE", "PYTEST_")

_started = time.monotonic()


def log(message: str) -> None:
    """Progress on stderr, stamped with the seconds since the run began."""
    sys.stderr.write(f"[bench {time.monotonic() - _started:7.1f}s] {message}\n")
    sys.stderr.flush()


@dataclass(frozen=True)
class DataDir:
    """One data folder: an SQLite database (or a PostgreSQL URL) and its artifacts."""

    path: Path
    database_url: str = ""

    @property
    def db(self) -> Path:
        return self.path / DB_NAME

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_STRIPPED)}
        env.update(
            CONDUIT_TESTING="0",
            CONDUIT_DEBUG="0",
            CONDUIT_DATA_DIR=str(self.path),
            CONDUIT_SQLITE_PATH=str(self.db),
            CONDUIT_LOG_LEVEL="WARNING",
            DJANGO_SETTINGS_MODULE="bench.settings",
            PYTHONPATH=str(ROOT),
            PYTHONUNBUFFERED="1",
        )
        if self.database_url:
            env["DATABASE_URL"] = self.database_url
        env.update(extra)
        return env

    def on_postgres(self, url: str) -> DataDir:
        return DataDir(self.path, url)


@dataclass
class Workspace:
    """The run's temporary root; every benchmark gets fresh folders under it."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="conduit-bench-")))
    keep: bool = False
    reused: list[str] = field(default_factory=list)  # folders an earlier run built
    _migrated: DataDir | None = field(default=None, init=False, repr=False)

    def fresh(self, name: str) -> DataDir:
        path = self.root / name
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return DataDir(path)

    def copy_of(self, source: DataDir, name: str) -> DataDir:
        """A fresh folder holding a copy of ``source`` (a closed, checkpointed database),
        written back to disk before it is returned (see ``settle``)."""
        target = self.fresh(name)
        for item in source.path.iterdir():
            if item.name.startswith(DB_NAME + "-"):
                continue  # -wal/-shm: the source was checkpointed and closed
            if item.is_dir():
                shutil.copytree(item, target.path / item.name)
            else:
                shutil.copy2(item, target.path / item.name)
        settle()
        return target

    def migrated(self, name: str, database_url: str = "") -> DataDir:
        """A fresh folder with a migrated database. On PostgreSQL (``database_url``)
        migrate runs on that database; on SQLite the folder is a copy of one migrated
        once per run: a migrate is a Django start and every migration (4 s of CPU on
        this machine), the copy milliseconds."""
        if database_url:
            data = self.fresh(name).on_postgres(database_url)
            manage(data, "migrate", "--noinput", "-v", "0")
            return data
        if self._migrated is None:
            template = self.fresh("migrated")
            manage(template, "migrate", "--noinput", "-v", "0")
            checkpoint(template)
            self._migrated = template
        return self.copy_of(self._migrated, name)

    def discard(self, data: DataDir) -> None:
        if not self.keep:
            shutil.rmtree(data.path, ignore_errors=True)

    def close(self) -> None:
        if self.keep:
            log(f"kept the data folders in {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)


def checkpoint(data: DataDir) -> None:
    """Fold the WAL into the database file, so the folder can be copied as one file."""
    con = sqlite3.connect(data.db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        con.close()


def settle() -> None:
    """Write dirty pages back before measuring: after a copy of a few gigabytes the
    kernel flushes in the background for seconds, slowing whatever is measured then."""
    os.sync()


def manage(data: DataDir, *args: str, quiet: bool = True, timeout: float = 7200) -> str:
    """Run ``manage.py ARGS`` on ``data``; returns stdout, raises with stderr on failure."""
    proc = subprocess.run(  # noqa: S603 - our own manage.py with fixed arguments
        [PYTHON, MANAGE, *args],
        cwd=ROOT,
        env=data.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if quiet else None,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def child(data: DataDir, task: str, timeout: float = 7200, **args: Any) -> Any:
    """Run ``bench.child TASK`` on ``data`` and return the JSON it prints last."""
    proc = subprocess.run(  # noqa: S603 - our own module with fixed arguments
        [PYTHON, "-m", "bench.child", task, json.dumps(args)],
        cwd=ROOT,
        env=data.env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"bench.child {task} failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def spawn(data: DataDir, task: str, **args: Any) -> subprocess.Popen[str]:
    """Start ``bench.child TASK`` with line-buffered pipes, for tasks that talk to the
    orchestrator while they run (benchmark 4)."""
    return subprocess.Popen(  # noqa: S603 - our own module with fixed arguments
        [PYTHON, "-m", "bench.child", task, json.dumps(args)],
        cwd=ROOT,
        env=data.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )

"""Faults a deployment meets, made real for the console tests: a read-only data folder
(for root too, who ignores file modes) and a full disk, each holding a copy of the test
database that the console's connections are pointed at while the test runs."""

from __future__ import annotations

import gc
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connections

from storage.default import reset_defaults

ALIASES = ("default", "view")


def _ok(*command: str) -> bool:
    return subprocess.run(command, capture_output=True, check=False).returncode == 0


def _unavailable(why: str) -> None:
    # CI runs as root on a machine that allows both; a local run without them cannot
    # make the fault, and says so. In CI that must fail, never pass quietly.
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


def _undo(command: tuple[str, ...]) -> None:
    # A connection whose setup failed (Django's init_command) is left to the garbage
    # collector with its file still open, which keeps the mount busy; a failed test's
    # traceback may hold it still: the mount is then detached at once and goes when
    # the file is closed.
    gc.collect()
    if _ok(*command) or (command[0] == "umount" and _ok("umount", "--lazy", *command[1:])):
        return
    raise AssertionError(f"{' '.join(command)} failed")


def copy_database(folder: Path) -> Path:
    """A copy of the test database in ``folder``, closed cleanly (no -wal, no -shm),
    as a stopped console leaves it."""
    connections.close_all()
    source = sqlite3.connect(connections["default"].settings_dict["NAME"])
    target_path = folder / "conduit.sqlite3"
    try:
        # VACUUM INTO, not backup(): a compact copy without the free pages an earlier
        # test's flushed rows left (test_bulk_at_scale's 10,050 Work grew the file past
        # the 4 MiB disk of full_disk, so the copy itself failed when it ran first).
        source.execute("VACUUM INTO ?", [str(target_path)])
    finally:
        source.close()
    target = sqlite3.connect(target_path)
    try:
        target.execute("PRAGMA journal_mode=WAL")
    finally:
        target.close()
    assert sorted(p.name for p in folder.iterdir()) == ["conduit.sqlite3"]
    return target_path


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` read-only for every user, root included: a read-only bind mount of
    itself, else the immutable attribute; a write into it is checked to fail."""
    if _ok("mount", "--bind", str(folder), str(folder)):
        if not _ok("mount", "-o", "remount,bind,ro", str(folder)):
            _ok("umount", str(folder))
            _unavailable(f"cannot remount {folder} read-only")
        undo = ("umount", str(folder))
    elif _ok("chattr", "+i", str(folder)):
        undo = ("chattr", "-i", str(folder))
    else:
        _unavailable("neither a read-only bind mount nor chattr +i is allowed here")
    try:
        try:
            (folder / "probe").touch()
        except OSError:
            pass
        else:
            raise AssertionError(f"{folder} is still writable")
        yield
    finally:
        _undo(undo)


@contextmanager
def full_disk(folder: Path, size_kib: int = 4096) -> Iterator[Path]:
    """A small tmpfs mounted on ``folder``; the caller copies the database in and then
    calls ``fill`` (below) to use up what is left."""
    if not _ok("mount", "-t", "tmpfs", "-o", f"size={size_kib}k,mode=0700", "tmpfs", str(folder)):
        _unavailable("mounting a tmpfs is not allowed here")
    try:
        yield folder
    finally:
        connections.close_all()
        _undo(("umount", str(folder)))


def fill(folder: Path) -> None:
    """Write into ``folder`` until its filesystem has no byte left."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    assert shutil.disk_usage(folder).free == 0


@contextmanager
def console_database(path: Path) -> Iterator[None]:
    """Both connection aliases (and the store over them) opened at ``path`` meanwhile."""
    names = {alias: connections[alias].settings_dict["NAME"] for alias in ALIASES}
    connections.close_all()
    for alias in ALIASES:
        connections[alias].settings_dict["NAME"] = str(path)
    reset_defaults()
    try:
        yield
    finally:
        connections.close_all()
        for alias in ALIASES:
            connections[alias].settings_dict["NAME"] = names[alias]
        reset_defaults()

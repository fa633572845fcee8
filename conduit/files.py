"""The data folder and the SQLite files are private to the user running the console.

They hold session keys, password hashes and the secret key, so the folder is 0700 and
the database files 0600 whatever the umask; looser modes left by an older version or a
careless copy are tightened at start, with a warning naming each path.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

FOLDER_MODE = 0o700
FILE_MODE = 0o600
# SQLite's companions of a WAL database; it creates them with the main file's mode.
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def private_folder(path: Path) -> None:
    """Create ``path`` (and missing parents) as 0700, or tighten it if it exists."""
    path.mkdir(parents=True, exist_ok=True)
    _tighten(path, FOLDER_MODE)


def private_sqlite_files(database: Path) -> None:
    """Create the database file 0600 if absent (SQLite then gives its -wal and -shm the
    same mode), and tighten it and any companion files that exist."""
    try:
        fd = os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        pass
    else:
        # The umask may have taken bits away from 0600 (a 0o277 umask leaves 0400).
        os.fchmod(fd, FILE_MODE)
        os.close(fd)
    for suffix in SQLITE_SUFFIXES:
        _tighten(database.with_name(database.name + suffix), FILE_MODE)


def _tighten(path: Path, mode: int) -> None:
    try:
        current = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if current != mode:
        os.chmod(path, mode)
        log.warning("%s had mode %04o; set it to %04o (it holds secrets)", path, current, mode)

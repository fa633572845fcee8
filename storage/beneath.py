"""Open a file beneath a directory without following any symbolic link.

The artifact store serves whatever lies under its root to any viewer, so a link planted
there (to the secret key, the SQLite file, /etc/passwd) must not be followed, at any
depth. ``O_NOFOLLOW`` only guards the last component of a path, so each component is
opened on its own, relative to its parent's descriptor: no path is ever resolved by
name again between the check and the use.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# What open() answers for a link (ELOOP) or a non-directory on the way (ENOTDIR).
_NOT_PLAIN = {errno.ELOOP, errno.ENOTDIR, errno.EISDIR}


class NotRegular(OSError):
    """A component is a symbolic link, or the target is not a regular file."""


def open_beneath(root: Path, parts: Sequence[str]) -> int:
    """A read-only descriptor of ``root/parts[0]/.../parts[-1]``, a regular file.

    ``root`` itself is configuration and may be reached through links; nothing below it
    may. Raises ``FileNotFoundError`` if a component is missing, ``NotRegular`` if one
    is a link or the file is not regular, other ``OSError`` as the system reports.
    """
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            below = _open(part, _DIRECTORY, directory)
            os.close(directory)
            directory = below
        fd = _open(parts[-1], _FILE, directory)
    finally:
        os.close(directory)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file", parts[-1])
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open(name: str, flags: int, directory: int) -> int:
    try:
        return os.open(name, flags, dir_fd=directory)
    except OSError as exc:
        if exc.errno in _NOT_PLAIN:
            raise NotRegular(exc.errno, "a symbolic link or not a regular file", name) from None
        raise

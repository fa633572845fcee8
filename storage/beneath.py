"""Open a file or a directory beneath a root without following any symbolic link.

The artifact store serves whatever lies under its root to any viewer, and the routed
runs' artifact workspace and control journal take files a worker may have planted, so
a link placed there (to the secret key, the SQLite file, /etc/passwd) must not be
followed, at any depth. ``O_NOFOLLOW`` only guards the last component of a path, so
each component is opened on its own, relative to its parent's descriptor: no path is
ever resolved by name again between the check and the use.

A hard link is no symbolic link, but it is as bad in a served file: whoever can write
beneath the root can link any file the server can read (on the same file system) and
have it served. Readers that serve content ask for ``single_link``: a file with more
than one name is refused (``st_nlink > 1``, checked on the opened descriptor).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# What open() answers for a link (ELOOP) or a non-directory on the way (ENOTDIR).
_NOT_PLAIN = {errno.ELOOP, errno.ENOTDIR, errno.EISDIR}


class NotRegular(OSError):
    """A component is a symbolic link, or the target is not a regular file.

    ``is_link`` says whether the refused component was a symbolic link when it was
    looked at after the refusal (for the message and the error class; the refusal
    itself is the open's, so a link swapped in after any earlier check is refused all
    the same)."""

    is_link: bool = False


def open_dir_beneath(root: Path, parts: Sequence[str], *, create: int | None = None) -> int:
    """A read-only descriptor of the directory ``root/parts[0]/.../parts[-1]``.

    ``root`` itself is configuration and may be reached through links; nothing below
    it may. With ``create`` (a mode), a missing directory on the way is made with that
    mode (the umask permitting) and its parent fsynced, so the chain is durable.
    Raises ``FileNotFoundError`` if one is missing (without ``create``), ``NotRegular``
    if one is a link or not a directory.
    """
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            below = open_dir_at(directory, part, create=create)
            os.close(directory)
            directory = below
    except BaseException:
        os.close(directory)
        raise
    return directory


def walk_beneath(root: Path) -> Iterator[tuple[int, str, str, os.stat_result]]:
    """Every entry beneath ``root`` that is not a directory, depth first by name, as
    (its directory's descriptor, its relative POSIX path, its name, its ``lstat``).
    Directories are entered through descriptors, never through a link (a link is
    yielded, not entered); the descriptor stays open until the next item, so the
    caller can act on the entry relative to it (``dir_fd=``)."""
    top = open_dir_beneath(root, ())
    try:
        yield from _walk(top, "")
    finally:
        os.close(top)


def _walk(directory: int, prefix: str) -> Iterator[tuple[int, str, str, os.stat_result]]:
    for name in sorted(os.listdir(directory)):
        try:
            st = os.stat(name, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            yield directory, f"{prefix}{name}", name, st
            continue
        try:
            below = open_dir_at(directory, name)
        except (NotRegular, FileNotFoundError):
            continue  # swapped for a link or removed since the stat
        try:
            yield from _walk(below, f"{prefix}{name}/")
        finally:
            os.close(below)


def open_beneath(root: Path, parts: Sequence[str], *, single_link: bool = False) -> int:
    """A read-only descriptor of ``root/parts[0]/.../parts[-1]``, a regular file.

    ``root`` itself is configuration and may be reached through links; nothing below it
    may. Raises ``FileNotFoundError`` if a component is missing, ``NotRegular`` if one
    is a link or the file is not regular (or, with ``single_link``, has another hard
    link), other ``OSError`` as the system reports.
    """
    directory = open_dir_beneath(root, parts[:-1])
    try:
        return open_file_at(directory, parts[-1], single_link=single_link)
    finally:
        os.close(directory)


def open_file_at(
    directory: int, name: str, flags: int = _FILE, *, single_link: bool = False
) -> int:
    """A descriptor of the regular file ``name`` in the open ``directory``, never
    through a link; blocking again once opened. With ``single_link``, a file with more
    than one hard link is refused (``NotRegular``, errno EMLINK)."""
    fd = _open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, directory)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file", name)
        if single_link and st.st_nlink > 1:
            raise NotRegular(errno.EMLINK, f"{st.st_nlink} hard links: not served", name)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_dir_at(directory: int, name: str, *, create: int | None = None) -> int:
    """A descriptor of the subdirectory ``name`` of the open ``directory``, never
    through a link (``NotRegular`` for a link or a non-directory). With ``create`` (a
    mode), a missing one is made (the umask permitting) and ``directory`` fsynced."""
    try:
        return _open(name, _DIRECTORY, directory)
    except FileNotFoundError:
        if create is None:
            raise
    # Another process may have made it first; it may not have fsynced yet.
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, create, dir_fd=directory)
    os.fsync(directory)
    return _open(name, _DIRECTORY, directory)


def _open(name: str, flags: int, directory: int) -> int:
    try:
        return os.open(name, flags, dir_fd=directory)
    except OSError as exc:
        if exc.errno in _NOT_PLAIN:
            refused = NotRegular(exc.errno, "a symbolic link or not a regular file", name)
            with contextlib.suppress(OSError):
                refused.is_link = stat.S_ISLNK(
                    os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode
                )
            raise refused from None
        raise

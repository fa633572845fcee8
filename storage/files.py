"""Durable file operations: the one place storage calls fsync.

The artifact store, backup bundles, a restore and a ``pg_dump`` all make files that must
survive a crash or power loss once a later step (a manifest, a rename, a commit) says
they exist. On a local filesystem that journals renames, a file is durable after its
own fsync and the fsync of the directory holding its entry; a directory chain is
durable after each new directory's parent was fsynced. These helpers say exactly that
and nothing more; which file must be durable before which step is their callers' rule.

``write_at`` is the one atomic write, relative to an open directory (so no link on the
way is followed after the caller opened it): a private temporary file, fsynced, then
either renamed over the name or linked to it once with link(2), which fails if the
name exists, so of several racing writers exactly one publishes and a reader never
sees a half-written file. ``publish`` and ``read_or_create_secret`` are built on it,
as are the routed runs' control journal and journal keys.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import IO, Any

__all__ = [
    "fsync_dir",
    "fsync_file",
    "fsync_open",
    "fsync_tree",
    "make_dirs",
    "publish",
    "read_or_create_secret",
    "write_at",
]


def fsync_open(file: IO[Any]) -> None:
    """Flush an open file's buffer and its content to stable storage."""
    file.flush()
    os.fsync(file.fileno())


def fsync_file(path: Path) -> None:
    """Flush ``path``'s content to stable storage (its directory entry is the caller's)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Flush the entries of the directory ``path`` (files created, renamed or removed)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """fsync every directory under ``root`` (deepest first) and root's parent, so every
    entry made under it is durable before a manifest (or a database rename) publishes it."""
    for directory, _subdirs, _files in os.walk(root, topdown=False):
        fsync_dir(Path(directory))
    fsync_dir(root.parent)


def make_dirs(path: Path) -> None:
    """``mkdir -p`` that fsyncs the parent of each directory on the way, so the chain
    of entries from an existing ancestor down to ``path`` is durable."""
    missing: list[Path] = []
    while not path.is_dir():
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        directory.mkdir(exist_ok=True)
        # Also when another process created it first: it may not have fsynced yet.
        fsync_dir(directory.parent)


def publish(path: Path, content: bytes) -> None:
    """Write ``path`` atomically and durably: temp file, fsync, rename, fsync dir. A
    reader sees the old file (or none) or the whole new one, never a part."""
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        write_at(directory, path.name, content, mode=0o666)
    finally:
        os.close(directory)


def write_at(
    directory: int, name: str, content: bytes, *, mode: int = 0o600, replace: bool = True
) -> bool:
    """Publish ``name`` in the open ``directory`` atomically and durably.

    The content goes to a temporary file of this call's own (``O_EXCL``, never through
    a link; a dot name a reader skips), is fsynced, and is then renamed over ``name``
    (``replace``) or hard-linked to it (not ``replace``: False, nothing changed, if the
    name exists); the directory is fsynced last. A process killed at any point leaves
    ``name`` as it was or holding the whole content, and at worst a stray temporary
    file, which no later write collides with (its name is unique).
    """
    temp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, mode, dir_fd=directory)
    created = True
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
            fsync_open(out)
        if replace:
            os.rename(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
        else:
            try:
                os.link(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
            except FileExistsError:
                created = False
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=directory)
    os.fsync(directory)
    return created


def read_or_create_secret(path: Path, nbytes: int = 50) -> str:
    """The secret stored in ``path``, created once (mode 0600) if absent.

    Several processes may start together (gunicorn workers, ``make run`` steps), so the
    new secret is written to a private temporary file and published with link(2), which
    fails if another process published first; the loser reads the winner's secret. A
    reader therefore never sees a half-written file. An empty file is an error
    (``ValueError``): deleting it makes a new secret.
    """
    try:
        return _read_secret(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    secret = (secrets.token_urlsafe(nbytes) + "\n").encode()
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        # Another process published first: keep its secret, drop ours.
        write_at(directory, path.name, secret, replace=False)
    finally:
        os.close(directory)
    return _read_secret(path)


def _read_secret(path: Path) -> str:
    value = path.read_text().strip()
    if not value:
        raise ValueError(f"{path} is empty; delete it to generate a new secret")
    return value

"""``ArtifactWorkspace``: what a worker hands back, accepted only if it is safe.

A worker is untrusted and writes into its run's artifact directory. Accepting a path
means: the path passes the rule of ``storage.routed.paths``; every component is
checked without following links (``lstat``), and then opened one at a time relative to
its parent's descriptor with ``O_NOFOLLOW`` (``storage.beneath``), so a link swapped in
after the check is refused by the open itself; the file opened is a regular file with
one link (a hard link would make a file outside the root readable through it), not
group- or world-writable, at most 25 MiB; the bytes hashed are the bytes of the
descriptor opened, and a file that changes while it is read is refused. The metadata
(SHA-256, size, media type by extension, creating attempt) is then recorded through
the routed-run store, which checks the 100 MiB per run in the same transaction. Each
refusal is its error class (``InvalidPath``, ``SymlinkRejected``,
``UnsafePermissions``, ``SizeCapExceeded``) and records nothing.

``remove_unreferenced`` deletes files that were never accepted, relative to directory
descriptors (it never follows a link; a planted link is itself removed, not its
target), and never one being written: a file modified within ``quiet_seconds``, or one
any process holds open (a write lease cannot be taken on it, where the system lets
this process ask), is kept.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import mimetypes
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from ..beneath import NotRegular, open_dir_beneath, open_file_at, walk_beneath
from .errors import InvalidPath, SizeCapExceeded, SymlinkRejected, UnsafePermissions
from .ids import ArtifactID, AttemptID, RunID, check_id
from .paths import ARTIFACT_MAX_PER_FILE, ARTIFACT_MAX_TOTAL, check_relative_path
from .records import ArtifactMetadata
from .rules.base import digest_key
from .store import RoutedStore

_CHUNK = 1 << 20
DEFAULT_MEDIA_TYPE = "application/octet-stream"
# A file younger than this may still be being written by the worker.
QUIET_SECONDS = 60.0
_PEEK = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def artifact_id_for(run_id: RunID, rel_path: str) -> ArtifactID:
    """One ID per (run, path): accepting the path again updates its record."""
    return ArtifactID(ArtifactID.prefix + digest_key("artifact", run_id, rel_path)[:32])


def media_type_of(rel_path: str) -> str:
    """Best effort, from the extension only (the content is the worker's)."""
    guessed, _encoding = mimetypes.guess_type(rel_path, strict=True)
    return guessed or DEFAULT_MEDIA_TYPE


def new_artifact_workspace(root: Path, run_id: RunID, *, store: RoutedStore) -> ArtifactWorkspace:
    """The workspace of ``run_id`` at ``root`` (made 0700 if absent; granting the
    worker's user access is the supervisor's part). ``root`` is configuration and may
    be reached through links; nothing below it may."""
    check_id(RunID, run_id)
    root = Path(root)
    root.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o700)
    if not root.is_dir():
        raise InvalidPath(f"the workspace root {root} is not a directory")
    return ArtifactWorkspace(root, run_id, store)


class ArtifactWorkspace:
    def __init__(self, root: Path, run_id: RunID, store: RoutedStore) -> None:
        self._root = root
        self.run_id = run_id
        self._store = store
        # Tests replace it to act between the check and the open (a swapped link).
        self.between_check_and_open: Callable[[str], None] = lambda _rel: None

    @property
    def root(self) -> Path:
        return self._root

    def list_metadata(self) -> list[ArtifactMetadata]:
        return self._store.view(lambda r: r.list_artifacts(self.run_id))

    def total_size(self) -> int:
        return sum(a.byte_size for a in self.list_metadata())

    # -- accepting -------------------------------------------------------------------------
    def validate_and_accept(self, rel_path: str, attempt_id: AttemptID) -> ArtifactMetadata:
        parts = check_relative_path(rel_path)
        check_id(AttemptID, attempt_id)
        self._check_no_link(parts)
        self.between_check_and_open(rel_path)
        fd = self._open(parts, rel_path)
        try:
            size, digest = self._hash(fd, rel_path)
        finally:
            os.close(fd)
        meta = ArtifactMetadata(
            artifact_id=artifact_id_for(self.run_id, rel_path),
            run_id=self.run_id,
            attempt_id=attempt_id,
            relative_path=rel_path,
            byte_size=size,
            digest=digest,
            media_type=media_type_of(rel_path),
            creating_attempt=attempt_id,
        )
        return self._store.transact(lambda r: r.accept_artifact(meta)).record

    def _check_no_link(self, parts: tuple[str, ...]) -> None:
        """The check: no component is a link, by ``lstat`` (never following one)."""
        path = self._root
        for depth, part in enumerate(parts, 1):
            path = path / part
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                raise InvalidPath(f"{'/'.join(parts[:depth])} does not exist") from None
            if stat.S_ISLNK(mode):
                raise SymlinkRejected(f"{'/'.join(parts[:depth])} is a symbolic link")

    def _open(self, parts: tuple[str, ...], rel_path: str) -> int:
        """The use: each component opened relative to its parent with ``O_NOFOLLOW``,
        so whatever was swapped in since the check, no link is followed."""
        try:
            directory = open_dir_beneath(self._root, parts[:-1])
            try:
                fd = open_file_at(directory, parts[-1])
            finally:
                os.close(directory)
        except NotRegular as exc:
            if exc.is_link or exc.errno == errno.ELOOP:
                raise SymlinkRejected(f"{rel_path}: a symbolic link on the path") from None
            raise InvalidPath(f"{rel_path} is not a regular file beneath the root") from None
        except FileNotFoundError:
            raise InvalidPath(f"{rel_path} does not exist") from None
        try:
            self._check_opened(os.fstat(fd), rel_path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _check_opened(self, st: os.stat_result, rel_path: str) -> None:
        if st.st_nlink != 1:
            raise SymlinkRejected(
                f"{rel_path} has {st.st_nlink} hard links: its content is reachable "
                "from outside the workspace"
            )
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise UnsafePermissions(
                f"{rel_path} is group- or world-writable (mode {stat.S_IMODE(st.st_mode):o})"
            )
        if st.st_size > ARTIFACT_MAX_PER_FILE:
            raise SizeCapExceeded(f"{rel_path} is {st.st_size} bytes, over {ARTIFACT_MAX_PER_FILE}")
        # An early answer for the run's cap; the store checks it again as it records.
        others = sum(a.byte_size for a in self.list_metadata() if a.relative_path != rel_path)
        if others + st.st_size > ARTIFACT_MAX_TOTAL:
            raise SizeCapExceeded(
                f"run {self.run_id} would hold {others + st.st_size} bytes of artifacts, "
                f"over {ARTIFACT_MAX_TOTAL}"
            )

    def _hash(self, fd: int, rel_path: str) -> tuple[int, str]:
        """SHA-256 and size of what ``fd`` holds, reading at most the cap + 1 byte; a
        file that grew past the cap or changed while read is refused."""
        before = os.fstat(fd)
        sha = hashlib.sha256()
        size = 0
        while size <= ARTIFACT_MAX_PER_FILE:
            chunk = os.read(fd, min(_CHUNK, ARTIFACT_MAX_PER_FILE + 1 - size))
            if not chunk:
                break
            sha.update(chunk)
            size += len(chunk)
        if size > ARTIFACT_MAX_PER_FILE:
            raise SizeCapExceeded(f"{rel_path} grew past {ARTIFACT_MAX_PER_FILE} bytes")
        after = os.fstat(fd)
        if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns) or (
            size != after.st_size
        ):
            raise InvalidPath(f"{rel_path} changed while it was read; accept it once written")
        return size, sha.hexdigest()

    # -- cleaning up -----------------------------------------------------------------------
    def remove_unreferenced(self, *, quiet_seconds: float = QUIET_SECONDS) -> list[str]:
        """Delete every file (or planted link) beneath the root that was never
        accepted and is not being written; returns their paths, sorted. Directories
        are left in place."""
        accepted = {a.relative_path for a in self.list_metadata()}
        quiet_before = time.time() - quiet_seconds
        removed: list[str] = []
        for directory, rel, name, st in walk_beneath(self._root):
            if rel in accepted or st.st_mtime > quiet_before:
                continue
            if stat.S_ISREG(st.st_mode) and _held_open(directory, name):
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=directory)
                removed.append(rel)
        return sorted(removed)


def _held_open(directory: int, name: str) -> bool:
    """True when another descriptor of the file is open (a writer may be at work):
    Linux grants a write lease only on a file nobody else holds open. Where the lease
    cannot be asked for (another user's file, leases off), the quiet period decides."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory
        )
    except OSError:
        return True  # vanished or unreadable: not ours to judge now
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
    except OSError as exc:
        return exc.errno in (errno.EAGAIN, errno.EBUSY)
    else:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        return False
    finally:
        os.close(fd)

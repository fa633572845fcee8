"""Run ownership that ends with the owning process: OS file locks and PostgreSQL advisory
locks. Each ``Owners`` takes a run (``take`` -> ``Hold``, or ``Busy`` at once) and says
which runs are held (``held``) without taking or disturbing any lock.

SQLite (``FileLocks``): one Linux open-file-description (OFD) lock per run on
``<lock_dir>/<sha256(database path NUL run ID)>.lock``. OFD locks conflict between open
file descriptions, so two acquires in one process conflict as across processes (classic
POSIX locks would not, and any ``close`` of the file by the process would drop them).
Closing the descriptor or the process dying releases the lock. Unlike the spec's
FileStore, ``close`` removes the file (while still holding the lock, and an acquire
locks only the file still linked at the path), so files do not pile up one per run
ever owned; a holder that dies leaves its file for the next owner to remove.
``F_OFD_GETLK`` on a separate read-only descriptor asks whether a lock is held without
taking it. The database path is hashed in so two databases in one
data directory (the development and the test database) never share ownership.

PostgreSQL (``AdvisoryLocks``): ``pg_try_advisory_lock(classid, objid)`` on a dedicated
autocommit connection held for the Session's life; the two int4 keys are the first 8
bytes of ``sha256("conduit.run\\0" + run ID)``. The two-key form is listed in
``pg_locks`` with ``objsubid = 2``, a namespace apart from the one-bigint writers' lock
(``storage.orm.store.WRITERS_LOCK``, ``objsubid = 1``). The server releases the lock when the
connection ends, including when the process dies. ``held`` reads ``pg_locks``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import struct
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import Busy, Unavailable

if TYPE_CHECKING:
    import psycopg


class Hold(Protocol):
    """One run's ownership, held until ``release``."""

    def check(self) -> None:
        """Raise ``Unavailable`` if the ownership was lost (PostgreSQL connection cut)."""
        ...

    def release(self) -> None: ...


class Owners(Protocol):
    def take(self, run_id: str) -> Hold:
        """Take the run's ownership, or raise ``Busy`` at once if it is held."""
        ...

    def held(self, run_ids: set[str]) -> set[str]:
        """Which of ``run_ids`` are held now, by anyone; takes and disturbs nothing."""
        ...


# -- SQLite: Linux OFD locks ------------------------------------------------------------

# struct flock on 64-bit Linux: short l_type, short l_whence, off_t l_start, off_t l_len,
# pid_t l_pid, padded to 32 bytes. l_start = l_len = 0 locks the whole file; l_pid must
# be 0 for OFD locks.
_FLOCK = struct.Struct("@hhqqi4x")
_OFD = sys.platform == "linux" and hasattr(os, "O_CLOEXEC")
_TAKE_ROUNDS = 16


def _flock(kind: int) -> bytes:
    return _FLOCK.pack(kind, os.SEEK_SET, 0, 0, 0)


class FileLocks:
    def __init__(self, lock_dir: Path, database: Path) -> None:
        self.lock_dir = lock_dir
        self._database = str(database).encode("utf-8", "surrogateescape")

    def path(self, run_id: str) -> Path:
        """The lock file of ``run_id`` (it may not exist yet)."""
        digest = hashlib.sha256(self._database + b"\0" + run_id.encode("utf-8")).hexdigest()
        return self.lock_dir / f"{digest}.lock"

    def take(self, run_id: str) -> Hold:
        import fcntl

        if not _OFD or not hasattr(fcntl, "F_OFD_SETLK"):
            # The spec: platforms without the required locks refuse sessions rather than
            # run without ownership.
            raise Unavailable("run ownership needs Linux OFD locks (F_OFD_SETLK)")
        path = self.path(run_id)
        # A releasing owner unlinks its file before it unlocks (``_FileHold.release``), so
        # the lock we win may be on a file no longer at ``path``: then nobody can see it,
        # and another acquire may already hold a new file there. Lock only a file that
        # is still the one at ``path``; a few rounds suffice (each needs a release).
        for _ in range(_TAKE_ROUNDS):
            try:
                self.lock_dir.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as exc:
                raise Unavailable(f"cannot open the lock file of run {run_id!r}: {exc}") from exc
            try:
                fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _flock(fcntl.F_WRLCK))
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    raise Busy(f"run {run_id!r} is owned by another session") from None
                raise Unavailable(f"cannot lock run {run_id!r}: {exc}") from exc
            if _same_file(fd, path):
                return _FileHold(fd, path)
            os.close(fd)
        raise Unavailable(f"the lock file of run {run_id!r} kept being replaced")

    def held(self, run_ids: set[str]) -> set[str]:
        import fcntl

        if not _OFD or not hasattr(fcntl, "F_OFD_GETLK"):
            return set()  # no lock can have been taken here either
        out = set()
        for run_id in run_ids:
            try:
                # Read-only and separate: F_OFD_GETLK only tests, and closing this
                # descriptor cannot release a lock held through another one.
                fd = os.open(self.path(run_id), os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # never acquired with this lock directory
            except OSError as exc:
                raise Unavailable(f"cannot open the lock file of run {run_id!r}: {exc}") from exc
            try:
                answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _flock(fcntl.F_WRLCK))
            except OSError as exc:
                raise Unavailable(f"cannot test the lock of run {run_id!r}: {exc}") from exc
            finally:
                os.close(fd)
            if _FLOCK.unpack(answer)[0] != fcntl.F_UNLCK:
                out.add(run_id)
        return out


def _same_file(fd: int, path: Path) -> bool:
    try:
        linked = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (linked.st_dev, linked.st_ino)


class _FileHold:
    def __init__(self, fd: int, path: Path) -> None:
        self._fd = fd
        self._path = path

    def check(self) -> None:
        """An OFD lock lasts as long as its descriptor, which only ``release`` closes."""

    def release(self) -> None:
        # Unlink while still holding the lock, so lock files do not pile up (one per run
        # ever owned); only the owner unlinks, so the file at the path is always the one
        # its owner holds, and ``held`` never tests a stale one. A holder that dies
        # leaves its file; the next owner removes it.
        try:
            os.unlink(self._path)
        except FileNotFoundError:
            pass
        finally:
            os.close(self._fd)  # the last descriptor of the description: the lock goes


# -- PostgreSQL: session advisory locks -------------------------------------------------

# How long acquire may wait for its dedicated connection, and for the lock statement on
# it (pg_try_advisory_lock itself never waits for a holder): at most 20 s in all, within
# the spec's 30-second acquisition bound.
CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_MS = 10_000


def advisory_key(run_id: str) -> tuple[int, int]:
    """The (classid, objid) int4 pair of ``run_id``'s advisory lock."""
    digest = hashlib.sha256(b"conduit.run\0" + run_id.encode("utf-8")).digest()
    classid, objid = struct.unpack(">ii", digest[:8])
    return classid, objid


# The local pending check: runs this process holds or is acquiring, per database. A
# second acquire in the process answers Busy from here without opening a connection,
# and two racing acquires in one process never both reach the server.
_local_lock = threading.Lock()
_local: set[tuple[str, str]] = set()


class AdvisoryLocks:
    def __init__(self, using: str, view_using: str) -> None:
        from ..pg_url import settings_target

        self._using = using
        self._view_using = view_using
        target = settings_target(using)
        self._database = f"{target.host}:{target.port}/{target.name}"

    def _connect(self) -> psycopg.Connection[Any]:
        from ..pg_url import pg_connect, settings_target

        return pg_connect(
            settings_target(self._using),
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name="conduit run owner",
            options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
        )

    def take(self, run_id: str) -> Hold:
        local = (self._database, run_id)
        with _local_lock:
            if local in _local:
                raise Busy(f"run {run_id!r} is owned by another session of this process")
            _local.add(local)
        try:
            return _AdvisoryHold(self._lock(run_id), run_id, local)
        except BaseException:
            with _local_lock:
                _local.discard(local)
            raise

    def _lock(self, run_id: str) -> psycopg.Connection[Any]:
        import psycopg

        conn = self._connect()
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", advisory_key(run_id))
            got = row.fetchone()
        except psycopg.Error as exc:
            conn.close()
            raise Unavailable(f"cannot lock run {run_id!r}: {exc}") from exc
        if not (got and got[0]):
            conn.close()
            raise Busy(f"run {run_id!r} is owned by another session")
        return conn

    def held(self, run_ids: set[str]) -> set[str]:
        from django.db import connections

        from ..orm.errors import translate_errors

        # pg_locks lists granted locks as unsigned oids; ours are signed int4.
        wanted = {
            (classid & 0xFFFFFFFF, objid & 0xFFFFFFFF): run_id
            for run_id in run_ids
            for classid, objid in [advisory_key(run_id)]
        }
        with translate_errors(), connections[self._view_using].cursor() as cursor:
            cursor.execute(
                "SELECT classid::bigint, objid::bigint FROM pg_locks "
                "WHERE locktype = 'advisory' AND objsubid = 2 AND granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                "AND classid::bigint = ANY(%s)",
                [sorted({classid for classid, _ in wanted})],
            )
            return {wanted[key] for key in _pairs(cursor.fetchall()) if key in wanted}


def _pairs(rows: Iterable[tuple[Any, ...]]) -> Iterable[tuple[int, int]]:
    return ((int(classid), int(objid)) for classid, objid in rows)


class _AdvisoryHold:
    def __init__(self, conn: psycopg.Connection[Any], run_id: str, local: tuple[str, str]) -> None:
        self._conn = conn
        self._run_id = run_id
        self._local = local

    def check(self) -> None:
        import psycopg

        try:
            self._conn.execute("SELECT 1")
        except psycopg.Error as exc:
            raise Unavailable(
                f"lost the connection holding run {self._run_id!r}'s ownership ({exc}); "
                "another session may own it now: close this one and acquire again"
            ) from exc

    def release(self) -> None:
        import psycopg

        # Unlock first: closing the connection alone ends the server session, and its
        # locks, only a moment after close returns, so an acquire right after close
        # could still meet the lock. If the unlock fails the connection is gone anyway.
        try:
            self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", advisory_key(self._run_id))
        except psycopg.Error:
            pass
        finally:
            self._conn.close()
            with _local_lock:
                _local.discard(self._local)

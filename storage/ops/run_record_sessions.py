"""The Store/Session contract of ``durable-run-records.txt`` over the coordination store.

``run_store.acquire(run_id)`` returns a ``Session`` that owns the run exclusively until
``close()``; acquiring an owned run raises ``Busy`` at once, never waiting for the owner.
A Session's ``load``/``save`` are the Tx operations ``run_record``/``put_run_record``
run through the store's own ``view``/``transact``, so the CAS is the store's serializable
transaction and the console reads the same rows through ``view``. Ownership is separate
from those transactions and lives here:

- ``MemoryRunStore``: an in-process set per ``MemoryStore`` (the spec's MemoryStore:
  no cross-process ownership, no persistence).
- ``OrmRunStore`` on SQLite: one Linux OFD lock per run on a file in
  ``<database>-runlocks/`` beside the database file; on PostgreSQL: a session advisory
  lock on a connection the Session holds for its life (``storage.ops.run_record_locks``). Both
  end when the process dies, and both can be queried by ``owned`` without being taken.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

from ..api import Store
from ..errors import Busy, Closed, Invalid, NotFound, Unavailable
from ..readonly import view
from ..records import Guard, Nanos
from ..run_records.query import check_run_id
from ..run_records.records import DurableRunRecord
from .run_record_locks import AdvisoryLocks, FileLocks, Hold, Owners

if TYPE_CHECKING:
    from ..memory import MemoryStore
    from ..orm import OrmStore


@runtime_checkable
class Session(Protocol):
    """Exclusive ownership of one run from ``acquire`` until ``close``."""

    @property
    def run_id(self) -> str: ...

    def load(self) -> DurableRunRecord:
        """An isolated copy of the stored record; ``NotFound`` if there is none."""
        ...

    def save(self, record: DurableRunRecord, expected_revision: int) -> int:
        """Whole-record CAS (``Tx.put_run_record``); returns the new revision."""
        ...

    def close(self) -> None:
        """Release ownership; idempotent. ``load``/``save`` then raise ``Closed``."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


@runtime_checkable
class RunStore(Protocol):
    def acquire(self, run_id: str) -> Session:
        """``Busy`` at once if the run is owned anywhere; ``Invalid`` for a bad run ID."""
        ...

    def owned(self, run_ids: Iterable[str]) -> set[str]:
        """Which of ``run_ids`` a Session holds right now, in any process. Takes no
        lock and disturbs none, so asking can never make an ``acquire`` fail."""
        ...

    def close(self) -> None:
        """Close every Session this store handed out; later ``acquire`` is ``Closed``."""
        ...


class RunSession:
    """A Session over any ``Store``: ownership is the ``Hold`` it was given."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        hold: Hold,
        forget: _Forget,
        clock: Callable[[], Nanos] | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._run_id = run_id
        self._hold = hold
        self._forget = forget
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"<RunSession {self._run_id!r}{' closed' if self._closed else ''}>"

    @property
    def run_id(self) -> str:
        return self._run_id

    def _open(self) -> None:
        if self._closed:
            raise Closed(f"session of run {self._run_id!r} is closed")

    def load(self) -> DurableRunRecord:
        self._open()
        # A View: the owner is the only writer of this run, so the latest committed
        # state is the record, and reading it never waits for other runs' writers.
        stored = view(self._store, None, lambda tx: tx.run_record(self._run_id))
        if stored is None:
            raise NotFound(f"run {self._run_id!r} has no record")
        return stored.record

    def save(self, record: DurableRunRecord, expected_revision: int) -> int:
        self._open()
        if not isinstance(record, DurableRunRecord):
            raise Invalid(f"expected a DurableRunRecord, not {type(record).__name__}")
        if record.run_id != self._run_id:
            raise Invalid(
                f"record of run {record.run_id!r} saved by the session of {self._run_id!r}"
            )
        # Ownership still held (a PostgreSQL session can be cut by the server): a lost
        # owner must not write what a new owner may be writing. Lost is final: the
        # Session closes, so this process can acquire the run again.
        try:
            self._hold.check()
        except Unavailable:
            self.close()
            raise
        return self._store.transact(
            Guard(clock=self._clock), lambda tx: tx.put_run_record(record, expected_revision)
        )

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._hold.release()
        finally:
            self._forget(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class _Forget(Protocol):
    def __call__(self, session: RunSession) -> None: ...


class _RunStoreBase:
    """Acquire, the registry of open Sessions, and close, over an ``Owners``."""

    def __init__(
        self, store: Store, owners: Owners, clock: Callable[[], Nanos] | None = None
    ) -> None:
        self.store = store
        self._owners = owners
        # The clock of the saves' Guard (None: the store's own). A runtime on a virtual
        # clock passes it, or one save at the host's time would drag its history there:
        # Guard.now never decreases.
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: set[RunSession] = set()
        self._closed = False

    def acquire(self, run_id: str) -> Session:
        check_run_id(run_id)
        if self._closed:
            raise Closed("run store is closed")
        hold = self._owners.take(run_id)
        session = RunSession(self.store, run_id, hold, self._forget, self._clock)
        if not self._register(session):
            session.close()  # the store closed while this acquire was taking the lock
            raise Closed("run store is closed")
        return session

    def _register(self, session: RunSession) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._sessions.add(session)
            return True

    def owned(self, run_ids: Iterable[str]) -> set[str]:
        wanted = set(run_ids)
        for run_id in wanted:
            check_run_id(run_id)
        return self._owners.held(wanted) if wanted else set()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sessions = list(self._sessions)
        for session in sessions:
            session.close()

    def _forget(self, session: RunSession) -> None:
        with self._lock:
            self._sessions.discard(session)


class _MemoryOwners:
    """In-process ownership: the run IDs held, one set per MemoryStore."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: set[str] = set()

    def take(self, run_id: str) -> Hold:
        with self._lock:
            if run_id in self._held:
                raise Busy(f"run {run_id!r} is owned by another session")
            self._held.add(run_id)
        return _MemoryHold(self, run_id)

    def held(self, run_ids: set[str]) -> set[str]:
        with self._lock:
            return run_ids & self._held

    def drop(self, run_id: str) -> None:
        with self._lock:
            self._held.discard(run_id)


class _MemoryHold:
    def __init__(self, owners: _MemoryOwners, run_id: str) -> None:
        self._owners = owners
        self._run_id = run_id

    def check(self) -> None:
        """In-process ownership cannot be lost while the Session is open."""

    def release(self) -> None:
        self._owners.drop(self._run_id)


# Two MemoryRunStores over one MemoryStore share ownership, as two OrmRunStores over one
# database do; the registry goes away with the MemoryStore.
_MEMORY_OWNERS: weakref.WeakKeyDictionary[MemoryStore, _MemoryOwners] = weakref.WeakKeyDictionary()
_MEMORY_OWNERS_LOCK = threading.Lock()


class MemoryRunStore(_RunStoreBase):
    """The spec's MemoryStore: in-process ownership and CAS, no persistence."""

    def __init__(
        self, store: MemoryStore | None = None, *, clock: Callable[[], Nanos] | None = None
    ) -> None:
        from ..memory import MemoryStore

        memory = store if store is not None else MemoryStore()
        with _MEMORY_OWNERS_LOCK:
            owners = _MEMORY_OWNERS.setdefault(memory, _MemoryOwners())
        super().__init__(memory, owners, clock)


class OrmRunStore(_RunStoreBase):
    """Run records in the ORM store's database, owned through the engine's lock: OFD
    file locks in ``<database>-runlocks/`` beside the SQLite file, session advisory
    locks on PostgreSQL."""

    def __init__(self, store: OrmStore, *, clock: Callable[[], Nanos] | None = None) -> None:
        from django.db import connections

        conn = connections[store.using]
        owners: Owners
        if conn.vendor == "postgresql":
            owners = AdvisoryLocks(store.using, store.view_using)
        else:
            # Beside the database file, as SQLite's own -wal and -shm are: every process
            # that opens this database (through any symlink) meets the same locks,
            # whatever its data folder. A folder per data folder let two own one run.
            database = Path(conn.settings_dict["NAME"]).resolve()
            owners = FileLocks(database.with_name(f"{database.name}-runlocks"), database)
        super().__init__(store, owners, clock)

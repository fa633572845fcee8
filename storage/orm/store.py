"""The Django ORM backend's store: SQLite by default, PostgreSQL when DATABASE_URL
names one.

Writes run in ``transaction.atomic`` on the ``default`` alias. On SQLite its connection
begins ``IMMEDIATE``: the write lock is taken at BEGIN, so ``Guard.now`` read after it
orders with commits across processes, and a read-then-write inside a transaction
cannot race another writer (serializable). ``synchronous=FULL`` in WAL makes the commit
durable before ``transact`` returns. On PostgreSQL the same order comes from an
advisory lock held from before BEGIN to after COMMIT, inside SERIALIZABLE
(``OrmStore._writers_serialised`` says why), and ``synchronous_commit=on``.

Views run on the ``view`` alias: the same database through another connection. On
SQLite it begins deferred and is ``query_only``; on PostgreSQL it begins REPEATABLE
READ with ``default_transaction_read_only``. Its first read opens the snapshot that
every later read of the View shares; it never takes the writers' lock, so it never
waits for a writer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import DatabaseError, connections, transaction

from ..clock import wall_clock
from ..errors import RecordsNewer, SchemaNewer, TxClosed, Unavailable
from ..models import MetaRow
from ..records import RECORD_FORMAT, SCHEMA_VERSION, Guard, Nanos
from ..tx import TxScope, check_admission
from . import schema
from .dialect import dialect
from .errors import translate_errors
from .rows import OrmTx, parse_clock

T = TypeVar("T")

logger = logging.getLogger(__name__)

# PostgreSQL: the session-level advisory lock that serialises writers ("conduit" in
# ASCII). Advisory locks are per database, so test databases do not share it.
WRITERS_LOCK = 0x636F6E64756974

# The end of a writing transaction's last flush on PostgreSQL: its COMMIT and the
# writers' lock's release travel with its writes, one round trip for three. Django's
# atomic() then commits a connection no longer in a transaction, which psycopg skips
# without a statement (``tests/storage/orm/test_postgres.py`` pins it). When a write or
# the COMMIT fails, the server skips the rest of the text: the lock is still held, and
# ``_writers_serialised`` releases it after atomic()'s rollback, as before.
COMMIT_AND_UNLOCK = f"COMMIT;\nSELECT pg_advisory_unlock({WRITERS_LOCK})"


@dataclass
class WritersLock:
    """The writers' lock held by ``_writers_serialised``; ``released`` once the text
    that committed also released it (``COMMIT_AND_UNLOCK``)."""

    released: bool = False


class OrmStore:
    """The production store over Django's ``default`` (writes) and ``view`` aliases."""

    tx_class: type[OrmTx] = OrmTx

    def __init__(
        self,
        clock: Callable[[], Nanos] = wall_clock,
        *,
        using: str = "default",
        view_using: str = "view",
        version_log: bool = True,
    ) -> None:
        self._clock = clock
        # False: no version log (``storage.versions``), a benchmark's baseline.
        self.version_log = version_log
        self.using = using
        self.view_using = view_using
        self._schema_version = self._open()

    @property
    def schema_version(self) -> int:
        return self._schema_version

    def _open(self) -> int:
        """Check the database's schema version and record format before touching it
        (SV-01, SV-02, SV-05..SV-07), then record ours if it is higher."""
        try:
            with (
                translate_errors(writing=True),
                self._writers_serialised(),
                transaction.atomic(using=self.using),
            ):
                meta = MetaRow.objects.using(self.using)
                found = dict(meta.values_list("key", "value"))
                schema = int(found.get("schema_version", SCHEMA_VERSION))
                if schema < SCHEMA_VERSION:
                    # Upgrades are explicit migrations; never rewrite the version here.
                    raise Unavailable(
                        f"database schema version {schema} is older than this code's "
                        f"version {SCHEMA_VERSION}; run `manage.py migrate` first"
                    )
                if schema > SCHEMA_VERSION:
                    raise SchemaNewer(
                        f"database schema version {schema} is newer than this code's "
                        f"version {SCHEMA_VERSION}; run a newer Conduit Console or restore "
                        "a backup taken before the upgrade"
                    )
                fmt = _known_record_format(found.get("record_format"))
                wanted = {
                    "schema_version": str(SCHEMA_VERSION),
                    "record_format": str(max(fmt, RECORD_FORMAT)),
                    "clock": found.get("clock", "0 0"),
                }
                for key, value in wanted.items():
                    if found.get(key) != value:
                        meta.update_or_create(key=key, defaults={"value": value})
                return schema
        except Unavailable as exc:
            raise Unavailable(f"{exc} (has `manage.py migrate` run?)") from exc

    def close(self) -> None:
        """Close this thread's connections; Django reopens them on next use."""
        for alias in {self.using, self.view_using}:
            connections[alias].close()

    def transact(self, guard: Guard, callback: Callable[[Any], T]) -> T:
        with TxScope():
            check_admission(guard)
            if connections[self.using].in_atomic_block:
                # atomic() would become a savepoint: no IMMEDIATE lock, no admission order.
                raise TxClosed("transact cannot run inside an open database transaction")
            tx: OrmTx | None = None
            try:
                with (
                    translate_errors(writing=True),
                    self._writers_serialised() as lock,
                    transaction.atomic(using=self.using),
                ):
                    # One row holds "<last now> <version>": read once under the lock,
                    # written once at the end, so the clock costs two statements a tx.
                    # This read is the first statement: on PostgreSQL it takes the
                    # snapshot, after the writers' lock was granted.
                    # The record format is read with it, so a process opened before a
                    # newer binary raised it stops writing at once, for no extra statement.
                    tx = self.tx_class(0, alias=self.using, read_only=False)
                    tx.version_log = self.version_log
                    clock, record_format = tx.admission_meta()
                    _known_record_format(record_format)
                    last, version = parse_clock(clock)
                    now = max((guard.clock or self._clock)(), last)
                    tx.admit(now)
                    if guard.lease is not None:
                        tx.trusted = False
                        tx.verify_lease(guard.lease)
                    result = callback(tx)
                    tx.before_commit()
                    check_admission(guard)
                    if tx.dirty:
                        tx.log_versions(version + 1)
                    if tx.dirty or now != last:
                        clock = f"{now} {version + (1 if tx.dirty else 0)}"
                        tx.set_meta_at_flush("clock", clock)
                    # The row writes, the tally and the clock row, together; on
                    # PostgreSQL with the COMMIT and the unlock (``WritersLock``).
                    if lock is not None and tx.pending:
                        tx.flush(then=COMMIT_AND_UNLOCK)
                        lock.released = True
                    else:
                        tx.flush()
                return result
            finally:
                if tx is not None:
                    tx.close()

    def view(self, callback: Callable[[Any], T], now: Nanos | None = None) -> T:
        with TxScope():
            tx: OrmTx | None = None
            try:
                with translate_errors(), transaction.atomic(using=self.view_using):
                    last, version, sequence = self._pin_snapshot()
                    # Like Guard.now, never earlier than the last commit's in this snapshot.
                    at = now if now is not None else max(self._clock(), last)
                    tx = self.tx_class(at, alias=self.view_using, read_only=True)
                    # No commit moves either inside the snapshot.
                    tx.pinned_version, tx.pinned_sequence = version, sequence
                    return callback(tx)
            finally:
                if tx is not None:
                    tx.close()

    def _pin_snapshot(self) -> tuple[Nanos, int, int]:
        """The View's first statement: it opens the snapshot every later read shares
        (SQLite: the WAL read mark; PostgreSQL REPEATABLE READ: the snapshot), and
        reads in it the last committed Guard.now, the store version and the latest
        Event's sequence (what a poll's stamp is made of). Plain SQL, one statement:
        every page and poll begins here; building a queryset cost more than running
        it (0.5 ms of a 4 ms poll), and on PostgreSQL each statement is a round trip."""
        with connections[self.view_using].cursor() as cursor:
            cursor.execute(
                f"SELECT (SELECT value FROM {schema.META} WHERE key = %s), "
                f"(SELECT MAX(seq) FROM {schema.EVENT})",
                ["clock"],
            )
            clock, sequence = cursor.fetchone()
        now, version = parse_clock(clock)
        return now, version, int(sequence or 0)

    @contextmanager
    def _writers_serialised(self) -> Iterator[WritersLock | None]:
        """PostgreSQL: hold the writers' advisory lock from before BEGIN to after
        COMMIT or ROLLBACK. SQLite: nothing (BEGIN IMMEDIATE does the same).

        Why a session-level lock taken in autocommit, before the transaction: under
        REPEATABLE READ and SERIALIZABLE the snapshot is taken by the transaction's
        first statement. A lock taken inside the transaction (pg_advisory_xact_lock,
        or SELECT ... FOR UPDATE of the clock row) is granted after that snapshot, so
        the snapshot can miss the commit of the writer that held the lock just before:
        the callback's reads and the clock row are stale, and the transaction can only
        end in 40001 (Conflict) where it should have waited its turn. Taken before
        BEGIN, the lock is granted only after the previous holder's COMMIT returned,
        so every writer's snapshot includes all earlier commits: Guard.now = max(clock,
        last committed now) follows commit order across processes and hosts, and
        writers queue instead of failing each other, as behind SQLite's write lock.
        SERIALIZABLE stays underneath as defence in depth for writers that do not
        take the lock (Django's own tables, a raw query): a conflict with one is
        40001 -> Conflict. Every committing writer updates the clock row, so even
        without the lock two overlapping writers could not both commit.

        A writing transaction releases it in its COMMIT's text (``COMMIT_AND_UNLOCK``,
        ``WritersLock.released``); every other end releases it here. The lock belongs
        to the session, so it must be released even when the transaction failed; if
        releasing fails, the connection is closed, which ends the session and with it
        the lock (a pool discards a closed connection).
        ``lock_timeout`` (settings) bounds the wait, like SQLite's busy timeout.
        """
        conn = connections[self.using]
        if not dialect(conn).writers_lock:
            yield None
            return
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(%s)", [WRITERS_LOCK])
        except DatabaseError:
            raise  # the statement failed (e.g. lock_timeout): the lock was not granted
        except BaseException:
            # Interrupted while waiting: the lock may have been granted.
            _discard_session(conn)
            raise
        lock = WritersLock()
        try:
            yield lock
        finally:
            try:
                if not lock.released:  # else by the COMMIT's own text
                    with conn.cursor() as cursor:
                        cursor.execute("SELECT pg_advisory_unlock(%s)", [WRITERS_LOCK])
            except BaseException as exc:
                _discard_session(conn)
                if not isinstance(exc, Exception):
                    raise
                logger.warning("closed a connection whose writers' lock was not released: %s", exc)


def _known_record_format(value: str | None) -> int:
    """The stored record format (1 when never recorded); RecordsNewer if this code
    would drop the fields of a newer one when it rewrites a record."""
    fmt = int(value or 1)
    if fmt > RECORD_FORMAT:
        raise RecordsNewer(
            f"database record format {fmt} is newer than this code's "
            f"{RECORD_FORMAT} (records_newer); writing would drop fields"
        )
    return fmt


def _discard_session(conn: Any) -> None:
    """Close the server session under a Django connection, releasing its locks."""
    raw = conn.connection
    if raw is not None:
        raw.close()  # before Django's close: a pool must not take the session back
    conn.close()

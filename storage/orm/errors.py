"""The one boundary where driver errors become storage errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DatabaseError, IntegrityError

from ..errors import Conflict, ReadOnly, Unavailable

# PostgreSQL SQLSTATEs meaning "a concurrent transaction won": serialization_failure,
# deadlock_detected (unique_violation arrives as IntegrityError). The caller may retry
# with freshly read state; transact never does, so its callback runs once (T-02).
_CONFLICT_SQLSTATES = frozenset({"40001", "40P01"})
_READ_ONLY_SQLSTATE = "25006"  # read_only_sql_transaction: the server's second line


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a Django database error raised by psycopg 3, else None."""
    code = getattr(exc.__cause__, "sqlstate", None)
    return code if isinstance(code, str) else None


@contextmanager
def translate_errors(*, writing: bool = False) -> Iterator[None]:
    """Driver errors as storage errors: a constraint violation is ``Conflict``, as is
    a lost serialization race; anything else ``Unavailable``. A write the server
    refuses as read-only is ``ReadOnly`` in a View (the server's second line behind
    the View's own check: the caller wrote where it may not), and ``Unavailable`` in a
    write transaction (``writing``): there the database itself refuses writes (a
    standby, ``default_transaction_read_only`` during maintenance), a condition of the
    deployment that passes, which callers retry and the console answers with a 503,
    as it does a read-only SQLite folder."""
    try:
        yield
    except IntegrityError as exc:
        raise Conflict(f"constraint violated: {exc}") from exc
    except DatabaseError as exc:
        code = sqlstate(exc)
        if code in _CONFLICT_SQLSTATES:
            raise Conflict(f"concurrent transaction conflict ({code}): {exc}") from exc
        if code == _READ_ONLY_SQLSTATE:
            if writing:
                message = f"the database refuses writes (read-only transaction): {exc}"
                raise Unavailable(message) from exc
            raise ReadOnly(f"the database refused a write (read-only transaction): {exc}") from exc
        raise Unavailable(f"database error: {exc}") from exc

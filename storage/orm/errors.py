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
def translate_errors() -> Iterator[None]:
    """Driver errors as storage errors: a constraint violation is ``Conflict``, as is
    a lost serialization race; a write the server refuses as read-only is
    ``ReadOnly``; anything else ``Unavailable``."""
    try:
        yield
    except IntegrityError as exc:
        raise Conflict(f"constraint violated: {exc}") from exc
    except DatabaseError as exc:
        code = sqlstate(exc)
        if code in _CONFLICT_SQLSTATES:
            raise Conflict(f"concurrent transaction conflict ({code}): {exc}") from exc
        if code == _READ_ONLY_SQLSTATE:
            raise ReadOnly(f"the database refused a write (read-only transaction): {exc}") from exc
        raise Unavailable(f"database error: {exc}") from exc

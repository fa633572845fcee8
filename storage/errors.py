"""Storage errors: every failure the contract names derives from :class:`StorageError`.

Callers (the console, management commands, tests) catch the class, never the message.
Driver errors (sqlite3, psycopg) are translated into these at one boundary in the ORM
backend, so nothing above ``storage`` ever sees a database exception.
"""

from __future__ import annotations


class StorageError(Exception):
    """Root of every error raised by the storage contract."""


class Invalid(StorageError):
    """Input breaks a validation rule (malformed ID, disallowed transition, bad payload)."""


class Conflict(StorageError):
    """Revision, ownership, uniqueness or write-once clash; retry with re-read state."""


class NotFound(StorageError):
    """The named record does not exist."""


class Fenced(StorageError):
    """The Guard's lease no longer carries authority (expired, released, superseded)."""


class ReadOnly(StorageError):
    """A write was attempted inside a View or a read-only transaction (spec ErrReadOnly)."""


class Cancelled(StorageError):
    """The transaction's cancel token fired or its deadline passed before commit."""


class TxClosed(StorageError):
    """A Tx was used after its transaction ended, from another thread, or nested."""


class Closed(StorageError):
    """An artifact writer was used after close or commit, or a run Session or run store
    after close (spec ErrClosed)."""


class ArtifactError(StorageError):
    """Artifact content is missing, uncommitted, corrupt or unreadable."""


class SchemaNewer(StorageError):
    """The database's coordination schema is newer than this code understands."""


class RecordsNewer(StorageError):
    """The database's record format is newer than this code writes (state check
    ``records_newer``, spec ErrRecordsNewer)."""

    state_check = "records_newer"


class Unavailable(StorageError):
    """The backend failed (database locked past its timeout, disk error, closed store)."""


class Busy(StorageError):
    """A run record is owned by another Session (run records' ErrBusy). Raised at once:
    ``acquire`` never waits for the owner to let go."""


class Corrupt(StorageError):
    """Stored bytes do not decode into a record (invalid UTF-8, an unpaired surrogate,
    malformed JSON or a field of the wrong type). Nothing is repaired or guessed."""

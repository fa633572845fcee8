"""Run records: whole-record compare-and-swap by revision, and decoding reads that
report corruption instead of guessing around it.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import Conflict, Corrupt, Invalid, RecordsNewer, StorageError
from ..run_records.codec import decode as decode_run
from ..run_records.codec import encode as encode_run
from ..run_records.query import RunRow, check_run_id, check_run_query
from ..run_records.records import MAX_REVISION, RUN_FORMAT, DurableRunRecord, RunQuery, StoredRun
from .base import TxBase


class RunRecordRules(TxBase):
    """The run-record operations of ``Tx``."""

    # Ownership is the Session's (storage.ops.run_record_sessions); these are the record operations
    # a Session runs inside ``transact`` and the console reads through ``view``.
    def run_record(self, run_id: str) -> StoredRun | None:
        """The stored record of ``run_id``, or None. A stored record that does not
        decode raises ``Corrupt`` (``RecordsNewer`` for a newer format)."""
        self._check()
        row = self._run_row(check_run_id(run_id))
        return None if row is None else _stored_run(row)

    def run_records(self, query: RunQuery) -> list[StoredRun]:
        """One page of stored records. A row that does not decode comes back with
        ``error`` set and a minimal record (run ID, revision, format), never raising:
        the console must still list it."""
        self._check()
        check_run_query(query)
        out = []
        for row in self._run_rows(query):
            try:
                out.append(_stored_run(row))
            except StorageError as exc:
                minimal = DurableRunRecord(
                    run_id=row.run_id, revision=row.revision, format=row.format
                )
                out.append(StoredRun(minimal, row.created_ns, row.updated_ns, row.format, str(exc)))
        return out

    def count_run_records(self, query: RunQuery) -> int:
        self._check()
        check_run_query(query)
        return self._count_run_rows(query)

    def put_run_record(self, record: DurableRunRecord, expected_revision: int) -> int:
        """Whole-record compare-and-swap; returns the new revision. ``expected_revision``
        0 creates revision 1, the stored revision gives stored + 1; anything else, or a
        stored revision at ``MAX_REVISION``, is ``Conflict`` with nothing written. The
        record is written as format ``RUN_FORMAT`` at the new revision whatever its own
        ``format`` and ``revision`` say. ``Invalid``: a bad run ID, an expected revision
        outside [0, MAX_REVISION], a metadata string or map key that is not UTF-8.
        ``RecordsNewer``: the stored record has a newer format (writing would drop it)."""
        self._writable()
        if not isinstance(record, DurableRunRecord):
            raise Invalid(f"expected a DurableRunRecord, not {type(record).__name__}")
        run_id = check_run_id(record.run_id)
        expected = expected_revision
        if not isinstance(expected, int) or isinstance(expected, bool):
            raise Invalid(f"expected revision must be an integer, not {expected!r}")
        if not 0 <= expected <= MAX_REVISION:
            raise Invalid(f"expected revision {expected} is outside [0, 2^64)")
        current = self._run_row(run_id)
        if current is not None:
            _require_stored_revision(current)
        if current is None:
            if expected != 0:
                raise Conflict(f"run {run_id!r} has no record; expected revision must be 0")
        else:
            if current.format > RUN_FORMAT:
                raise RecordsNewer(
                    f"run {run_id!r} is stored in format {current.format}, newer than this "
                    f"code's {RUN_FORMAT}; saving would drop its fields"
                )
            if expected != current.revision:
                raise Conflict(f"run {run_id!r} is at revision {current.revision}, not {expected}")
            if current.revision == MAX_REVISION:
                raise Conflict(f"run {run_id!r} is at the last revision (2^64-1)")
        revision = expected + 1
        data = encode_run(replace(record, format=RUN_FORMAT, revision=revision))
        created = current.created_ns if current is not None else self._now
        row = RunRow(run_id, revision, RUN_FORMAT, created, self._now, data)
        self._put_run_row(row, expected)
        return revision


def _stored_run(row: RunRow) -> StoredRun:
    """Decode a stored row. The columns are the CAS's authority and the JSON must agree
    with them; a disagreement is corruption, reported rather than guessed around."""
    _require_stored_revision(row)
    record = decode_run(row.data)
    for what, stored, written in (
        ("run ID", row.run_id, record.run_id),
        ("revision", row.revision, record.revision),
        ("format", row.format, record.format),
    ):
        if stored != written:
            raise Corrupt(
                f"run {row.run_id!r}: stored {what} {stored!r} but its record says {written!r}"
            )
    return StoredRun(record, row.created_ns, row.updated_ns, row.format)


def _require_stored_revision(row: RunRow) -> None:
    """Revisions start at 1 and are never zero: a row at 0 was not written by a
    Session, and every save of it would meet a misleading Conflict."""
    if row.revision < 1:
        raise Corrupt(
            f"run {row.run_id!r} is stored at revision {row.revision}; revisions start at 1"
        )

"""Typed, checked access to routed-run rows: the one place a record becomes a row.

Every write goes through ``_create`` or ``_replace``, which validate the record
(``check_record``: ID prefixes, enum members, int64, schema version), check the status
change against the resource's transition map and the generation against the row's,
before anything is written. Every read decodes strictly and checks the schema version
(an unknown or newer one is ``UnknownSchemaVersion``; a known older one is migrated
through the registry in memory, never rewritten by a read).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from ...errors import Corrupt, Invalid
from ...tx import fields
from ..clock import MonotonicAxis, MonotonicMark
from ..codec import check_record, check_schema, from_data, marshal_canonical
from ..errors import AlreadyExists, CASConflict, InvalidArgument, RoutedNotFound
from ..migrate import MigrationRegistry
from ..records import JournalAnchoring, Nanos, Stored
from ..rows import COLUMN_LIMITS, Row, Rows
from ..transitions import RESOURCE_OF, validate_transition

R = TypeVar("R")

# Bounded JSON payloads (input, context, results): 64 KB = 65,536 bytes (resolution 13).
PAYLOAD_LIMIT = 65_536


@dataclass(frozen=True)
class Spec[R]:
    """How one record class lives in one table: its key and its indexed columns."""

    table: str
    cls: type[R]
    key: Callable[[R], str]
    parent: Callable[[R], str] = lambda _r: ""
    status: Callable[[R], str] = lambda _r: ""
    # The facet columns (``rows.FACET_TABLES`` only).
    kind: Callable[[R], str] = lambda _r: ""
    reason: Callable[[R], str] = lambda _r: ""


def digest_key(*parts: str) -> str:
    """A fixed-length key for a tuple of caller-chosen strings (idempotency scopes):
    the parts are length-prefixed, so ("a", "bc") and ("ab", "c") differ."""
    h = hashlib.sha256()
    for part in parts:
        raw = part.encode()
        h.update(len(raw).to_bytes(8, "big") + raw)
    return h.hexdigest()


def check_payload(name: str, text: str, *, required: bool = True) -> None:
    if not text and not required:
        return
    if len(text.encode()) > PAYLOAD_LIMIT:
        raise InvalidArgument(f"{name} is over {PAYLOAD_LIMIT} bytes")
    try:
        json.loads(text)
    except ValueError as exc:
        raise InvalidArgument(f"{name} is not JSON ({exc})") from exc


def check_text(name: str, text: str, limit: int = 255) -> None:
    """1..``limit`` bytes of UTF-8, valid Unicode, no NUL: the identifier rule of
    ``storage.tx.fields``, as this domain's ``InvalidArgument``."""
    if not isinstance(text, str) or not text:
        raise InvalidArgument(f"{name} must be 1..{limit} bytes, not {text!r}")
    try:
        fields.require_text(text, name, limit)
    except Invalid as exc:
        raise InvalidArgument(str(exc)) from None


# The monotonic axis's high-water mark (``storage.routed.clock``), in the meta table.
MONOTONIC = Spec("meta", MonotonicMark, key=lambda _r: "monotonic")
# Once the journals older than the tail anchor were anchored (``storage.routed.anchoring``).
ANCHORING = Spec("meta", JournalAnchoring, key=lambda _r: "journal_anchoring")


class RulesBase:
    def __init__(
        self,
        rows: Rows,
        now: Nanos,
        registry: MigrationRegistry,
        axis: MonotonicAxis | None = None,
    ) -> None:
        self.rows = rows
        self.now = now  # wall time (Guard.now): evidence timestamps only
        self.registry = registry
        self.axis = axis or MonotonicAxis()
        self._monotonic: Nanos | None = None
        self._marked = False

    @property
    def monotonic_ns(self) -> Nanos:
        """The store's monotonic axis in this transaction (one reading, taken at its
        first use): every duration, lease and deadline decision reads it, never the
        wall time (``storage.routed.clock``)."""
        if self._monotonic is None:
            mark = self._read(MONOTONIC, "monotonic")
            stored = None if mark is None else mark.record.reading_ns
            self._monotonic = self.axis.reading(stored, self.now)
        return self._monotonic

    @property
    def now_ms(self) -> int:
        """The monotonic reading in milliseconds (the envelope's unit)."""
        return self.monotonic_ns // 1_000_000

    def _mark(self) -> None:
        """With a transaction's first write: raise the stored high-water mark to this
        transaction's reading, so the axis resumes from it after a restart."""
        if self._marked:
            return
        self._marked = True
        reading = self.monotonic_ns
        mark = self._read(MONOTONIC, "monotonic")
        if mark is None:
            self._create(MONOTONIC, MonotonicMark(reading))
        elif mark.record.reading_ns < reading:
            self._replace(MONOTONIC, MonotonicMark(reading), mark.generation)

    # -- reads -----------------------------------------------------------------------
    def _decode(self, spec: Spec[R], row: Row) -> Stored[R]:
        try:
            data = json.loads(row.body)
        except ValueError as exc:
            raise Corrupt(f"{spec.table} {row.key}: stored text is not JSON ({exc})") from exc
        data = check_schema(spec.cls, data, self._migrate)
        try:
            record = from_data(spec.cls, data)
        except InvalidArgument as exc:
            raise Corrupt(f"{spec.table} {row.key}: {exc}") from exc
        return Stored(record, row.generation)

    def _migrate(self, version: str, data: Any) -> Any:
        _, out = self.registry.migrate(version, json.dumps(data).encode())
        return json.loads(out)

    def _read(self, spec: Spec[R], key: str) -> Stored[R] | None:
        row = self.rows.get(spec.table, key)
        return None if row is None else self._decode(spec, row)

    def _require(self, spec: Spec[R], key: str) -> Stored[R]:
        found = self._read(spec, key)
        if found is None:
            raise RoutedNotFound(f"{spec.cls.__name__} {key!r}")
        return found

    def _list(
        self, spec: Spec[R], parent: str | None = None, statuses: Collection[str] | None = None
    ) -> list[Stored[R]]:
        return [self._decode(spec, row) for row in self.rows.scan(spec.table, parent, statuses)]

    # -- writes ----------------------------------------------------------------------
    def _row(self, spec: Spec[R], record: R, generation: int) -> Row:
        row = Row(
            key=spec.key(record),
            body=marshal_canonical(record).decode(),
            generation=generation,
            parent=spec.parent(record),
            status=spec.status(record),
            kind=spec.kind(record),
            reason=spec.reason(record),
        )
        # The indexed columns, whatever built the record: PostgreSQL must never be
        # the one to refuse a value (as Unavailable, at commit).
        for column, limit in COLUMN_LIMITS.items():
            value = getattr(row, column)
            if value:
                check_text(f"{spec.table} {column}", value, limit)
        return row

    def _create(self, spec: Spec[R], record: R) -> Stored[R]:
        """Insert at generation 1; ``AlreadyExists`` (nothing written) if the key is
        taken. A record with a ``generation`` field is stamped 1."""
        record = _with_generation(record, 1)
        check_record(record)
        self._mark()
        if not self.rows.insert(spec.table, self._row(spec, record, 1)):
            raise AlreadyExists(f"{spec.cls.__name__} {spec.key(record)!r}")
        return Stored(record, 1)

    def _replace(self, spec: Spec[R], record: R, expected: int) -> Stored[R]:
        """Whole-record CAS: the stored generation must be ``expected``; a status
        change must be allowed by the map. Returns the record at ``expected + 1``."""
        check_record(record)
        current = self._require(spec, spec.key(record))
        self._check_generation(spec, current, expected)
        self._check_change(current.record, record)
        self._mark()
        generation = current.generation + 1
        record = _with_generation(record, generation)
        if not self.rows.update(
            spec.table, self._row(spec, record, generation), current.generation
        ):
            raise CASConflict(f"{spec.cls.__name__} {spec.key(record)!r} changed concurrently")
        return Stored(record, generation)

    def _check_generation(self, spec: Spec[Any], current: Stored[Any], expected: int) -> None:
        if current.generation != expected:
            raise CASConflict(
                f"{spec.cls.__name__} {spec.key(current.record)!r} is at generation "
                f"{current.generation}, not {expected}"
            )

    def _check_change(self, before: Any, after: Any) -> None:
        old, new = getattr(before, "status", None), getattr(after, "status", None)
        if isinstance(old, Enum) and old is not new and type(old) in RESOURCE_OF:
            self._check_transition(old, new)

    def _check_transition(self, old: Enum, new: Any) -> None:
        validate_transition(old, new)


def _with_generation[R](record: R, generation: int) -> R:
    if hasattr(record, "generation") and dataclasses.is_dataclass(record):
        return dataclasses.replace(record, generation=generation)  # type: ignore[type-var]
    return record

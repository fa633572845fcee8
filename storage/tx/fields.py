"""Field validation shared by every backend, so the double and SQLite cannot drift."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import fields as dataclass_fields
from dataclasses import is_dataclass
from typing import TYPE_CHECKING

from ..errors import Invalid
from ..records import CorrelationKey, Payload

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# Resolution 1 of the checklist: lowercase segments joined by dots, at least two.
_DOTTED = re.compile(r"^[a-z0-9_-]+(\.[a-z0-9_-]+)+$")
_ACTOR = re.compile(r"^[a-z0-9_.-]+:\S+$")
DOTTED_MAX = 200
ACTOR_SOURCES = frozenset({"core.manual", "core.action"})


# One identifier rule for every backend, in UTF-8 bytes: each limit fits its column
# (PostgreSQL's varchar(n) counts characters, each at least a byte) and a PostgreSQL
# btree entry (the KV index holds namespace and key: 255 + 1,024 bytes, under its
# ~2,700). NUL is refused: PostgreSQL text cannot hold it. Checked before any write,
# as Invalid: a client must not retry what can never succeed.
ID_MAX_BYTES = 255
KV_KEY_MAX_BYTES = 1024
DISPOSITION_MAX_BYTES = 64

# Every varchar column of the ORM backend (``storage.models``, ``storage.routed.models``)
# and the most UTF-8 bytes the rules let reach it, so PostgreSQL never refuses a value
# at commit. Where each is enforced: IDs and references by ``require_id``/``require_text``
# where their record is written; kinds and Event types by ``require_dotted`` (ASCII);
# states by their enums; the metadata key by the store's own fixed names; a run record's
# revision is the decimal of a uint64. The routed tables' columns are ruled beside them
# (``storage.routed.rows.COLUMN_LIMITS``). ``tests/storage/orm/test_column_rules.py``
# fails for a column missing here or a limit its column cannot hold.
COLUMN_RULES: dict[str, dict[str, int]] = {
    "conduit_meta": {"key": 64},
    "conduit_work": {
        # Characters, not bytes: storage.meaning.triage.error_key cuts an outcome
        # message (NUL refused by require_storable) at MAX_ERROR_KEY (200) characters;
        # varchar(255) holds 255 of any.
        "error_group": 200,
        "id": ID_MAX_BYTES,
        "kind": DOTTED_MAX,
        "scope_id": ID_MAX_BYTES,
        "parent_id": ID_MAX_BYTES,
        "state": 16,
        "source": ID_MAX_BYTES,  # a key's source, else the kind
        "latest_executor": ID_MAX_BYTES,  # an Execution's executor
    },
    # The tally's keys are the Work columns above; ``value`` holds a source, an
    # executor or an error group (storage.meaning.tally), each at most ID_MAX_BYTES,
    # and in a margin's row a kind (DOTTED_MAX) or a Scope (ID_MAX_BYTES).
    "conduit_work_tally": {
        "dimension": 16,  # meaning.tally.DIMENSIONS and MARGINS (at most 15)
        "state": 16,
        "scope_id": ID_MAX_BYTES,
        "kind": DOTTED_MAX,
        "value": ID_MAX_BYTES,
    },
    # The series tally's keys (storage.meaning.series_tally): a series name (with
    # its store-wide mark), a Work or Event Scope, a Work state ("" for the others).
    "conduit_series_tally": {
        "series": 16,  # meaning.series_tally.SERIES, each with STORE_WIDE appended
        "scope_id": ID_MAX_BYTES,
        "state": 16,
    },
    "conduit_key": {"source": ID_MAX_BYTES, "external_id": ID_MAX_BYTES, "work_id": ID_MAX_BYTES},
    "conduit_event_key": {"source": ID_MAX_BYTES, "external_id": ID_MAX_BYTES},
    "conduit_event": {
        "id": ID_MAX_BYTES,
        "source": ID_MAX_BYTES,
        "delivery_id": ID_MAX_BYTES,
        "type": DOTTED_MAX,
        "work_id": ID_MAX_BYTES,
        "causation_id": ID_MAX_BYTES,
        "scope_id": ID_MAX_BYTES,
        "route_work_id": ID_MAX_BYTES,
        "disposition": DISPOSITION_MAX_BYTES,
    },
    "conduit_execution": {
        "id": ID_MAX_BYTES,
        "work_id": ID_MAX_BYTES,
        "scope_id": ID_MAX_BYTES,  # its Work's Scope, a checked reference there
        "state": 16,
        "executor": ID_MAX_BYTES,
    },
    "conduit_scope": {"id": ID_MAX_BYTES, "parent_id": ID_MAX_BYTES},
    "conduit_timer": {"id": ID_MAX_BYTES, "work_id": ID_MAX_BYTES},
    "conduit_wait": {
        "id": ID_MAX_BYTES,
        "work_id": ID_MAX_BYTES,
        "execution_id": ID_MAX_BYTES,
        "state": 16,
    },
    "conduit_kv": {"namespace": ID_MAX_BYTES, "key": KV_KEY_MAX_BYTES},
    # The version log's names come from records already checked (tx.versions).
    "conduit_record_version": {
        "kind": 16,
        "record_id": ID_MAX_BYTES,
        "key": KV_KEY_MAX_BYTES,
        "execution_id": ID_MAX_BYTES,
        "work_id": ID_MAX_BYTES,
    },
    "conduit_run_record": {"run_id": ID_MAX_BYTES, "revision": 20},
}


def require_id(value: str, what: str, max_bytes: int = ID_MAX_BYTES) -> None:
    if not isinstance(value, str) or not value:
        raise Invalid(f"{what} must be a nonempty string")
    require_text(value, what, max_bytes)


def require_text(value: str, what: str, max_bytes: int = ID_MAX_BYTES) -> None:
    """At most ``max_bytes`` of UTF-8, valid Unicode, no NUL."""
    if "\x00" in value:
        raise Invalid(f"{what} contains a NUL character")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise Invalid(f"{what} is not valid Unicode (an unpaired surrogate)") from None
    if size > max_bytes:
        raise Invalid(f"{what} is {size} bytes of UTF-8; the limit is {max_bytes}")


def require_unicode(value: str, what: str) -> None:
    """Free text (no byte limit) that must still be storable: no NUL (PostgreSQL's JSON
    cannot hold ``\u0000``, and a message feeds the error_group column) and no unpaired
    surrogate (the write failed as a UnicodeEncodeError)."""
    require_text(value, what, max_bytes=2**62)


def require_storable(record: object, what: str) -> None:
    """Every string inside ``record`` (its fields, nested records, tuples, mapping keys
    and values; bytes are not text) is storable text: no NUL, no unpaired surrogate.
    The free text of a record (a Wait's description, a Scope's name or config) goes
    into PostgreSQL's JSON, which refuses NUL at commit as a database error; SQLite and
    the double took it. One rule, as ``Invalid`` before any write, on every backend.

    Every record written passes here (a fifth of a generated history's write time),
    so the common case is a walk that names no paths; only a record that fails is
    walked again with the paths, for the message."""
    if _storable(record):
        return
    for path, text in _strings(record, what):
        require_unicode(text, path)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
# Values that hold no text: their type alone says so (bool is an int; an IntEnum's
# members are not these types and take the general path).
_TEXTLESS = frozenset({int, bool, float, bytes, type(None)})


def _field_names(value: DataclassInstance) -> tuple[str, ...]:
    kind = type(value)
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclass_fields(value))
    return names


def _text_storable(value: str) -> bool:
    """No NUL and no unpaired surrogate (an ASCII string needs no encoding to know it)."""
    if "\x00" in value:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _storable(value: object) -> bool:
    """``require_storable``'s rule without the paths: True when every string is
    storable. A record's fields are mostly plain strings and numbers, checked in the
    loop without a call each (a Work is a dozen fields: a call per field was most of
    the cost)."""
    if isinstance(value, str):  # a StrEnum member too
        return _text_storable(value)
    kind = type(value)
    if kind in _TEXTLESS:
        return True
    names = _FIELD_NAMES.get(kind)
    if names is None and is_dataclass(value) and not isinstance(value, type):
        names = _field_names(value)
    if names is not None:
        for name in names:
            item = getattr(value, name)
            item_kind = type(item)
            if item_kind is str:
                if not _text_storable(item):
                    return False
            elif item_kind not in _TEXTLESS and not _storable(item):
                return False
        return True
    if isinstance(value, int | bytes | float):
        return True
    if isinstance(value, Mapping):
        return all(_storable(key) and _storable(item) for key, item in value.items())
    if isinstance(value, tuple | list):
        return all(_storable(item) for item in value)
    return True


def _strings(value: object, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif is_dataclass(value) and not isinstance(value, type):
        for f in dataclass_fields(value):
            yield from _strings(getattr(value, f.name), f"{path} {f.name}")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key, f"{path} key")
            yield from _strings(item, f"{path}[{key!r}]")
    elif isinstance(value, tuple | list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")


def require_dotted(value: str, what: str) -> None:
    if not isinstance(value, str) or len(value) > DOTTED_MAX or not _DOTTED.match(value):
        raise Invalid(f"{what} {value!r} is not a dotted namespace identifier")


def require_payload(payload: Payload | None, what: str = "payload") -> None:
    if payload is None:
        return
    require_dotted(payload.schema, f"{what} schema")
    if not isinstance(payload.data, bytes):
        raise Invalid(f"{what} data must be bytes")
    try:
        json.loads(payload.data)
    except ValueError as exc:
        raise Invalid(f"{what} data is not valid JSON: {exc}") from None


def require_keys(keys: Iterable[CorrelationKey], what: str = "correlation key") -> None:
    for key in keys:
        if not isinstance(key, CorrelationKey) or not key.source or not key.external_id:
            raise Invalid(f"{what} {key!r} needs a nonempty source and external_id")
        require_text(key.source, f"{what} source")
        require_text(key.external_id, f"{what} external_id")


def actor_for(source: str, actor: str) -> str:
    """The actor kept for an Event of ``source``: checked on core.manual/core.action,
    dropped from any other source (spec: acceptance drops it)."""
    if source not in ACTOR_SOURCES:
        return ""
    if actor and not _ACTOR.match(actor):
        raise Invalid(f"actor {actor!r} is not of the form kind:id")
    return actor


def require_ids(values: Sequence[str], what: str) -> list[str]:
    """A list of IDs (a bare string is refused: it would read as its characters),
    each checked, duplicates dropped, in the order given."""
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise Invalid(f"{what} must be a list of IDs, not {type(values).__name__}")
    for value in values:
        require_id(value, what)
    return list(dict.fromkeys(values))


def require_limit(limit: int) -> None:
    if limit < 0:
        raise Invalid(f"limit must be 0 (no limit) or positive, not {limit}")

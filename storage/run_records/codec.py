"""Run records to and from their stored JSON.

The JSON uses the spec's field names (``Format``, ``RunID``, ``Revision`` ...), with
``Data`` and ``State`` bytes in standard base64 as Go's ``encoding/json`` writes a
``[]byte``. Decoding is strict: unknown fields, wrong types, out-of-range integers,
invalid raw UTF-8 and unpaired ``\\uD800``-style surrogates all raise ``Corrupt``, so an
old reader never silently drops a field it does not know and then overwrites it.

``encode`` refuses (``Invalid``) a metadata string or map key that is not valid UTF-8
(in Python: one holding an unpaired surrogate) before anything is written; ``Data``
bytes are exempt and round-trip exactly. It also refuses what ``decode`` would refuse
in a record built in memory (a negative or >= 2^64 integer, a string that is not an enum
member), so whatever it writes loads again. A format-1 record cannot carry incremental
fields (streams, messages, managed state, stream values): encoding one is ``Invalid``,
decoding one is ``Corrupt``; a newer format than ``RUN_FORMAT`` is ``RecordsNewer``.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import Corrupt, Invalid, RecordsNewer
from .records import (
    MAX_REVISION,
    RUN_FORMAT,
    RUN_FORMATS,
    AttemptState,
    DurableRunRecord,
    ManagedRecord,
    MessageAttemptRecord,
    NodeAttemptRecord,
    NodeReason,
    NodeRecord,
    PendingMessage,
    ScopeRecord,
    StreamDescriptorRecord,
    StreamRecord,
    Terminal,
    ValueRecord,
    ValueState,
)

# (json name, python attribute, kind) per record type. Kinds: "str", "int", "bool",
# "bytes", an enum class, a record type (nested object), ("list", type) or ("map", type).
Kind = Any
_FIELDS: dict[type, tuple[tuple[str, str, Kind], ...]] = {
    StreamDescriptorRecord: (
        ("SourceID", "source_id", "str"),
        ("WriterAttempt", "writer_attempt", "str"),
        ("Capacity", "capacity", "int"),
        ("Terminal", "terminal", Terminal),
    ),
    ValueRecord: (
        ("Name", "name", "str"),
        ("TypeID", "type_id", "str"),
        ("Version", "version", "str"),
        ("State", "state", ValueState),
        ("Digest", "digest", "str"),
        ("Data", "data", "bytes"),
        ("Stream", "stream", StreamDescriptorRecord),
    ),
    NodeRecord: (
        ("NodeID", "node_id", "str"),
        ("Attempt", "attempt", "str"),
        ("Reason", "reason", NodeReason),
        ("Outputs", "outputs", ("list", ValueRecord)),
    ),
    ScopeRecord: (
        ("Graph", "graph", "str"),
        ("Path", "path", "str"),
        ("Inputs", "inputs", "str"),
        ("Nodes", "nodes", ("map", NodeRecord)),
        ("Bindings", "bindings", "bool"),
    ),
    NodeAttemptRecord: (
        ("Parent", "parent", "str"),
        ("NodeID", "node_id", "str"),
        ("Boundary", "boundary", "str"),
        ("Index", "index", "int"),
        ("Limit", "limit", "int"),
        ("State", "state", AttemptState),
    ),
    PendingMessage: (
        ("Sequence", "sequence", "int"),
        ("Acked", "acked", "bool"),
    ),
    StreamRecord: (
        ("Scope", "scope", "str"),
        ("NodeID", "node_id", "str"),
        ("Key", "key", "str"),
        ("Group", "group", "str"),
        ("Generation", "generation", "int"),
        ("SourceID", "source_id", "str"),
        ("Resumable", "resumable", "bool"),
        ("LastSequence", "last_sequence", "int"),
        ("AckedThrough", "acked_through", "int"),
        ("Pending", "pending", ("list", PendingMessage)),
        ("Cursor", "cursor", "str"),
    ),
    MessageAttemptRecord: (
        ("Source", "source", "str"),
        ("Group", "group", "str"),
        ("Sequence", "sequence", "int"),
        ("Scope", "scope", "str"),
        ("Parent", "parent", "str"),
        ("NodeID", "node_id", "str"),
        ("Index", "index", "int"),
        ("Limit", "limit", "int"),
        ("State", "state", AttemptState),
    ),
    ManagedRecord: (
        ("Scope", "scope", "str"),
        ("Parent", "parent", "str"),
        ("NodeID", "node_id", "str"),
        ("State", "state", "bytes"),
        ("Values", "values", ("list", ValueRecord)),
    ),
    DurableRunRecord: (
        ("Format", "format", "int"),
        ("RunID", "run_id", "str"),
        ("Revision", "revision", "int"),
        ("Version", "version", "str"),
        ("Definition", "definition", "str"),
        ("Inputs", "inputs", "str"),
        ("RootScope", "root_scope", "str"),
        ("Scopes", "scopes", ("map", ScopeRecord)),
        ("Attempts", "attempts", ("map", NodeAttemptRecord)),
        ("Streams", "streams", ("map", StreamRecord)),
        ("Messages", "messages", ("map", MessageAttemptRecord)),
        ("Managed", "managed", ("map", ManagedRecord)),
    ),
}
# Fields format 1 cannot hold (its JSON never has them).
_INCREMENTAL = frozenset({"Streams", "Messages", "Managed", "Stream"})
# Integers are uint64 in the spec; JSON here never carries a negative or larger one.
_INT_MAX = MAX_REVISION
# The values of each enum field, for encode's check (members compare equal to them).
_ENUM_VALUES = {
    kind: frozenset(member.value for member in kind)
    for fields in _FIELDS.values()
    for _, _, kind in fields
    if isinstance(kind, type) and issubclass(kind, enum.Enum)
}


def check_utf8(record: DurableRunRecord) -> None:
    """Raise ``Invalid`` naming the first metadata string or map key (by path) that is
    not valid UTF-8, or an integer or enum value ``decode`` would refuse.
    ``Data``/``State`` bytes are not checked."""
    _walk_strings(_to_json(record), "$")


def _walk_strings(value: Any, path: str) -> None:
    if isinstance(value, str):
        _require_utf8(value, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            _require_utf8(key, f"{path} key {key!r}")
            _walk_strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk_strings(item, f"{path}[{i}]")


def _require_utf8(text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Invalid(f"{path}: not valid UTF-8 ({exc.reason} at {exc.start})") from None


def encode(record: DurableRunRecord) -> bytes:
    """The stored JSON of ``record`` (as given: the caller sets format and revision)."""
    if record.format not in RUN_FORMATS:
        raise Invalid(f"record format {record.format} is not one of {RUN_FORMATS}")
    if record.format == 1 and record.incremental:
        raise Invalid("a format-1 record cannot carry streams, messages or managed state")
    document = _to_json(record)
    _walk_strings(document, "$")
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode(data: bytes) -> DurableRunRecord:
    """The record stored as ``data``; ``Corrupt``, or ``RecordsNewer`` for a format this
    code does not know."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Corrupt(f"stored run record is not valid UTF-8 at byte {exc.start}") from None
    try:
        document = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise Corrupt(f"stored run record is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise Corrupt("stored run record is not a JSON object")
    fmt = document.get("Format")
    if isinstance(fmt, int) and not isinstance(fmt, bool) and fmt > RUN_FORMAT:
        raise RecordsNewer(f"run record format {fmt} is newer than this code ({RUN_FORMAT})")
    if fmt not in RUN_FORMATS or isinstance(fmt, bool):
        raise Corrupt(f"unknown run record format {fmt!r}")
    if fmt == 1:
        found = _incremental_keys(document)
        if found:
            raise Corrupt(f"format-1 run record carries incremental fields: {', '.join(found)}")
    record: DurableRunRecord = _from_json(DurableRunRecord, document, "$")
    return record


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of two equal keys; a record whose bytes say two things
    # about one field (or hold two map entries under one key) is corrupt, not ambiguous.
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise Corrupt(f"stored run record repeats the key {key!r}")
        document[key] = value
    return document


def _incremental_keys(document: Any) -> list[str]:
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in _INCREMENTAL and item not in (None, {}, []):
                    found.add(key)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(document)
    return sorted(found)


def _to_json(obj: Any, path: str = "$") -> dict[str, Any]:
    """The JSON document of ``obj``. Raises ``Invalid`` (by path) for a scalar that
    ``decode`` would refuse: a record built in memory can hold a negative or too large
    integer, or a string that is no enum member, and writing it would store a record
    that every later load refuses as ``Corrupt``."""
    out: dict[str, Any] = {}
    for name, attr, kind in _FIELDS[type(obj)]:
        value, where = getattr(obj, attr), f"{path}.{name}"
        if kind == "bytes":
            out[name] = base64.b64encode(value).decode("ascii")
        elif isinstance(kind, tuple) and kind[0] == "list":
            out[name] = [_to_json(item, f"{where}[{i}]") for i, item in enumerate(value)]
        elif isinstance(kind, tuple) and kind[0] == "map":
            if value or name not in _INCREMENTAL:
                out[name] = {k: _to_json(item, f"{where}.{k}") for k, item in value.items()}
        elif isinstance(kind, type) and kind in _FIELDS:
            if value is not None:
                out[name] = _to_json(value, where)
        elif isinstance(kind, type) and issubclass(kind, enum.Enum):
            if value not in _ENUM_VALUES[kind]:
                raise Invalid(f"{where}: {value!r} is not one of {[m.value for m in kind]}")
            out[name] = str(value)
        else:
            if kind in ("int", "bool"):  # strings are _walk_strings' (UTF-8 by path)
                try:
                    _SCALARS[kind](value, where)
                except Corrupt as exc:
                    raise Invalid(str(exc)) from None
            out[name] = value
    return out


def _from_json(cls: type, document: Any, path: str) -> Any:
    if not isinstance(document, dict):
        raise Corrupt(f"{path}: expected an object")
    fields = _FIELDS[cls]
    unknown = set(document) - {name for name, _, _ in fields}
    if unknown:
        raise Corrupt(f"{path}: unknown fields {sorted(unknown)}")
    kwargs: dict[str, Any] = {}
    for name, attr, kind in fields:
        if name in document:
            kwargs[attr] = _value(kind, document[name], f"{path}.{name}")
        elif isinstance(kind, str | tuple):
            # Go writes and reads a missing field as its zero value (omitempty).
            kwargs[attr] = _ZERO[kind if isinstance(kind, str) else kind[0]]
        elif kind in _FIELDS:
            kwargs[attr] = None
    try:
        return cls(**kwargs)
    except TypeError:  # an enum field (no zero value) is missing
        missing = [name for name, _, _ in fields if name not in document]
        raise Corrupt(f"{path}: missing {', '.join(missing)}") from None


def _value(kind: Kind, value: Any, path: str) -> Any:
    scalar = _SCALARS.get(kind) if isinstance(kind, str) else None
    if scalar is not None:
        return scalar(value, path)
    if isinstance(kind, tuple):
        container, item_type = kind
        if container == "list":
            if value is None:
                return ()
            if not isinstance(value, list):
                raise Corrupt(f"{path}: expected a list")
            return tuple(_from_json(item_type, v, f"{path}[{i}]") for i, v in enumerate(value))
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise Corrupt(f"{path}: expected an object")
        return {
            _string(k, f"{path} key"): _from_json(item_type, v, f"{path}.{k}")
            for k, v in value.items()
        }
    if kind in _FIELDS:
        return None if value is None else _from_json(kind, value, path)
    try:
        return kind(_string(value, path))
    except ValueError:
        raise Corrupt(f"{path}: {value!r} is not one of {[m.value for m in kind]}") from None


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise Corrupt(f"{path}: expected a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Corrupt(f"{path}: unpaired UTF-16 surrogate in {value!r}") from None
    return value


def _integer(value: Any, path: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _INT_MAX:
        raise Corrupt(f"{path}: expected an integer in [0, 2^64)")
    return value


def _boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise Corrupt(f"{path}: expected true or false")
    return value


def _bytes(value: Any, path: str) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, str):
        raise Corrupt(f"{path}: expected base64 bytes")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise Corrupt(f"{path}: not standard base64") from None


_ZERO: Mapping[str, Any] = {"str": "", "int": 0, "bool": False, "bytes": b"", "list": (), "map": {}}
_SCALARS: Mapping[str, Callable[[Any, str], Any]] = {
    "str": _string,
    "int": _integer,
    "bool": _boolean,
    "bytes": _bytes,
}

"""Canonical JSON and strict decoding of routed-run records.

``marshal_canonical(value)``: sorted keys, no whitespace, UTF-8, so equal records have
equal bytes and a digest over them is stable (the admission intent digest).
``unmarshal_strict(cls, data)``: the record or ``InvalidArgument``; unknown fields,
missing required fields and values of the wrong JSON type are refused, never dropped
or coerced. Records are frozen dataclasses: the codec reads their type hints, so a new
field is one line in ``records.py`` and nothing here.

Optional fields (``X | None``) are left out when ``None`` (Go's ``omitempty``) and read
back as ``None`` when absent. Integers are Go ``int64``: booleans, floats and values
outside the signed 64-bit range are refused. The schema version is checked before the
fields (``check_schema``): a record stamped with a version this code does not know is
``UnknownSchemaVersion``, whatever its fields say.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

from .enums import CodedEnum, TextEnum
from .errors import InvalidArgument, UnknownSchemaVersion
from .ids import RoutedID, check_id

T = TypeVar("T")

SCHEMA_VERSION = "0.3.0"
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def marshal_canonical(value: Any) -> bytes:
    """Canonical JSON bytes of a record or of plain JSON data."""
    data = to_data(value) if dataclasses.is_dataclass(value) else value
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def canonical_digest(value: Any) -> str:
    """SHA-256 hex of ``marshal_canonical(value)``."""
    return hashlib.sha256(marshal_canonical(value)).hexdigest()


def to_data(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if item is None:
                continue  # omitempty: only Optional fields may hold None
            out[f.name] = to_data(item)
        return out
    if isinstance(value, (CodedEnum, TextEnum)):
        return value.to_json()
    if isinstance(value, (tuple, list)):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_data(v) for k, v in value.items()}
    return value  # str (IDs included), int, bool


def unmarshal_strict[T](cls: type[T], data: bytes | str) -> T:
    """Decode JSON text into ``cls`` strictly (the spec's ``UnmarshalStrict``)."""
    try:
        parsed = json.loads(data, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{cls.__name__}: not JSON ({exc})") from exc
    return from_data(cls, parsed)


def _no_constant(name: str) -> Any:
    raise InvalidArgument(f"JSON constant {name} is not allowed")


def check_schema(cls: type, data: Any, migrate: Callable[[str, Any], Any] | None = None) -> Any:
    """The record's ``schema_version`` must be the current one, or an older one the
    migration registry knows (then ``migrate`` brings the data forward)."""
    if not isinstance(data, dict):
        raise InvalidArgument(f"{cls.__name__}: expected a JSON object")
    version = data.get("schema_version")
    if version == SCHEMA_VERSION:
        return data
    if migrate is not None and isinstance(version, str):
        return migrate(version, data)
    raise UnknownSchemaVersion(
        f"{cls.__name__} is stamped {version!r}, this code reads {SCHEMA_VERSION}"
    )


def from_data[T](cls: type[T], data: Any, path: str = "") -> T:
    where = path or cls.__name__
    if not isinstance(data, dict):
        raise InvalidArgument(f"{where}: expected a JSON object")
    if "schema_version" in _hints(cls):
        data = check_schema(cls, data)
    hints = _hints(cls)
    unknown = sorted(set(data) - set(hints))
    if unknown:
        raise InvalidArgument(f"{where}: unknown fields {unknown}")
    values: dict[str, Any] = {}
    for name, (tp, optional, required) in hints.items():
        if name not in data:
            if required:
                raise InvalidArgument(f"{where}: missing field {name!r}")
            continue
        item = data[name]
        if item is None and optional:
            values[name] = None
            continue
        values[name] = _value(tp, item, f"{where}.{name}")
    return cls(**values)


_HINTS: dict[type, dict[str, tuple[Any, bool, bool]]] = {}


def _hints(cls: type) -> dict[str, tuple[Any, bool, bool]]:
    """Field name -> (type without None, optional, required) of a record class."""
    known = _HINTS.get(cls)
    if known is None:
        known = _HINTS[cls] = _read_hints(cls)
    return known


def _read_hints(cls: Any) -> dict[str, tuple[Any, bool, bool]]:
    hints = typing.get_type_hints(cls)
    out: dict[str, tuple[Any, bool, bool]] = {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        optional = False
        if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            optional = len(args) < len(typing.get_args(tp))
            tp = args[0]
        has_default = (
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        )
        out[f.name] = (tp, optional, not (optional or has_default))
    return out


def _value(tp: Any, item: Any, where: str) -> Any:
    # The common fields first: a plain string or in-range integer needs no introspection.
    kind = type(item)
    if (tp is str and kind is str) or (
        tp is int and kind is int and INT64_MIN <= item <= INT64_MAX
    ):
        return item
    origin = typing.get_origin(tp)
    if origin is tuple:
        if not isinstance(item, list):
            raise InvalidArgument(f"{where}: expected a JSON array")
        inner = typing.get_args(tp)[0]
        return tuple(_value(inner, v, f"{where}[{i}]") for i, v in enumerate(item))
    if origin is dict:
        if not isinstance(item, dict):
            raise InvalidArgument(f"{where}: expected a JSON object")
        inner = typing.get_args(tp)[1]
        return {k: _value(inner, v, f"{where}.{k}") for k, v in item.items()}
    if isinstance(tp, type):
        if dataclasses.is_dataclass(tp):
            return from_data(tp, item, where)
        if issubclass(tp, Enum):
            try:
                return tp.from_json(item)  # type: ignore[attr-defined]
            except InvalidArgument as exc:
                raise InvalidArgument(f"{where}: {exc}") from exc
        if issubclass(tp, RoutedID):
            check_id(tp, item, where)
            return tp(item)
        if tp is bool:
            if isinstance(item, bool):
                return item
        elif tp is int:
            if isinstance(item, int) and not isinstance(item, bool):
                if INT64_MIN <= item <= INT64_MAX:
                    return item
                raise InvalidArgument(f"{where}: {item} is outside int64")
        elif tp is str:
            if isinstance(item, str):
                return item
        else:
            raise TypeError(f"{where}: unsupported field type {tp!r}")
        raise InvalidArgument(f"{where}: expected {tp.__name__}, not {type(item).__name__}")
    raise TypeError(f"{where}: unsupported field type {tp!r}")


def check_record(record: Any, path: str = "") -> None:
    """Validate a record built in Python before it is written: every ID field has its
    prefix, every enum field holds a member, every int is an int64, and the schema
    version is current. Raises ``InvalidArgument`` (``UnknownSchemaVersion`` for the
    version); the write has not started when it does."""
    cls = type(record)
    where = path or cls.__name__
    hints = _hints(cls)
    if "schema_version" in hints and record.schema_version != SCHEMA_VERSION:
        raise UnknownSchemaVersion(
            f"{where} is stamped {record.schema_version!r}, this code writes {SCHEMA_VERSION}"
        )
    for name, (tp, optional, _required) in hints.items():
        item = getattr(record, name)
        if item is None:
            if not optional:
                raise InvalidArgument(f"{where}.{name} is required")
            continue
        _check_value(tp, item, f"{where}.{name}")


def _check_value(tp: Any, item: Any, where: str) -> None:
    if tp is int and type(item) is int and INT64_MIN <= item <= INT64_MAX:
        return  # the common case first, without introspection
    origin = typing.get_origin(tp)
    if origin is tuple:
        if not isinstance(item, tuple):
            raise InvalidArgument(f"{where}: expected a tuple")
        for i, v in enumerate(item):
            _check_value(typing.get_args(tp)[0], v, f"{where}[{i}]")
        return
    if origin is dict:
        if not isinstance(item, dict):
            raise InvalidArgument(f"{where}: expected a dict")
        for k, v in item.items():
            if not isinstance(k, str):
                raise InvalidArgument(f"{where}: keys must be strings")
            _check_value(typing.get_args(tp)[1], v, f"{where}.{k}")
        return
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(item, tp):
            raise InvalidArgument(f"{where}: expected {tp.__name__}")
        check_record(item, where)
        return
    if isinstance(tp, type) and issubclass(tp, Enum):
        if not isinstance(item, tp):
            raise InvalidArgument(f"{where}: expected a {tp.__name__}, not {item!r}")
        return
    if isinstance(tp, type) and issubclass(tp, RoutedID):
        check_id(tp, item, where)
        return
    if tp is int:
        if isinstance(item, bool) or not isinstance(item, int):
            raise InvalidArgument(f"{where}: expected an int")
        if not INT64_MIN <= item <= INT64_MAX:
            raise InvalidArgument(f"{where}: {item} is outside int64")
        return
    if not isinstance(item, tp):
        raise InvalidArgument(f"{where}: expected {tp.__name__}, not {type(item).__name__}")
    if tp is str:
        try:
            item.encode()
        except UnicodeEncodeError as exc:  # a lone surrogate has no UTF-8 bytes
            raise InvalidArgument(f"{where}: not valid Unicode text") from exc

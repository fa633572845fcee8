"""JSON encoding of records: every backend stores records through these two functions.

Decoding goes through the current dataclasses, so a field this code does not know is
dropped and a missing one takes its default (spec: "every write re-encodes a record
through the writing binary's own structs"). Bytes are base64 so payloads round-trip
byte for byte. Decoding always builds fresh objects, which is what makes returned
records independent copies.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable
from typing import Any

from . import records

_NAMES: dict[type[Any], tuple[str, ...]] = {}
_SCALARS = (str, int, float, bool, type(None))


def to_jsonable(value: Any) -> Any:
    # Scalars first: they are most values, and the checks below are costlier.
    if isinstance(value, _SCALARS) and not isinstance(value, enum.Enum):
        return value
    cls = type(value)
    names = _NAMES.get(cls)
    if names is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(value))
    if names is not None:
        return {name: to_jsonable(getattr(value, name)) for name in names}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, tuple | list | frozenset | set):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict | typing.Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


def encode(record: Any) -> str:
    """A record as compact JSON text."""
    return json.dumps(to_jsonable(record), separators=(",", ":"), sort_keys=True)


Converter = Callable[[Any], Any]


def _identity(raw: Any) -> Any:
    return raw


def _converter(tp: Any) -> Converter:
    """A function turning decoded JSON into a value of type ``tp``. Built once per
    field (decoding is on every read path, so no type inspection happens per value)."""
    if tp is Any:
        return _identity
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(inner) != 1:
            return _identity
        convert = _converter(inner[0])
        return lambda raw: None if raw is None else convert(raw)
    if origin is tuple:
        item = _converter(typing.get_args(tp)[0])
        return lambda raw: tuple(item(v) for v in raw)
    if origin is frozenset:
        item = _converter(typing.get_args(tp)[0])
        return lambda raw: frozenset(item(v) for v in raw)
    if origin is not None and origin.__name__ == "Mapping":
        return lambda raw: {str(k): v for k, v in raw.items()}
    if isinstance(tp, type):
        if dataclasses.is_dataclass(tp):
            cls = tp
            return lambda raw: decode_obj(cls, raw)
        if issubclass(tp, enum.Enum):
            return tp
        if tp is bytes:
            return base64.b64decode
    return _identity


_FIELDS: dict[type[Any], tuple[tuple[str, Converter], ...]] = {}


def _fields(cls: type[Any]) -> tuple[tuple[str, Converter], ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        hints = typing.get_type_hints(cls, vars(records))
        fields = _FIELDS[cls] = tuple(
            (f.name, _converter(hints[f.name])) for f in dataclasses.fields(cls)
        )
    return fields


def decode_obj[T](cls: type[T], raw: dict[str, Any]) -> T:
    kwargs = {name: convert(raw[name]) for name, convert in _fields(cls) if name in raw}
    return cls(**kwargs)


def decode[T](cls: type[T], text: str) -> T:
    """JSON text -> a fresh record of ``cls``; unknown fields are dropped."""
    return decode_obj(cls, json.loads(text))

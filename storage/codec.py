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
from typing import Any

from . import records


def to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
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


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls, vars(records))
    return hints


def _from(tp: Any, raw: Any) -> Any:
    if tp is Any or raw is None:
        return raw
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _from(inner[0], raw) if len(inner) == 1 else raw
    if origin is tuple:
        (item, *_rest) = typing.get_args(tp)
        return tuple(_from(item, v) for v in raw)
    if origin is frozenset:
        (item,) = typing.get_args(tp)
        return frozenset(_from(item, v) for v in raw)
    if origin is not None and origin.__name__ == "Mapping":
        return {str(k): v for k, v in raw.items()}
    if isinstance(tp, type):
        if dataclasses.is_dataclass(tp):
            return decode_obj(tp, raw)
        if issubclass(tp, enum.Enum):
            return tp(raw)
        if tp is bytes:
            return base64.b64decode(raw)
    return raw


def decode_obj[T](cls: type[T], raw: dict[str, Any]) -> T:
    hints = _hints(cls)
    kwargs = {
        f.name: _from(hints[f.name], raw[f.name])
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.name in raw
    }
    return cls(**kwargs)


def decode[T](cls: type[T], text: str) -> T:
    """JSON text -> a fresh record of ``cls``; unknown fields are dropped."""
    return decode_obj(cls, json.loads(text))

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
import operator
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

from . import records

_SCALARS = (str, int, float, bool, type(None))
# Exact scalar types, returned as they are without a dispatch (not enums: their value).
_PLAIN = frozenset(_SCALARS)
Encoder = Callable[[Any], Any]
_ENCODERS: dict[type[Any], Encoder] = {}


def to_jsonable(value: Any) -> Any:
    """``value`` as JSON-compatible data: dataclasses as dicts of their fields, enums
    as their values, bytes as base64, collections as lists, mappings as dicts."""
    cls = type(value)
    if cls in _PLAIN:
        return value
    encoder = _ENCODERS.get(cls)
    if encoder is None:
        encoder = _ENCODERS[cls] = _encoder(cls)
    return encoder(value)


def _encoder(cls: type[Any]) -> Encoder:
    """How to_jsonable treats every value of ``cls``, decided once per class (records
    are encoded on every write, so no per-value type inspection)."""
    if issubclass(cls, _SCALARS) and not issubclass(cls, enum.Enum):
        return _identity
    if dataclasses.is_dataclass(cls) and not issubclass(cls, type):
        return _fields_encoder(tuple(f.name for f in dataclasses.fields(cls)))
    if issubclass(cls, enum.Enum):
        return lambda v: v.value
    if issubclass(cls, bytes):
        return lambda v: base64.b64encode(v).decode("ascii")
    if issubclass(cls, tuple | list | frozenset | set):
        return lambda v: [to_jsonable(item) for item in v]
    if issubclass(cls, dict | typing.Mapping):
        return lambda v: {str(k): to_jsonable(item) for k, item in v.items()}
    return _identity


def _fields_encoder(names: tuple[str, ...]) -> Encoder:
    get = operator.attrgetter(*names)
    if len(names) == 1:
        return lambda v: {names[0]: to_jsonable(get(v))}

    def encode_fields(v: Any) -> dict[str, Any]:
        values = [x if type(x) in _PLAIN else to_jsonable(x) for x in get(v)]
        return dict(zip(names, values, strict=True))

    return encode_fields


# One encoder object for every record: json.dumps would build one per call.
_JSON = json.JSONEncoder(separators=(",", ":"), sort_keys=True)


def encode(record: Any) -> str:
    """A record as compact JSON text, keys sorted: exactly the text of
    ``json.dumps(to_jsonable(record), separators=(",", ":"), sort_keys=True)``,
    written without building the intermediate dicts (every write encodes)."""
    return _text(record)


# The string escaping json.dumps uses (its C implementation when available).
_ESCAPE: Callable[[str], str] = json.encoder.encode_basestring_ascii
Writer = Callable[[Any], str]
_WRITERS: dict[type[Any], Writer] = {}


def _text(value: Any) -> str:
    cls = type(value)
    if cls is str:
        return _ESCAPE(value)
    if cls is int:
        return int.__repr__(value)
    writer = _WRITERS.get(cls)
    if writer is None:
        writer = _WRITERS[cls] = _writer(cls)
    return writer(value)


def _writer(cls: Any) -> Writer:
    """How ``_text`` writes every value of ``cls``: records field by field in key
    order, and what they hold (enums, None, booleans, bytes, tuples); anything else
    through the json module itself, which keeps every rarer case exact."""
    if hasattr(cls, "__dataclass_fields__") and not issubclass(cls, type):
        return _fields_writer(cls)
    if issubclass(cls, enum.Enum):
        return lambda v: _text(v.value)
    if cls is bool:
        return lambda v: "true" if v else "false"
    if cls is type(None):
        return lambda v: "null"
    if issubclass(cls, bytes):
        return lambda v: '"' + base64.b64encode(v).decode("ascii") + '"'
    if cls in (tuple, list):
        return lambda v: "[" + ",".join(map(_text, v)) + "]"
    return lambda v: _JSON.encode(to_jsonable(v))


def _fields_writer(cls: type[Any]) -> Writer:
    names = sorted(f.name for f in dataclasses.fields(cls))
    keys = tuple(_ESCAPE(name) + ":" for name in names)
    get = _tuple_getter(operator.attrgetter, names)

    def write(v: Any) -> str:
        return "{" + ",".join([key + _text(x) for key, x in zip(keys, get(v), strict=True)]) + "}"

    return write


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
            return _enum_converter(tp)
        if tp is bytes:
            return base64.b64decode
    return _identity


def _enum_converter(cls: type[enum.Enum]) -> Converter:
    # A lookup, then the Enum call only for what it must refuse: calling an Enum class
    # costs several times a dict lookup, and every decoded record has states.
    members = {member.value: member for member in cls}

    def convert(raw: Any) -> Any:
        try:
            return members[raw]
        except (KeyError, TypeError):
            return cls(raw)

    return convert


# Per class: its field names, and the fields whose JSON needs converting (the rest,
# strings and numbers, are taken as parsed).
_FIELDS: dict[type[Any], tuple[frozenset[str], tuple[tuple[str, Converter], ...]]] = {}


def _fields(cls: type[Any]) -> tuple[frozenset[str], tuple[tuple[str, Converter], ...]]:
    fields = _FIELDS.get(cls)
    if fields is None:
        hints = typing.get_type_hints(cls, vars(records))
        names = frozenset(f.name for f in dataclasses.fields(cls))
        converted = ((f.name, _converter(hints[f.name])) for f in dataclasses.fields(cls))
        fields = _FIELDS[cls] = (names, tuple((n, c) for n, c in converted if c is not _identity))
    return fields


def decode_obj[T](cls: type[T], raw: dict[str, Any]) -> T:
    """A record of ``cls`` from freshly parsed JSON, which it consumes (converted in
    place: no copy of every field)."""
    names, converted = _fields(cls)
    if not raw.keys() <= names:
        raw = {name: value for name, value in raw.items() if name in names}
    for name, convert in converted:
        if name in raw:
            raw[name] = convert(raw[name])
    return cls(**raw)


def decode[T](cls: type[T], text: str) -> T:
    """JSON text -> a fresh record of ``cls``; unknown fields are dropped."""
    return decode_obj(cls, json.loads(text))


# -- sharing decoded records ---------------------------------------------------------
# A test of one value: an exact type (``type(v) is t``) or a predicate.
Check = Callable[..., bool]
_CHECKS: dict[type[Any], Check | None] = {}


def _check(tp: Any) -> type[Any] | Check | None:
    """How to test that a value of type ``tp`` is exactly what ``decode`` would build
    for it (same types, tuples not lists, enums not strings): a type it must have
    exactly, a predicate, or None when no value of ``tp`` may be shared (a mapping or
    free JSON can be changed in place)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        one = _predicate(_check(inner[0])) if len(inner) == 1 else None
        return None if one is None else (lambda v: v is None or one(v))
    if origin in (tuple, frozenset):
        item = _predicate(_check(typing.get_args(tp)[0]))
        kind = origin
        return None if item is None else (lambda v: type(v) is kind and all(map(item, v)))
    if not isinstance(tp, type) or origin is not None:
        return None
    if dataclasses.is_dataclass(tp):
        return shareable_check(tp)
    if issubclass(tp, enum.Enum) or tp in (str, int, bytes, bool):
        return tp
    return None


def _predicate(check: type[Any] | Check | None) -> Check | None:
    if isinstance(check, type):
        exact = check
        return lambda v: type(v) is exact
    return check


def shareable_check(cls: type[Any]) -> Check | None:
    """The canonical-value test of a frozen record class, or None when its records
    must not be shared (a field may hold a mutable mapping or free JSON)."""
    if cls in _CHECKS:
        return _CHECKS[cls]
    _CHECKS[cls] = None  # a recursive class is not shareable
    found: Check | None = None
    params = getattr(cls, "__dataclass_params__", None)
    if params is not None and params.frozen:
        hints = typing.get_type_hints(cls, vars(records))
        names = tuple(f.name for f in dataclasses.fields(cls))
        checks = [_check(hints[name]) for name in names]
        if all(c is not None for c in checks):
            found = _record_check(cls, names, checks)
    _CHECKS[cls] = found
    return found


def _record_check(
    cls: type[Any], names: tuple[str, ...], checks: list[type[Any] | Check | None]
) -> Check:
    # Fields fetched in one call and their exact types compared as one tuple: this runs
    # on every buffered write, and a test per field costs several times more.
    get = _tuple_getter(operator.attrgetter, names)
    exact = [i for i, c in enumerate(checks) if isinstance(c, type)]
    types_of = _tuple_getter(operator.itemgetter, exact)
    wanted = tuple(checks[i] for i in exact)
    nested = tuple((i, c) for i, c in enumerate(checks) if c is not None and i not in exact)

    def check(v: Any, like: Any = None) -> bool:
        if type(v) is not cls:
            return False
        values = get(v)
        if tuple(map(type, types_of(values))) != wanted:
            return False
        # Values taken over from ``like`` (a canonical record: an update made with
        # dataclasses.replace keeps its keys, payloads, bindings) need no second look.
        kept = get(like) if type(like) is cls else None
        for i, test in nested:
            if not (kept is not None and values[i] is kept[i]) and not test(values[i]):
                return False
        return True

    return check


def _tuple_getter(
    make: Callable[..., Any], keys: Sequence[Any]
) -> Callable[[Any], tuple[Any, ...]]:
    """``make(*keys)`` (attrgetter, itemgetter), always answering a tuple."""
    if not keys:
        return lambda _: ()
    if len(keys) == 1:
        one = make(keys[0])
        return lambda v: (one(v),)
    many: Callable[[Any], tuple[Any, ...]] = make(*keys)
    return many


def canonical[T](cls: type[T], record: T, like: T | None = None) -> T | None:
    """``record`` itself when it may be shared as a read result: a frozen record whose
    every value is immutable and exactly what ``decode(encode(record))`` would give.
    Otherwise that decoded copy, or None when ``cls`` is never shareable. ``like``,
    when given, is a canonical record whose values ``record`` may share."""
    check = shareable_check(cls)
    if check is None:
        return None
    return record if check(record, like) else decode(cls, encode(record))

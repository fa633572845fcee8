"""JSON value codecs: what ``Codecs.register_json`` and the built-in scalar codecs use.

Not the record codec (``storage.run_records.codec`` turns whole ``DurableRunRecord`` s into stored
JSON): this turns one business value of a node output into ``ValueRecord.data``.

``JsonCodec(cls, id=..., version=...)`` compiles ``cls`` once into a plan and refuses
(``Invalid``) any type that is not recursively concrete, so that decoding can rebuild
exactly the declared type:

- scalars ``bool``, ``int``, ``float``, ``str``, ``bytes`` (standard base64, as Go's
  ``encoding/json`` writes a ``[]byte``);
- ``T | None`` (``Optional[T]``): the one place JSON ``null`` is accepted;
- ``list[T]``, ``tuple[T, ...]``, ``tuple[A, B, ...]``, ``dict[str, T]`` (also
  ``Mapping[str, T]``, decoded as a ``dict``);
- dataclasses whose fields are all ``init`` fields of these types, recursively (a
  dataclass may refer to itself, e.g. a tree).

``Any``, ``object``, other unions, unparameterised containers, sets, enums, callables
and every other type need a custom Codec: standard JSON cannot say which dynamic type
to rebuild (the spec's "Interface fields or containers need a custom Codec").

Encoding checks each value against its declared type, at every depth, with exact types
(``type(v) is int``; a ``bool`` is not an ``int``, a subclass of a dataclass is not
that dataclass; ``float`` also takes an ``int``): a callable, a generator or any other
non-data value where data is declared is ``Invalid``, as are NaN/infinity, strings and
map keys that are not valid UTF-8 (an unpaired surrogate) and nesting deeper than
``MAX_DEPTH`` (which is also how a cycle ends). It is deterministic, so equal values give
equal bytes: compact separators, dataclass fields in declaration order, dict keys in
code point order (= UTF-8 byte order, as Go sorts map keys), ``-0.0`` written as ``0.0``
(the two compare equal). It only reads the value.

Decoding is strict (``Corrupt``): invalid UTF-8, a byte order mark, trailing content,
duplicate keys, unknown fields, missing fields without a default, NaN/Infinity,
out-of-range numbers, a fraction where an ``int`` is declared, ``null`` where the type
does not allow ``None``, unpaired ``\\uD800``-style escapes, base64 with characters
outside the standard alphabet or wrong padding, a tuple of the wrong length, and a
dataclass whose constructor refuses the fields.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import dataclasses
import json
import math
import types
import typing
from collections.abc import Mapping
from typing import Any

from ..errors import Corrupt, Invalid

# Levels of containers and dataclasses an encoded value may nest. JSON itself has no
# limit, but Python's recursion does, and a value that contains itself would never end.
MAX_DEPTH = 200

_SCALARS: tuple[type, ...] = (bool, int, float, str, bytes)


class _Plan:
    """How one declared type is checked, encoded and decoded."""

    label = ""

    def dump(self, value: Any, path: str, depth: int) -> Any:
        """The JSON document of ``value`` (plain dicts/lists/scalars)."""
        raise NotImplementedError

    def load(self, document: Any, path: str) -> Any:
        """The value of ``document`` (already parsed JSON)."""
        raise NotImplementedError


def _refuse(path: str, expected: str, value: Any) -> Invalid:
    return Invalid(f"{path}: expected {expected}, got {type(value).__name__}")


def _utf8(text: str, path: str, error: type[Exception]) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f"{path}: not valid UTF-8 ({exc.reason} at {exc.start})") from None
    return text


class _Scalar(_Plan):
    def __init__(self, kind: type) -> None:
        self.kind = kind
        self.label = kind.__name__

    def dump(self, value: Any, path: str, depth: int) -> Any:
        kind = self.kind
        if kind is float and type(value) in (float, int):
            try:
                number = float(value)
            except OverflowError:  # an int past float's range
                number = math.inf
            if not math.isfinite(number):
                raise Invalid(f"{path}: {number!r} has no JSON form")
            return 0.0 if number == 0 else number  # -0.0 == 0.0: equal values, equal bytes
        if type(value) is not kind:
            raise _refuse(path, self.label, value)
        checked: Any = value  # (mypy narrows ``value`` to object after the type test)
        if kind is str:
            return _utf8(checked, path, Invalid)
        if kind is bytes:
            return base64.b64encode(checked).decode("ascii")
        return checked

    def load(self, document: Any, path: str) -> Any:
        kind = self.kind
        if kind is bool:
            if type(document) is not bool:
                raise Corrupt(f"{path}: expected true or false")
            return document
        if kind is int:
            if type(document) is not int:
                raise Corrupt(f"{path}: expected an integer")
            return document
        if kind is float:
            if type(document) not in (int, float):
                raise Corrupt(f"{path}: expected a number")
            try:
                number = float(document)
            except OverflowError:
                number = math.inf
            if not math.isfinite(number):
                raise Corrupt(f"{path}: number out of range")
            return number
        if type(document) is not str:
            raise Corrupt(f"{path}: expected a string")
        if kind is str:
            return _utf8(document, path, Corrupt)
        try:
            return base64.b64decode(document, validate=True)
        except (binascii.Error, ValueError):
            raise Corrupt(f"{path}: not standard base64") from None


class _Optional(_Plan):
    def __init__(self, inner: _Plan) -> None:
        self.inner = inner
        self.label = f"{inner.label} | None"

    def dump(self, value: Any, path: str, depth: int) -> Any:
        return None if value is None else self.inner.dump(value, path, depth)

    def load(self, document: Any, path: str) -> Any:
        return None if document is None else self.inner.load(document, path)


def _nest(path: str, depth: int) -> int:
    if depth >= MAX_DEPTH:
        raise Invalid(f"{path}: nested deeper than {MAX_DEPTH} levels (or a cycle)")
    return depth + 1


class _List(_Plan):
    def __init__(self, item: _Plan, kind: type) -> None:
        self.item = item
        self.kind = kind  # list, or tuple for tuple[T, ...]
        self.label = f"{kind.__name__}[{item.label}{', ...' if kind is tuple else ''}]"

    def dump(self, value: Any, path: str, depth: int) -> Any:
        if type(value) is not self.kind:
            raise _refuse(path, self.label, value)
        depth = _nest(path, depth)
        items: Any = value  # (mypy narrows ``value`` to object after the type test)
        return [self.item.dump(v, f"{path}[{i}]", depth) for i, v in enumerate(items)]

    def load(self, document: Any, path: str) -> Any:
        if not isinstance(document, list):
            raise Corrupt(f"{path}: expected a list")
        return self.kind(self.item.load(v, f"{path}[{i}]") for i, v in enumerate(document))


class _Tuple(_Plan):
    def __init__(self, items: tuple[_Plan, ...]) -> None:
        self.items = items
        self.label = f"tuple[{', '.join(p.label for p in items)}]"

    def dump(self, value: Any, path: str, depth: int) -> Any:
        if type(value) is not tuple or len(value) != len(self.items):
            raise _refuse(path, self.label, value)
        depth = _nest(path, depth)
        pairs = enumerate(zip(self.items, value, strict=True))
        return [p.dump(v, f"{path}[{i}]", depth) for i, (p, v) in pairs]

    def load(self, document: Any, path: str) -> Any:
        if not isinstance(document, list) or len(document) != len(self.items):
            raise Corrupt(f"{path}: expected a list of {len(self.items)}")
        pairs = enumerate(zip(self.items, document, strict=True))
        return tuple(p.load(v, f"{path}[{i}]") for i, (p, v) in pairs)


class _Dict(_Plan):
    def __init__(self, item: _Plan) -> None:
        self.item = item
        self.label = f"dict[str, {item.label}]"

    def dump(self, value: Any, path: str, depth: int) -> Any:
        if not isinstance(value, dict | types.MappingProxyType):
            raise _refuse(path, self.label, value)
        depth = _nest(path, depth)
        for key in value:
            if type(key) is not str:
                raise Invalid(f"{path}: map key {key!r} is not a str")
            _utf8(key, f"{path} key", Invalid)
        return {key: self.item.dump(value[key], f"{path}[{key!r}]", depth) for key in sorted(value)}

    def load(self, document: Any, path: str) -> Any:
        if not isinstance(document, dict):
            raise Corrupt(f"{path}: expected an object")
        return {
            _utf8(k, f"{path} key", Corrupt): self.item.load(v, f"{path}[{k!r}]")
            for k, v in document.items()
        }


class _Record(_Plan):
    """A dataclass; ``fields`` is filled after construction so a type may refer to
    itself."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.label = cls.__qualname__
        self.fields: tuple[tuple[str, _Plan, bool], ...] = ()  # name, plan, has a default

    def dump(self, value: Any, path: str, depth: int) -> Any:
        if type(value) is not self.cls:
            raise _refuse(path, self.label, value)
        depth = _nest(path, depth)
        return {
            name: plan.dump(getattr(value, name), f"{path}.{name}", depth)
            for name, plan, _ in self.fields
        }

    def load(self, document: Any, path: str) -> Any:
        if not isinstance(document, dict):
            raise Corrupt(f"{path}: expected an object")
        known = {name for name, _, _ in self.fields}
        unknown = sorted(set(document) - known)
        if unknown:
            raise Corrupt(f"{path}: unknown fields {unknown}")
        missing = [n for n, _, default in self.fields if not default and n not in document]
        if missing:
            raise Corrupt(f"{path}: missing fields {missing}")
        kwargs = {
            name: plan.load(document[name], f"{path}.{name}")
            for name, plan, _ in self.fields
            if name in document
        }
        try:
            return self.cls(**kwargs)
        except Exception as exc:  # the dataclass's own checks (__post_init__) refused
            raise Corrupt(f"{path}: {self.label} refused the fields: {exc}") from None


def _has_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


class _Compiler:
    def __init__(self) -> None:
        self.records: dict[type, _Record] = {}

    def plan(self, declared: Any, path: str) -> _Plan:
        if declared in _SCALARS:
            return _Scalar(declared)
        origin = typing.get_origin(declared)
        args = typing.get_args(declared)
        if origin in (typing.Union, types.UnionType):
            rest = [a for a in args if a is not type(None)]
            if len(rest) == 1 and len(args) == 2:
                return _Optional(self.plan(rest[0], path))
            raise Invalid(f"{path}: the union {declared} needs a custom Codec")
        if origin is list and len(args) == 1:
            return _List(self.plan(args[0], f"{path}[]"), list)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return _List(self.plan(args[0], f"{path}[]"), tuple)
        if origin is tuple and args and Ellipsis not in args:
            return _Tuple(tuple(self.plan(a, f"{path}[{i}]") for i, a in enumerate(args)))
        if origin in (dict, Mapping) and len(args) == 2:
            if args[0] is not str:
                raise Invalid(f"{path}: map keys must be str, not {args[0]}")
            return _Dict(self.plan(args[1], f"{path}[]"))
        if isinstance(declared, type) and dataclasses.is_dataclass(declared):
            return self.record(declared, path)
        raise Invalid(f"{path}: {declared!r} is not recursively concrete; it needs a custom Codec")

    def record(self, cls: type, path: str) -> _Record:
        if cls in self.records:
            return self.records[cls]
        plan = self.records[cls] = _Record(cls)
        try:
            hints = typing.get_type_hints(cls)
        except Exception as exc:  # an annotation that does not resolve
            message = f"{path}: the annotations of {cls.__qualname__} do not resolve: {exc}"
            raise Invalid(message) from None
        fields = []
        for f in dataclasses.fields(cls):
            if not f.init:
                raise Invalid(f"{path}.{f.name}: a field that is not an init field cannot decode")
            fields.append((f.name, self.plan(hints[f.name], f"{path}.{f.name}"), _has_default(f)))
        plan.fields = tuple(fields)
        return plan


def _no_constant(name: str) -> Any:
    raise Corrupt(f"{name} is not a JSON number")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise Corrupt(f"the key {key!r} appears twice")
        out[key] = value
    return out


class JsonCodec:
    """A ``Codec`` storing ``cls`` as JSON (module docstring). Stateless once built, so
    it is safe to share between threads."""

    __slots__ = ("_id", "_plan", "_type", "_version")

    def __init__(self, cls: builtins.type, *, id: str, version: str) -> None:
        if not isinstance(cls, builtins.type):
            raise Invalid(f"a JSON codec needs a class, not {cls!r}")
        self._type = cls
        self._id = id
        self._version = version
        self._plan = _Compiler().plan(cls, "$")

    @property
    def type(self) -> builtins.type:
        return self._type

    @property
    def id(self) -> str:
        return self._id

    @property
    def version(self) -> str:
        return self._version

    def encode(self, value: Any) -> bytes:
        """Deterministic JSON bytes of ``value``; ``Invalid`` for anything the declared
        type does not describe, at any depth."""
        try:
            document = self._plan.dump(value, "$", 0)
        except RecursionError:
            raise Invalid(f"$: nested deeper than {MAX_DEPTH} levels") from None
        try:
            text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError as exc:  # an int past Python's int-to-text digit limit
            raise Invalid(f"$: {exc}") from None
        return text.encode("utf-8")

    def decode(self, data: bytes) -> Any:
        """The value ``data`` encodes; ``Corrupt`` for anything ``encode`` would not
        write."""
        if not isinstance(data, bytes):
            raise Corrupt(f"expected bytes, got {type(data).__name__}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Corrupt(f"not valid UTF-8 at byte {exc.start}") from None
        try:
            document = json.loads(text, object_pairs_hook=_unique, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise Corrupt(f"not one JSON value: {exc}") from None
        except (ValueError, RecursionError) as exc:  # a number past int's digit limit
            raise Corrupt(f"not decodable JSON: {exc}") from None
        try:
            return self._plan.load(document, "$")
        except RecursionError:
            raise Corrupt("nested too deep to decode") from None

    def __repr__(self) -> str:
        return f"JsonCodec({self._plan.label}, id={self._id!r}, version={self._version!r})"

"""Value codecs: the spec's "Codec contract" for the business values of node outputs.

Not the record codec (``storage.run_records.codec`` stores whole ``DurableRunRecord`` s): a value
codec turns one node output into the opaque ``ValueRecord.data`` and back, and the
``ValueRecord``'s ``type_id``/``version`` name the codec that wrote it.

- ``Codec``: the Protocol (``type``, ``id``, ``version``, ``encode``, ``decode``).
  Encode and decode must be synchronous, safe to call from several threads, never
  change the value, and give equal bytes for equal values; decode returns an instance
  of ``type``.
- ``Codecs``: the registry. ``register`` compares types by identity (``int`` and
  ``bool`` are two types); type, ID and version must be valid (``check_codec``); a
  second codec for a registered type or ID is ``Conflict`` and the first stays. An
  empty ``Codecs()`` takes custom entries; ``new_codecs()`` also holds the built-in
  JSON codecs of ``BUILTIN_CODECS``. ``register_json(cls, id=, version=)`` adds a
  ``JsonCodec`` for a recursively concrete dataclass (``storage.run_records.value_json``).
- ``Codecs.encode(value)`` picks the codec of ``type(value)``, refuses non-data values
  at any depth first (``check_data``, so a custom codec cannot be handed a callable or
  a generator either), and checks the codec returned bytes; ``ready_value`` wraps the
  bytes in a ready ``ValueRecord`` with their SHA-256.
- ``ValueCatalog``: what a reader of run records needs to restore values: the codecs
  and, where the host knows it, the declared type of each output.

Restoring a stored value (the four checks of the spec) is ``storage.run_records.value_restore``.
"""

from __future__ import annotations

import builtins
import collections.abc
import dataclasses
import enum
import hashlib
import io
import re
import threading
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import Conflict, Invalid
from .records import ValueRecord, ValueState
from .value_json import MAX_DEPTH, JsonCodec


@runtime_checkable
class Codec(Protocol):
    """One business type's stored form (the spec's ``Codec`` interface)."""

    @property
    def type(self) -> builtins.type: ...

    @property
    def id(self) -> str: ...

    @property
    def version(self) -> str: ...

    def encode(self, value: Any) -> bytes: ...

    def decode(self, data: bytes) -> Any: ...


# The built-in codecs ``new_codecs()`` registers: (type, ID, version). These are stored
# in every ValueRecord they write, so they never change; a new encoding gets a new
# version (storage/README.md lists them).
BUILTIN_CODECS: tuple[tuple[type, str, str], ...] = (
    (bool, "builtin/bool", "1"),
    (int, "builtin/int", "1"),
    (float, "builtin/float", "1"),
    (str, "builtin/str", "1"),
    (bytes, "builtin/bytes", "1"),
)

# An ID or version: what can sit in a record, a URL and a log line without quoting.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}")

# Types whose values are behaviour or live resources, never data (the spec's channels,
# functions and unsafe.Pointer): a codec cannot be registered for one.
_NON_DATA_TYPES: tuple[Any, ...] = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
    types.FrameType,
    types.TracebackType,
    collections.abc.Iterator,
    collections.abc.AsyncIterator,
    collections.abc.Awaitable,
    collections.abc.Callable,
    io.IOBase,
    builtins.type,
)


def check_codec(codec: Codec) -> tuple[type, str, str]:
    """The codec's (type, ID, version), or ``Invalid`` naming what is wrong."""
    try:
        declared, codec_id, version = codec.type, codec.id, codec.version
    except Exception as exc:  # a custom codec whose properties raise
        raise Invalid(f"the codec does not say its type, ID and version: {exc}") from None
    if not isinstance(declared, builtins.type) or declared is typing.Any:
        raise Invalid(f"a codec's type must be a class, not {declared!r}")
    if issubclass(declared, _NON_DATA_TYPES):
        raise Invalid(f"{declared.__qualname__} values are not data: no codec can store them")
    for what, name in (("ID", codec_id), ("version", version)):
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise Invalid(
                f"codec {what} {name!r} must be 1-128 ASCII letters, digits or ._:/@+- "
                "starting with a letter or digit"
            )
    for method in ("encode", "decode"):
        if not callable(getattr(codec, method, None)):
            raise Invalid(f"the codec has no {method} method")
    return declared, codec_id, version


def check_data(value: Any, path: str = "$") -> None:
    """``Invalid`` naming the first non-data value in ``value`` at any depth: a callable
    (function, method, lambda, class, partial), a generator, iterator, coroutine or
    awaitable, a module, an open file or stream, a frame; or nesting past ``MAX_DEPTH``
    (a cycle). Walks lists, tuples, sets, mappings (keys and values), dataclass fields
    and the attributes of plain objects."""
    _check(value, path, 0)


def _check(value: Any, path: str, depth: int) -> None:
    if value is None or type(value) in (bool, int, float, complex, str, bytes):
        return
    if isinstance(value, enum.Enum):  # a member's attributes hold its class: still data
        return
    what = _non_data(value)
    if what:
        raise Invalid(f"{path}: {what} ({type(value).__qualname__}) is not data")
    if depth >= MAX_DEPTH:
        raise Invalid(f"{path}: nested deeper than {MAX_DEPTH} levels (or a cycle)")
    depth += 1
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check(key, f"{path} key {key!r}", depth)
            _check(item, f"{path}[{key!r}]", depth)
    elif isinstance(value, list | tuple | set | frozenset):
        for i, item in enumerate(value):
            _check(item, f"{path}[{i}]", depth)
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            _check(getattr(value, f.name, None), f"{path}.{f.name}", depth)
    elif hasattr(value, "__dict__") and not isinstance(value, type):
        for name, item in vars(value).items():
            _check(item, f"{path}.{name}", depth)


def _non_data(value: Any) -> str:
    if isinstance(value, types.GeneratorType | types.AsyncGeneratorType):
        return "a generator"
    if isinstance(value, types.CoroutineType | collections.abc.Awaitable):
        return "a coroutine or awaitable"
    if isinstance(value, io.IOBase):
        return "an open file or stream"
    if isinstance(value, collections.abc.Iterator | collections.abc.AsyncIterator):
        return "an iterator"
    if isinstance(value, types.ModuleType | types.FrameType | types.TracebackType):
        return "a module or frame"
    if callable(value):
        return "a callable"
    return ""


class Codecs:
    """The registry of value codecs, by type and by ID. Safe to share between threads:
    registration takes a lock, lookups read a dict."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_type: dict[type, Codec] = {}
        self._by_id: dict[str, Codec] = {}

    def register(self, codec: Codec) -> Codec:
        """Add ``codec``; ``Invalid`` (``check_codec``), or ``Conflict`` when its type or
        its ID is taken (the registered codec stays)."""
        declared, codec_id, _ = check_codec(codec)
        with self._lock:
            if declared in self._by_type:
                taken = self._by_type[declared]
                raise Conflict(f"{declared.__qualname__} already has the codec {taken.id!r}")
            if codec_id in self._by_id:
                taken = self._by_id[codec_id]
                raise Conflict(f"codec ID {codec_id!r} is taken by {taken.type.__qualname__}")
            self._by_type[declared] = codec
            self._by_id[codec_id] = codec
        return codec

    def register_json(self, cls: type, *, id: str, version: str) -> JsonCodec:
        """Register a ``JsonCodec`` for ``cls``; ``Invalid`` when ``cls`` is not
        recursively concrete (``storage.run_records.value_json``)."""
        codec = JsonCodec(cls, id=id, version=version)
        self.register(codec)
        return codec

    def for_type(self, declared: type) -> Codec | None:
        return self._by_type.get(declared)

    def for_id(self, codec_id: str) -> Codec | None:
        return self._by_id.get(codec_id)

    def __iter__(self) -> Iterator[Codec]:
        return iter(list(self._by_id.values()))  # registration order

    def __len__(self) -> int:
        return len(self._by_id)

    def encode(self, value: Any) -> tuple[Codec, bytes]:
        """The codec registered for ``type(value)`` and the bytes it writes. ``Invalid``
        when no codec is registered for that exact type, when the value holds a non-data
        value at any depth, or when the codec returns something other than bytes."""
        codec = self._by_type.get(type(value))
        if codec is None:
            raise Invalid(f"no codec is registered for {type(value).__qualname__}")
        check_data(value)
        data = codec.encode(value)
        if not isinstance(data, bytes):
            raise Invalid(f"codec {codec.id!r} returned {type(data).__name__}, not bytes")
        return codec, data

    def ready_value(self, name: str, value: Any) -> ValueRecord:
        """A ready ``ValueRecord`` of ``value``: its codec's ID and version, the bytes and
        their SHA-256 (zero bytes included)."""
        codec, data = self.encode(value)
        digest = hashlib.sha256(data).hexdigest()
        return ValueRecord(name, codec.id, codec.version, ValueState.READY, digest, data)


def new_codecs() -> Codecs:
    """A registry holding the built-in JSON codecs (``BUILTIN_CODECS``)."""
    codecs = Codecs()
    for declared, codec_id, version in BUILTIN_CODECS:
        codecs.register(JsonCodec(declared, id=codec_id, version=version))
    return codecs


@dataclass(frozen=True)
class ValueCatalog:
    """What restoring a run's values needs from the host that defined the graphs: its
    codecs, and the declared type of each output by (graph ID, node ID, output name).
    An output the host does not declare is checked against its codec's own type."""

    codecs: Codecs
    declared: Mapping[tuple[str, str, str], type] = field(
        default_factory=lambda: types.MappingProxyType({})
    )

    def declared_type(self, graph: str, node_id: str, name: str) -> type | None:
        return self.declared.get((graph, node_id, name))

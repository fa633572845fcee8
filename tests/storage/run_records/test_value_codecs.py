"""Value codecs (storage/run_records/value_codecs.py, value_json.py): the registry's rules, the
built-in JSON codecs, register_json's concrete types, strict decoding, equal values to
equal bytes, and refusal of non-data values at any depth. The hypothesis properties
(round trips, no mutation) are in test_value_codecs_roundtrip.py."""

from __future__ import annotations

import functools
import hashlib
import io
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pytest

from storage.errors import Conflict, Corrupt, Invalid
from storage.run_records import (
    BUILTIN_CODECS,
    Codec,
    Codecs,
    JsonCodec,
    ValueState,
    check_data,
    new_codecs,
)

from ..support.value_codecs import Line, Order, order_codec

# ---------------------------------------------------------------- business types


@dataclass
class Tree:  # refers to itself
    label: str
    children: list[Tree]


@dataclass
class Loose:
    anything: Any


@dataclass
class Interface:
    item: object


@dataclass
class Handler:
    callback: Callable[[], int]


@dataclass
class Nested:  # a callable three levels down
    inner: list[dict[str, Handler]]


@dataclass
class Either:
    value: int | str


@dataclass
class IntKeys:
    value: dict[int, str]


@dataclass(frozen=True)
class Positive:
    n: int

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError("n must be positive")


class Opaque:
    """A custom type with a custom codec."""

    def __init__(self, payload: object) -> None:
        self.payload = payload


class OpaqueCodec:
    type = Opaque
    id = "test.opaque"
    version = "1"

    def encode(self, value: Any) -> bytes:
        return repr(value.payload).encode()

    def decode(self, data: bytes) -> Any:
        return Opaque(data.decode())


def order(**changes: Any) -> Order:
    base: dict[str, Any] = {
        "order_id": "o-1",
        "lines": (Line("tea", 2, 3.5), Line("mug", 1, 9.0)),
        "tags": {"b": 2, "a": 1},
        "coupon": None,
        "blob": b"\x00\xff",
        "pair": (7, "seven"),
        "notes": ["leave at the door"],
    }
    return Order(**{**base, **changes})


# ---------------------------------------------------------------- registration


def test_an_empty_registry_takes_custom_entries() -> None:
    codecs = Codecs()
    codec = OpaqueCodec()

    codecs.register(codec)

    assert len(codecs) == 1
    assert codecs.for_type(Opaque) is codec
    assert codecs.for_id("test.opaque") is codec
    assert codecs.for_type(int) is None  # no built-ins in an empty registry
    assert isinstance(codec, Codec)


def test_new_codecs_holds_the_built_in_codecs_with_stable_ids() -> None:
    codecs = new_codecs()

    found = [(c.type, c.id, c.version) for c in codecs]

    assert found == list(BUILTIN_CODECS)
    assert (
        (bool, "builtin/bool", "1"),
        (int, "builtin/int", "1"),
        (float, "builtin/float", "1"),
        (str, "builtin/str", "1"),
        (bytes, "builtin/bytes", "1"),
    ) == BUILTIN_CODECS


def test_it_refuses_a_second_codec_for_a_type_and_keeps_the_first() -> None:
    codecs = new_codecs()
    first = codecs.for_type(int)

    with pytest.raises(Conflict, match="already has the codec 'builtin/int'"):
        codecs.register(JsonCodec(int, id="other/int", version="1"))

    assert codecs.for_type(int) is first
    assert codecs.for_id("other/int") is None


def test_it_refuses_a_second_codec_with_an_id_and_keeps_the_first() -> None:
    codecs = new_codecs()
    first = codecs.for_id("builtin/str")

    with pytest.raises(Conflict, match="taken by str"):
        codecs.register_json(Line, id="builtin/str", version="2")

    assert codecs.for_id("builtin/str") is first
    assert codecs.for_type(Line) is None


def test_registration_compares_types_so_bool_and_int_are_two() -> None:
    codecs = Codecs()
    codecs.register(JsonCodec(int, id="a", version="1"))
    codecs.register(JsonCodec(bool, id="b", version="1"))

    assert codecs.encode(True)[0].id == "b"
    assert codecs.encode(1)[0].id == "a"


@pytest.mark.parametrize(
    ("codec_id", "version"),
    [
        ("", "1"),
        ("x", ""),
        (" x", "1"),
        ("x y", "1"),
        ("x", "1\n"),
        ("é", "1"),
        ("-x", "1"),
        ("x" * 129, "1"),
        (None, "1"),
        ("x", 1),
    ],
)
def test_it_refuses_an_invalid_or_empty_id_or_version(codec_id: Any, version: Any) -> None:
    codec = OpaqueCodec()
    codec.id, codec.version = codec_id, version  # type: ignore[misc]
    codecs = Codecs()

    with pytest.raises(Invalid, match="must be 1-128 ASCII"):
        codecs.register(codec)

    assert len(codecs) == 0


@pytest.mark.parametrize(
    "declared",
    [int | None, list[int], "Order", Any, None, type(len), type(x for x in ()), io.IOBase],
)
def test_it_refuses_a_type_that_is_no_data_class(declared: Any) -> None:
    codec = OpaqueCodec()
    codec.type = declared  # type: ignore[misc, assignment]

    with pytest.raises(Invalid):
        Codecs().register(codec)


def test_registration_is_safe_from_several_threads() -> None:
    codecs = Codecs()
    won: list[str] = []

    def register(i: int) -> None:
        try:
            codecs.register(JsonCodec(Line, id=f"line-{i}", version="1"))
            won.append(f"line-{i}")
        except Conflict:
            pass

    threads = [threading.Thread(target=register, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(won) == 1  # one type, one codec
    assert [c.id for c in codecs] == won


# ---------------------------------------------------------------- register_json


def test_a_nested_dataclass_round_trips_exactly() -> None:
    codec = order_codec()
    value = order(coupon="WELCOME")

    data = codec.encode(value)

    assert codec.decode(data) == value
    assert data.startswith(b'{"order_id":"o-1","lines":[{"sku":"tea","quantity":2,')
    assert b'"tags":{"a":1,"b":2}' in data  # map keys in code point order
    assert b'"blob":"AP8="' in data  # bytes as standard base64


def test_a_dataclass_may_refer_to_itself() -> None:
    codec = JsonCodec(Tree, id="t", version="1")
    value = Tree("root", [Tree("a", []), Tree("b", [Tree("c", [])])])

    assert codec.decode(codec.encode(value)) == value


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (Loose, "not recursively concrete"),
        (Interface, "not recursively concrete"),
        (list, "not recursively concrete"),
        (dict, "not recursively concrete"),
        (set, "not recursively concrete"),
        (Opaque, "not recursively concrete"),
    ],
)
def test_register_json_refuses_a_type_that_is_not_recursively_concrete(
    cls: type, message: str
) -> None:
    codecs = new_codecs()

    with pytest.raises(Invalid, match=message):
        codecs.register_json(cls, id="x", version="1")

    assert codecs.for_id("x") is None


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (Handler, r"\$.callback: .*Callable.* is not recursively concrete"),
        (Nested, r"\$.inner\[\]\[\].callback: .*Callable"),
        (Either, "the union .* needs a custom Codec"),
        (IntKeys, "map keys must be str"),
    ],
)
def test_register_json_refuses_callable_union_and_key_fields_at_any_depth(
    cls: type, message: str
) -> None:
    with pytest.raises(Invalid, match=message):
        JsonCodec(cls, id="x", version="1")


# ---------------------------------------------------------------- strict decoding


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b'{"sku":"tea","quantity":2,"price":1.0,"colour":"red"}', "unknown fields"),
        (b'{"sku":"tea","quantity":2,"price":1.0} {}', "not one JSON value"),
        (b'{"sku":"tea","quantity":2,"price":1.0}x', "not one JSON value"),
        (b'{"sku":"t\xe9a","quantity":2,"price":1.0}', "not valid UTF-8"),
        (b'\xef\xbb\xbf{"sku":"tea","quantity":2,"price":1.0}', "not one JSON value"),
        (b'{"sku":"\\ud800","quantity":2,"price":1.0}', "not valid UTF-8"),
        (b'{"sku":null,"quantity":2,"price":1.0}', "expected a string"),
        (b'{"sku":"tea","quantity":2.5,"price":1.0}', "expected an integer"),
        (b'{"sku":"tea","quantity":true,"price":1.0}', "expected an integer"),
        (b'{"sku":"tea","quantity":2,"price":NaN}', "not a JSON number"),
        (b'{"sku":"tea","quantity":2,"price":1e999}', "out of range"),
        (b'{"sku":"tea","quantity":2}', "missing fields"),
        (b'{"sku":"tea","sku":"mug","quantity":2,"price":1.0}', "appears twice"),
        (b"null", "expected an object"),
        (b"", "not one JSON value"),
    ],
)
def test_decode_refuses_what_encode_never_writes(data: bytes, why: str) -> None:
    codec = JsonCodec(Line, id="line", version="1")

    with pytest.raises(Corrupt, match=why):
        codec.decode(data)


def test_null_is_accepted_only_where_the_type_allows_none() -> None:
    codec = order_codec()
    good = codec.encode(order())

    assert codec.decode(good).coupon is None
    for name in (b'"blob":"AP8="', b'"pair":[7,"seven"]', b'"tags":{"a":1,"b":2}'):
        key = name.split(b":")[0]
        with pytest.raises(Corrupt):
            codec.decode(good.replace(name, key + b":null"))
    for declared in (bool, int, float, str, bytes):
        with pytest.raises(Corrupt):
            JsonCodec(declared, id="x", version="1").decode(b"null")


def test_bytes_decode_refuses_what_is_not_standard_base64() -> None:
    codec = JsonCodec(bytes, id="b", version="1")

    assert codec.decode(b'"AP8="') == b"\x00\xff"
    for bad in (b'"AP8"', b'"A_8="', b'"AP8=\\n"'):
        with pytest.raises(Corrupt, match="base64"):
            codec.decode(bad)


def test_a_tuple_of_the_wrong_length_is_corrupt() -> None:
    codec = order_codec()
    data = codec.encode(order()).replace(b'"pair":[7,"seven"]', b'"pair":[7]')

    with pytest.raises(Corrupt, match="list of 2"):
        codec.decode(data)


def test_a_dataclass_that_refuses_its_fields_is_corrupt_not_a_crash() -> None:
    codec = JsonCodec(Positive, id="p", version="1")

    with pytest.raises(Corrupt, match="n must be positive"):
        codec.decode(b'{"n":0}')


# ---------------------------------------------------------------- encoding


def test_encode_refuses_strings_and_keys_that_are_not_utf8() -> None:
    codec = order_codec()

    with pytest.raises(Invalid, match=r"\$.order_id: not valid UTF-8"):
        codec.encode(order(order_id="\ud800"))
    with pytest.raises(Invalid, match="key: not valid UTF-8"):
        codec.encode(order(tags={"\udfff": 1}))


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_encode_refuses_numbers_json_cannot_hold(number: float) -> None:
    with pytest.raises(Invalid, match="no JSON form"):
        order_codec().encode(order(lines=(Line("tea", 1, number),)))


def test_equal_values_encode_to_equal_bytes() -> None:
    codec = order_codec()

    # Insertion order of a map, an int where a float is declared, the sign of zero, a
    # read-only mapping: equal values all the same.
    one = order(tags={"a": 1, "b": 2}, lines=(Line("tea", 1, 0.0),))
    two = order(tags={"b": 2, "a": 1}, lines=(Line("tea", 1, -0.0),))
    three = order(tags=MappingProxyType({"a": 1, "b": 2}), lines=(Line("tea", 1, 0),))  # type: ignore[arg-type]

    assert one == two
    assert codec.encode(one) == codec.encode(two) == codec.encode(three)


def test_encode_refuses_values_of_another_type_than_declared() -> None:
    codec = order_codec()

    for bad in (
        order(lines=[Line("tea", 1, 1.0)]),  # a list where a tuple is declared
        order(lines=(Line("tea", True, 1.0),)),  # a bool is no int
        order(pair=(1, "a", "extra")),
        order(tags={1: 1}),
        order(blob=bytearray(b"x")),
        "not an order",
    ):
        with pytest.raises(Invalid):
            codec.encode(bad)

    @dataclass(frozen=True)
    class SubLine(Line):
        colour: str = "red"

    with pytest.raises(Invalid, match="expected Line"):
        codec.encode(order(lines=(SubLine("tea", 1, 1.0),)))


def _generator() -> Any:
    yield 1


async def _coroutine() -> None:
    return None


NON_DATA: list[Any] = [
    lambda: 1,
    len,
    print,
    functools.partial(int, "1"),
    _generator(),
    iter([1]),
    map(str, [1]),
    io.BytesIO(b"x"),
    threading,  # a module
    Line,  # a class
    str.upper,
    "".join,
]


@pytest.mark.parametrize("bad", NON_DATA, ids=lambda v: type(v).__name__)
def test_non_data_values_are_refused_at_any_depth(bad: Any) -> None:
    codec = order_codec()
    codecs = new_codecs()
    codecs.register(codec)
    codecs.register(OpaqueCodec())

    nested = [
        order(order_id=bad),
        order(lines=(Line("tea", bad, 1.0),)),
        order(tags={"a": bad}),
        order(notes=["ok", bad]),
        order(coupon=bad),
        order(pair=(1, bad)),
    ]
    for value in nested:
        with pytest.raises(Invalid):
            codecs.encode(value)
    # A custom codec is never handed one either: the registry walks every value first.
    for value in (Opaque(bad), Opaque([{"k": (1, bad)}]), Opaque(Opaque({bad}))):
        with pytest.raises(Invalid, match="is not data"):
            codecs.encode(value)
    with pytest.raises(Invalid):
        check_data({"deep": [[[[(bad,)]]]]})
    if hasattr(bad, "close"):
        bad.close()


def test_a_coroutine_is_refused_without_being_run() -> None:
    coroutine = _coroutine()
    try:
        with pytest.raises(Invalid, match="coroutine"):
            check_data([coroutine])
    finally:
        coroutine.close()


def test_a_value_that_contains_itself_is_refused_not_a_recursion_error() -> None:
    codecs = new_codecs()
    codecs.register_json(Tree, id="tree", version="1")
    tree = Tree("loop", [])
    tree.children.append(tree)

    with pytest.raises(Invalid, match="nested deeper"):
        codecs.encode(tree)


def test_a_custom_codec_that_returns_no_bytes_type_is_refused() -> None:
    class Sloppy(OpaqueCodec):
        def encode(self, value: Any) -> Any:
            return "text"

    codecs = Codecs()
    codecs.register(Sloppy())

    with pytest.raises(Invalid, match="returned str, not bytes"):
        codecs.encode(Opaque(1))


def test_a_value_without_a_registered_codec_is_refused() -> None:
    with pytest.raises(Invalid, match="no codec is registered for Line"):
        new_codecs().encode(Line("tea", 1, 1.0))


def test_ready_value_carries_the_codec_and_the_sha256_of_the_bytes() -> None:
    class Empty(OpaqueCodec):
        def encode(self, value: Any) -> bytes:
            return b""  # a custom codec may write zero bytes

    codecs = new_codecs()
    codecs.register(Empty())

    text = codecs.ready_value("greeting", "héllo")
    empty = codecs.ready_value("nothing", Opaque(None))

    assert (text.type_id, text.version, text.state) == ("builtin/str", "1", ValueState.READY)
    assert text.data == '"héllo"'.encode()
    assert text.digest == hashlib.sha256(text.data).hexdigest()
    assert empty.data == b""
    assert empty.digest == hashlib.sha256(b"").hexdigest()

"""Properties of the value codecs (storage/run_records/value_json.py): encoding is
deterministic through a round trip (encode(decode(encode(v))) == encode(v)), equal
values give equal bytes, encoding never changes the value, and decoding arbitrary bytes
is a value or ``Corrupt``, never another exception."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.errors import Corrupt
from storage.run_records import new_codecs

from ..support.value_codecs import Line, Order, order_codec

# Wall-clock deadlines measure the shared test machine, not the codec.
SLOW_OK = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

TEXT = st.text(st.characters(exclude_categories=("Cs",)))  # no unpaired surrogates
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
LINES = st.builds(Line, TEXT, st.integers(), FLOATS | st.integers())
ORDERS = st.builds(
    Order,
    order_id=TEXT,
    lines=st.lists(LINES, max_size=4).map(tuple),
    tags=st.dictionaries(TEXT, st.integers(), max_size=4),
    coupon=st.none() | TEXT,
    blob=st.binary(),
    pair=st.tuples(st.integers(), TEXT),
    notes=st.lists(TEXT, max_size=3),
)
SCALARS = st.one_of(st.booleans(), st.integers(), FLOATS, TEXT, st.binary())


@SLOW_OK
@given(ORDERS)
def test_encoding_is_deterministic_through_a_round_trip(value: Order) -> None:
    codec = order_codec()

    data = codec.encode(value)

    assert codec.encode(codec.decode(data)) == data
    assert codec.encode(copy.deepcopy(value)) == data  # equal values, equal bytes


@SLOW_OK
@given(SCALARS)
def test_built_in_codecs_are_deterministic_through_a_round_trip(value: object) -> None:
    codecs = new_codecs()
    codec, data = codecs.encode(value)

    decoded = codec.decode(data)

    assert codec.encode(decoded) == data
    assert type(decoded) is type(value)
    assert decoded == value  # -0.0 comes back as 0.0, which is equal


@SLOW_OK
@given(ORDERS)
def test_encoding_never_changes_the_value(value: Order) -> None:
    before = copy.deepcopy(value)
    tags_before = list(value.tags.items())

    order_codec().encode(value)

    assert value == before
    assert list(value.tags.items()) == tags_before  # not even the map's order


@SLOW_OK
@given(st.binary(max_size=64))
def test_decoding_arbitrary_bytes_is_a_value_or_corrupt(data: bytes) -> None:
    codec = order_codec()
    try:
        value = codec.decode(data)
    except Corrupt:
        return
    assert isinstance(value, Order)

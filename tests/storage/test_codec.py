"""The record codec's fast paths against their definitions (``storage/codec.py``).

``encode`` writes JSON text directly; it must give exactly the bytes of the json
module over ``to_jsonable`` (stored records compare byte for byte across versions).
``canonical`` lets the ORM transaction's buffer share a record with its callers only
when it is exactly what decoding would build; a record it passes must round-trip to
an equal record of identical types, and a decoded record must always pass.
"""

from __future__ import annotations

import json
from dataclasses import fields, is_dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from storage import codec
from storage.records import (
    ArtifactRef,
    Binding,
    CorrelationKey,
    Event,
    Execution,
    ExecutionState,
    Outcome,
    OutcomeKind,
    Payload,
    Route,
    Scope,
    StoredEvent,
    Timer,
    Wait,
    WaitState,
    Work,
    WorkState,
)

text = st.text(max_size=12) | st.sampled_from(["", "é", '"\\/\n', "\x00\u2028", "𝄞"])
ints = st.integers(-(2**70), 2**70)
json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | ints | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)


def seq(items: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A tuple as declared, or a list where a caller was loose."""
    return st.lists(items, max_size=3).flatmap(lambda xs: st.sampled_from([tuple(xs), xs]))


def state(enum: type[Any]) -> st.SearchStrategy[Any]:
    """An enum member, or its value as a plain string."""
    return st.sampled_from(list(enum)) | st.sampled_from([m.value for m in enum])


keys = st.builds(CorrelationKey, text, text)
payloads = st.builds(Payload, text, st.binary(max_size=12))
bindings = st.builds(Binding, text, text, seq(text))
outcomes = st.builds(Outcome, state(OutcomeKind), text, st.none() | payloads)
artifacts = st.builds(ArtifactRef, text, ints, text, text)
events = st.builds(
    Event, text, text, text, text, text, seq(keys), text, text, st.none() | payloads, ints, ints
)
records = st.one_of(
    st.builds(
        Work,
        text,
        text,
        text,
        text,
        state(WorkState),
        seq(keys),
        st.none() | payloads,
        text,
        st.booleans(),
        text,
        ints,
        ints,
        ints,
    ),
    st.builds(
        Execution,
        text,
        text,
        ints,
        state(ExecutionState),
        text,
        st.none() | bindings,
        text,
        st.none() | outcomes,
        seq(artifacts),
        text,
        ints,
        ints,
        ints,
        ints,
        ints,
        ints,
    ),
    events,
    st.builds(StoredEvent, events, ints, text, st.none() | st.builds(Route, text, text, ints)),
    st.builds(Timer, text, ints, events, text, text, ints, ints, ints),
    st.builds(
        Wait,
        text,
        text,
        text,
        seq(keys),
        seq(text),
        ints,
        text,
        text,
        text,
        text,
        state(WaitState),
        text,
        ints,
        ints,
        ints,
    ),
    st.builds(
        Scope,
        text,
        text,
        text,
        seq(json_values),
        seq(bindings),
        st.dictionaries(text, json_values, max_size=3),
        seq(text),
        ints,
        ints,
        ints,
    ),
)


def reference(record: Any) -> str:
    return json.dumps(codec.to_jsonable(record), separators=(",", ":"), sort_keys=True)


@given(records)
def test_encode_writes_the_json_modules_text(record: Any) -> None:
    assert codec.encode(record) == reference(record)


def identical(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down."""
    if type(a) is not type(b):
        return False
    if is_dataclass(a):
        return all(identical(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(map(identical, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(identical(a[k], b[k]) for k in a)
    return bool(a == b) or a != a  # NaN equals itself here


@given(records)
def test_canonical_shares_only_what_decoding_would_build(record: Any) -> None:
    cls = type(record)
    try:
        decoded = codec.decode(cls, codec.encode(record))
    except ValueError:  # a state no enum has: the storage refuses it before any write
        return
    kept = codec.canonical(cls, record)
    if kept is None:
        assert cls is Scope  # free JSON and a mapping: never shared
        return
    assert identical(kept, decoded)
    if kept is record:
        assert identical(record, decoded)
    assert codec.canonical(cls, decoded) is decoded


def test_a_boolean_where_an_integer_belongs_is_not_shared() -> None:
    work = Work(id="w1", kind="a.b", revision=True)  # type: ignore[arg-type]
    kept = codec.canonical(Work, work)
    assert kept is not work
    assert identical(kept, codec.decode(Work, codec.encode(work)))


@given(records)
def test_a_value_taken_over_from_a_canonical_record_is_not_checked_again(record: Any) -> None:
    cls = type(record)
    try:
        decoded = codec.decode(cls, codec.encode(record))
    except ValueError:
        return
    if codec.shareable_check(cls) is None:
        return
    # The same record built afresh from the decoded one's values: canonical either way.
    again = cls(**{f.name: getattr(decoded, f.name) for f in fields(decoded)})
    assert codec.canonical(cls, again, like=decoded) is again
    assert codec.canonical(cls, record, like=decoded) is record or not identical(record, decoded)

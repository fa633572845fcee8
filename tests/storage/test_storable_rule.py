"""The storable-text rule's fast walk (``fields._storable``, run on every record
written) says exactly what the rule says string by string: a record is storable when
each string inside it (fields, nested records, tuples, lists, mapping keys and values,
StrEnum members) has no NUL and no unpaired surrogate, and ``require_storable`` refuses
the others as ``Invalid``, naming where the string sits."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage import Invalid
from storage.tx import fields


class Colour(enum.StrEnum):
    PLAIN = "plain"
    NUL = "a\x00b"


class Level(enum.IntEnum):
    LOW = 1


@dataclass(frozen=True)
class Inner:
    name: Any
    count: int = 0


@dataclass(frozen=True)
class Outer:
    id: Any
    inner: Any
    tags: Any = ()
    extra: Any = None


texts = st.lists(st.sampled_from(["a", "Z", "é", "日", "\x00", "\ud800", "\udfff", " "])).map(
    "".join
)
leaves = (
    texts
    | st.integers()
    | st.floats(allow_nan=False)
    | st.binary(max_size=4)
    | st.none()
    | st.booleans()
    | st.sampled_from(list(Colour))
    | st.sampled_from(list(Level))
)
values = st.recursive(
    leaves,
    lambda inner: (
        st.builds(Inner, inner, st.integers())
        | st.builds(Outer, inner, inner, st.tuples(inner, inner), inner)
        | st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(texts, inner, max_size=3)
    ),
    max_leaves=12,
)


def storable_by_each_string(value: object) -> bool:
    """The rule string by string, on the paths require_storable names."""
    for path, text in fields._strings(value, "record"):
        try:
            fields.require_unicode(text, path)
        except Invalid:
            return False
    return True


@given(values)
def test_the_fast_walk_agrees_with_the_rule_string_by_string(value: object) -> None:
    assert fields._storable(value) is storable_by_each_string(value)


@given(values)
def test_require_storable_refuses_exactly_what_the_rule_refuses(value: object) -> None:
    if storable_by_each_string(value):
        fields.require_storable(value, "record")
    else:
        with pytest.raises(Invalid, match="record"):
            fields.require_storable(value, "record")


def test_a_bad_string_deep_inside_is_named_by_its_path() -> None:
    record = Outer("w1", Inner("ok"), tags=("fine", {"key": "a\x00b"}))

    with pytest.raises(Invalid, match=r"record tags\[1\]\['key'\] contains a NUL"):
        fields.require_storable(record, "record")


def test_a_str_enum_member_is_text_like_any_other() -> None:
    assert fields._storable(Outer("w1", Colour.PLAIN)) is True
    assert fields._storable(Outer("w1", Colour.NUL)) is False

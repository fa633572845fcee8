"""Hypothesis strategies for every routed-run record, built from the records' own type
hints, so a new field is covered without touching the tests."""

from __future__ import annotations

import dataclasses
import types
import typing
from enum import Enum
from typing import Any

from hypothesis import strategies as st

from storage.routed import records
from storage.routed.envelope import TimeEnvelope
from storage.routed.ids import RoutedID

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)

RECORD_TYPES: list[type] = [
    obj
    for obj in vars(records).values()
    if isinstance(obj, type)
    and dataclasses.is_dataclass(obj)
    and obj.__module__ == records.__name__
    and obj is not records.Stored
] + [TimeEnvelope]


def for_type(tp: Any) -> st.SearchStrategy[Any]:
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        inner = next(a for a in typing.get_args(tp) if a is not type(None))
        return st.none() | for_type(inner)
    origin = typing.get_origin(tp)
    if origin is tuple:
        return st.lists(for_type(typing.get_args(tp)[0]), max_size=3).map(tuple)
    if origin is dict:
        return st.dictionaries(TEXT, for_type(typing.get_args(tp)[1]), max_size=3)
    if dataclasses.is_dataclass(tp):
        return record(tp)
    if issubclass(tp, Enum):
        return st.sampled_from(list(tp))
    if issubclass(tp, RoutedID):
        body = st.text("abcdef0123456789", min_size=1, max_size=32)
        return body.map(lambda b, k=tp: k(k.prefix + b))
    if tp is bool:
        return st.booleans()
    if tp is int:
        return INT64
    if tp is str:
        return TEXT
    raise TypeError(tp)


def record(cls: type) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    fields = {
        f.name: for_type(hints[f.name])
        for f in dataclasses.fields(cls)
        if f.name != "schema_version"
    }
    return st.builds(cls, **fields)


any_record = st.sampled_from(RECORD_TYPES).flatmap(record)

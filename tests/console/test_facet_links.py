"""A facet value's link (console.works.filters.narrowing) is the filter narrowed by that
value, spelt as ``WorkFilter.with_value(...).querystring()`` spells it, whatever else
the filter holds: the other parameters are encoded once per dimension, not per value."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from console.works.filters import (
    FACET_DIMENSIONS,
    FACET_VALUES,
    facet_entries,
    narrowing,
    parse_work_filter,
)
from storage import WorkFacets

FILTERS = [
    "",
    "state=failed&state=ready",
    "source=github&source=a%26b",
    "kind=billing.charge&scope=acme&executor=py&error=db+down&sort=updated&size=25",
    "is=exhausted&within=acme&parent=w-1&since=1h&until=5m&source=x",
]
VALUES = ["github", "a&b", "x", "caf\u00e9 =?#", "acme/t1", "db down", "billing.charge"]


@pytest.mark.parametrize("query", FILTERS)
def test_each_facet_link_is_the_filter_narrowed_by_its_value(query: str) -> None:
    f = parse_work_filter(QueryDict(query))
    for name, _ in FACET_DIMENSIONS:
        link = narrowing(f, name)
        values = ["ready", "failed", "completed"] if name == "state" else VALUES
        for value in values:
            assert link(value) == f.with_value(name, value).querystring(), (name, value)


def _facets(kinds: int) -> WorkFacets:
    """Facets of ``kinds`` kinds, kind ``k000`` the most frequent, each next one less."""
    counts = {f"k{n:03}": kinds - n for n in range(kinds)}
    total = sum(counts.values())
    return WorkFacets(
        state={"ready": total},
        kind=counts,
        source={"": total},
        scope={"": total},
        executor={"": total},
    )


def test_a_facet_lists_its_most_frequent_values_and_counts_the_rest() -> None:
    kinds = FACET_VALUES + 25
    [_, kind, *_] = facet_entries(parse_work_filter(QueryDict("")), _facets(kinds))
    assert [e["value"] for e in kind["entries"]] == [f"k{n:03}" for n in range(FACET_VALUES)]
    assert kind["hidden"] == 25


def test_a_value_the_filter_holds_is_listed_however_rare() -> None:
    rare = f"k{FACET_VALUES + 20:03}"
    f = parse_work_filter(QueryDict(f"kind={rare}"))
    [_, kind, *_] = facet_entries(f, _facets(FACET_VALUES + 25))
    last = kind["entries"][-1]
    assert (last["value"], last["count"], last["active"]) == (rare, 5, True)
    assert len(kind["entries"]) == FACET_VALUES + 1
    assert kind["hidden"] == 24

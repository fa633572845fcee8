"""A facet value's link (console.works.filters.narrowing) is the filter narrowed by that
value, spelt as ``WorkFilter.with_value(...).querystring()`` spells it, whatever else
the filter holds: the other parameters are encoded once per dimension, not per value."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from console.works.filters import FACET_DIMENSIONS, narrowing, parse_work_filter

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

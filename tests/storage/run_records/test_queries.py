"""``Tx.run_records`` / ``count_run_records``: the filters and keyset pages mean the same
on every backend. Worked examples on each backend, then a differential test: the SQL
backend equals the reference double (``select_run_rows``) on random rows and queries."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage import Invalid, Store, Tx, view
from storage.memory import MemoryStore
from storage.orm import OrmStore
from storage.run_records import RunQuery, StoredRun, encode

from ..support.run_records import ordinary_record, plant, row

T0 = 1_767_225_600_000_000_001


def _plant(store: Store, run_id: str, at: int, fmt: int = 2, broken: bool = False) -> None:
    record = replace(ordinary_record(run_id), format=fmt, revision=1)
    data = b"{not json" if broken else encode(record)
    plant(store, row(run_id, data, fmt=fmt, at=at))


def _ids(store: Store, query: RunQuery) -> list[str]:
    return [s.record.run_id for s in view(store, None, lambda tx: tx.run_records(query))]


def _count(store: Store, query: RunQuery) -> int:
    return view(store, None, lambda tx: tx.count_run_records(query))


def test_filters_order_and_pages(store: Store) -> None:
    for run_id, at, fmt in [
        ("alpha", T0, 2),
        ("Alpha", T0, 1),
        ("a%b_c", T0 + 1, 2),
        ("axbyc", T0 + 1, 2),
        ("beta/é", T0 + 2, 1),
        ("中-run", T0 + 3, 2),
    ]:
        _plant(store, run_id, at, fmt)
    everything = ["中-run", "beta/é", "axbyc", "a%b_c", "alpha", "Alpha"]
    assert _ids(store, RunQuery()) == everything, "newest update first, then run ID desc"
    # Substring and prefix are literal and case-sensitive: no LIKE wildcards, no folding.
    assert _ids(store, RunQuery(search="lpha")) == ["alpha", "Alpha"]
    assert _ids(store, RunQuery(search="Alp")) == ["Alpha"]
    assert _ids(store, RunQuery(search="%b_")) == ["a%b_c"]
    assert _ids(store, RunQuery(search="é")) == ["beta/é"]
    assert _ids(store, RunQuery(run_id_prefix="a")) == ["axbyc", "a%b_c", "alpha"]
    assert _ids(store, RunQuery(run_id_prefix="中")) == ["中-run"]
    assert _ids(store, RunQuery(format=1)) == ["beta/é", "Alpha"]
    assert _ids(store, RunQuery(updated_since=T0 + 1, updated_before=T0 + 3)) == [
        "beta/é",
        "axbyc",
        "a%b_c",
    ]
    assert _count(store, RunQuery(search="a", limit=1, after=(T0 + 9, "z"))) == 5
    # Keyset pages of two walk everything once, ties on updated_ns broken by run ID.
    assert view(store, None, lambda tx: _walk(tx, RunQuery(limit=2))) == everything


@pytest.mark.parametrize(
    "query",
    [
        RunQuery(limit=-1),
        RunQuery(search="\ud800"),
        RunQuery(run_id_prefix="a\x00"),
        RunQuery(after=(1, "\udcff")),
        RunQuery(format="2"),  # type: ignore[arg-type]
        RunQuery(updated_since=1.5),  # type: ignore[arg-type]
    ],
    ids=["negative-limit", "surrogate", "nul", "cursor", "format-type", "time-type"],
)
def test_a_bad_query_is_invalid(store: Store, query: RunQuery) -> None:
    with pytest.raises(Invalid):
        view(store, None, lambda tx: tx.run_records(query))
    with pytest.raises(Invalid):
        view(store, None, lambda tx: tx.count_run_records(query))


# Differential ---------------------------------------------------------------------------

ALPHABET = "aAb%_é中/"
run_ids = st.text(alphabet=ALPHABET, min_size=1, max_size=4)
row_spec = st.fixed_dictionaries(
    {
        "tick": st.integers(0, 4),  # few ticks: many equal update times
        "format": st.sampled_from([1, 2]),
        "broken": st.booleans(),
    }
)
queries = st.builds(
    RunQuery,
    search=st.text(alphabet=ALPHABET, max_size=2),
    run_id_prefix=st.text(alphabet=ALPHABET, max_size=2),
    format=st.sampled_from([None, 1, 2, 3]),
    updated_since=st.sampled_from([None, T0, T0 + 2]),
    updated_before=st.sampled_from([None, T0 + 1, T0 + 4]),
    after=st.one_of(st.none(), st.tuples(st.integers(T0, T0 + 4), run_ids)),
    limit=st.sampled_from([0, 1, 3]),
)


def _summary(page: list[StoredRun]) -> list[tuple[Any, ...]]:
    return [
        (s.record.run_id, s.record.revision, s.stored_format, s.updated_ns, bool(s.error))
        for s in page
    ]


def _walk(tx: Tx, query: RunQuery) -> list[str]:
    seen: list[str] = []
    after = query.after
    while page := tx.run_records(replace(query, after=after, limit=query.limit or 2)):
        seen += [s.record.run_id for s in page]
        after = (page[-1].updated_ns, page[-1].record.run_id)
    return seen


@pytest.mark.django_db(transaction=True, databases=["default", "view"])
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rows=st.dictionaries(run_ids, row_spec, min_size=1, max_size=15), qs=st.lists(queries))
def test_sql_run_queries_equal_the_double(
    rows: dict[str, dict[str, Any]], qs: list[RunQuery]
) -> None:
    call_command("flush", "--noinput", verbosity=0)
    double, sql = MemoryStore(), OrmStore()
    for run_id, spec in rows.items():
        for target in (double, sql):
            _plant(target, run_id, T0 + spec["tick"], spec["format"], spec["broken"])

    def answers(tx: Tx) -> list[Any]:
        out: list[Any] = []
        for query in qs:
            page = tx.run_records(query)
            out.append((query, _summary(page), tx.count_run_records(query), _walk(tx, query)))
        return out

    assert view(sql, None, answers) == view(double, None, answers)

"""The record-version log's reads (storage/orm/versions.py) are index reads on each
engine, whatever the log's size: one record's rows (version_record), a Work's records'
rows (the partial version_work, whose condition the SQL repeats), the first row after
a time (version_at), a range of versions (the key). Plans as in test_causation_plan;
sorts priced out on PostgreSQL, so a Sort left in a plan means no index delivers the
order."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from django.db import connections

from storage import Guard, Tx
from storage.orm import OrmStore

from ..support import make_timer, make_work
from ..support.plans import plan as plan_of
from ..support.plans import view_statements

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])


def test_the_version_log_is_read_through_its_indexes(orm_store: OrmStore) -> None:
    """300 transactions over 100 Work, their Timers and KV: each read goes through the
    index that selects its rows, never the whole log, and delivers its order."""
    store = orm_store
    for n in range(300):

        def step(t: Tx, n: int = n) -> None:
            work_id = f"w{n % 100:03}"
            if n < 100:
                t.put_work(make_work(work_id))
            t.put_timer(make_timer(f"t{n}", t.now + 10**12, work_id=work_id))
            t.kv_put("ns", f"k{n % 7}", b"%d" % n)

        store.transact(Guard(), step)
    sqlite = connections["default"].vendor == "sqlite"
    if not sqlite:
        with connections["default"].cursor() as cursor:
            cursor.execute("ANALYZE conduit_record_version")
    middle = store.view(lambda t: t.store_version()) // 2
    at = store.view(lambda t: t.version_changes(after=middle, limit=1))[0].at
    reads: dict[str, tuple[Callable[[Tx], object], tuple[str, ...]]] = {
        "one record": (
            lambda t: t.record_versions("kv", "ns", "k3", after=middle, limit=5),
            ("version_record",),
        ),
        "one record newest first": (
            lambda t: t.record_versions("kv", "ns", "k3", newest_first=True, limit=1),
            ("version_record",),
        ),
        "a Work's changes": (
            lambda t: t.work_versions("w042", after=middle, limit=40),
            ("version_work",),
        ),
        "a version range": (
            lambda t: t.version_changes(after=middle, upto=middle + 5),
            ("sqlite_autoindex_conduit_record_version_1", "conduit_record_version_pkey"),
        ),
        "a time": (lambda t: t.version_at(at), ("version_at",)),
    }
    for what, (fn, indexes) in reads.items():
        found = view_statements(store, fn, lambda sql: "conduit_record_version" in sql)
        assert found, what
        for sql, params in found:
            plan = plan_of(sql, params, no_sort=True)
            if sqlite:
                assert "SCAN" not in plan, (what, sql, plan)
                assert "TEMP B-TREE" not in plan, (what, sql, plan)
            else:
                assert "Seq Scan" not in plan, (what, sql, plan)
                assert "Sort" not in plan, (what, sql, plan)
            assert any(i in plan for i in indexes), (what, sql, plan)


def test_a_works_first_rows_read_its_rows_only(orm_store: OrmStore) -> None:
    """work_as_of's reads of first rows: the Work's rows from the version on, numbered
    per record (version_work), then one seek per Timer (version_record)."""
    store = orm_store
    for n in range(200):
        store.transact(
            Guard(),
            lambda t, n=n: (
                t.put_timer(make_timer(f"t{n}", t.now + 10**12))
                if n % 50
                else t.put_work(make_work(f"w{n}"))
            ),
        )
    mine = make_timer("mine", 10**12, work_id="w50")
    store.transact(Guard(), lambda t: t.put_timer(replace(mine, fire_at=t.now + 10**12)))
    sqlite = connections["default"].vendor == "sqlite"
    found = view_statements(
        store,
        lambda t: t.work_as_of("w50", 60),
        lambda sql: "conduit_record_version" in sql and "position >=" in sql,
    )
    assert len(found) == 2  # the Work's records' rows, then its Timers' own
    for (sql, params), index in zip(found, ("version_work", "version_record"), strict=True):
        plan = plan_of(sql, params)
        assert ("SCAN conduit_record_version" if sqlite else "Seq Scan") not in plan, plan
        assert index in plan, (sql, plan)

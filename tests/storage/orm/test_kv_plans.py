"""The KV inspector's reads are index reads on each engine (issue 32): the namespaces
(``kv_namespaces``: one statement whose every step is a seek of the ``kv_key``
index, never a scan of the table), a page of keys (``kv_list``: a range of it) and
the keys changed since a version (``kv_list_as_of``: a range of ``version_record``,
in its order). Plans as ``test_prefix_plans.py`` asks them (tests/storage/support/plans.py)."""

from __future__ import annotations

import pytest
from django.db import connections

from storage import Guard, Tx
from storage.orm import OrmStore

from ..support.plans import plan as plan_of
from ..support.plans import view_statements

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])


def fill(store: OrmStore) -> int:
    def write(t: Tx) -> None:
        for n in range(30):
            for k in range(5):
                t.kv_put(f"ns-{n:02}", f"key-{k}", b"v")

    store.transact(Guard(), write)
    version = store.view(lambda t: t.store_version())
    store.transact(Guard(), lambda t: [t.kv_put("ns-03", f"key-{k}", b"w") for k in range(3)])
    return version


def assert_indexed(sql: str, params: list[object], index: str) -> None:
    plan = plan_of(sql, params, no_sort=connections["default"].vendor == "postgresql")
    if connections["default"].vendor == "sqlite":
        # A SEARCH of the index; never a SCAN of the table itself.
        assert "SEARCH" in plan, (sql, plan)
        assert "INDEX" in plan, (sql, plan)
        assert "SCAN conduit_" not in plan, (sql, plan)
        assert "SCAN kv" not in plan, (sql, plan)
    else:
        assert f"using {index}" in plan, (sql, plan)
        assert "Seq Scan" not in plan, (sql, plan)


def test_the_namespaces_are_one_statement_of_index_seeks(orm_store: OrmStore) -> None:
    store = orm_store
    fill(store)
    statements = view_statements(
        store, lambda t: t.kv_namespaces(after="ns-05", limit=10), lambda sql: "conduit_kv" in sql
    )
    assert len(statements) == 1, statements
    ((sql, params),) = statements
    assert params[1] == 10, "the limit bounds the recursion"
    assert_indexed(sql, params, "kv_key")
    found = store.view(lambda t: t.kv_namespaces(after="ns-05", limit=10))
    assert found == [f"ns-{n:02}" for n in range(6, 16)]


def test_a_page_of_keys_and_the_keys_changed_since_are_index_ranges(
    orm_store: OrmStore,
) -> None:
    store = orm_store
    then = fill(store)
    statements = view_statements(
        store,
        lambda t: t.kv_list_as_of("ns-03", then, "key-", after="key-0", limit=2),
        lambda sql: "conduit_kv" in sql or "conduit_record_version" in sql,
    )
    listed = [s for s in statements if "conduit_kv" in s[0]]
    changed = [s for s in statements if "ROW_NUMBER" in s[0]]
    assert len(listed) == len(changed) == 1, statements
    assert_indexed(*listed[0], "kv_key")
    assert_indexed(*changed[0], "version_record")

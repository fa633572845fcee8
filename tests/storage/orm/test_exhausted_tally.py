"""The exhausted Work's own tally rows (``storage.meaning.tally.answers_exhausted``):
the exhausted list's facets are read from the tally in one statement that touches no
Work row, and equal the facets counted from the rows; migration 0026's backfill
writes the rows the rules keep (run again it replaces them; unapplied, they go and
the rest of the tally stays), and so does the rebuild a bulk load runs. Both engines."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from django.apps import apps
from django.db import connection

from storage import (
    ExecutionState,
    Guard,
    Outcome,
    OutcomeKind,
    Tx,
    WorkQuery,
    WorkState,
    seconds,
    select_facets,
)
from storage.meaning import tally
from storage.orm import OrmStore
from storage.orm import tally as tally_sql
from storage.orm.dialect import dialect

from ..support import key, make_execution, make_scope, make_work
from ..support.work_tally import stored_tally

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

migration = importlib.import_module("storage.migrations.0026_work_tally_exhausted")


def _exhausted_rows(rows: dict[tally.TallyKey, int]) -> dict[tally.TallyKey, int]:
    return {k: n for k, n in rows.items() if k[3] in tally.EXHAUSTED_DIMENSIONS}


@pytest.fixture
def store() -> Iterator[OrmStore]:
    """Twelve Work in two Scopes, three kinds, two sources: eight exhausted, by three
    executors and three error groups; one of those cancelled afterwards (no longer
    exhausted)."""
    opened = OrmStore()

    def seed(t: Tx) -> None:
        t.put_scope(make_scope("acme"))
        for n in range(12):
            t.put_work(
                make_work(
                    f"w{n:02}",
                    scope_id="acme" if n % 2 else "",
                    kind=f"test.k{n % 3}",
                    keys=[key(f"k{n}", source=f"test.src{n % 2}")],
                )
            )
            if n >= 8:
                continue
            x = t.put_execution(make_execution(f"w{n:02}-x1", f"w{n:02}", 1, executor=f"ex{n % 3}"))
            x = t.claim(x.id, "runner", t.now + seconds(30))
            message = ("disk 1 full", "timeout", "upstream 502")[n % 3]
            failed = Outcome(OutcomeKind.FAILED, message)
            t.put_execution(replace(x, state=ExecutionState.FAILED, outcome=failed))
            t.put_work(replace(t.work(f"w{n:02}"), state=WorkState.READY))

    opened.transact(Guard(), seed)
    opened.transact(
        Guard(), lambda t: t.put_work(replace(t.work("w07"), state=WorkState.CANCELLED))
    )
    yield opened
    opened.close()


QUERIES = [
    WorkQuery(exhausted=True),
    WorkQuery(exhausted=True, scope_id="acme"),
    WorkQuery(exhausted=True, kind="test.k1"),
    WorkQuery(exhausted=True, states=frozenset({WorkState.READY})),
    WorkQuery(exhausted=True, states=frozenset({WorkState.CANCELLED})),
    WorkQuery(exhausted=True, scope_ids=frozenset({"", "acme"}), kind="test.k2"),
]


@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
def test_the_exhausted_lists_facets_are_the_tallys_and_read_no_work_row(
    store: OrmStore, query: WorkQuery
) -> None:
    sent: list[str] = []

    def watch(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        sent.append(sql)
        return execute(sql, params, many, context)

    def read(t: Tx) -> tuple[Any, Any]:
        with connection.execute_wrapper(watch):
            facets = t.work_facets(query)
        return facets, select_facets(query, t.works())

    # A transaction: a View reads through its own connection, this one is watched.
    facets, counted = store.transact(Guard(), read)

    assert facets == counted
    assert len(sent) == 1, sent
    assert "conduit_work_tally" in sent[0]
    assert "conduit_work " not in sent[0].replace("conduit_work_tally", "")


def test_the_seed_has_what_the_facets_must_tell_apart(store: OrmStore) -> None:
    facets = store.view(lambda t: t.work_facets(WorkQuery(exhausted=True)))
    assert facets.exhausted == 7
    assert facets.executor == {"ex0": 3, "ex1": 2, "ex2": 2}
    assert facets.error_group == {"disk <n> full": 3, "timeout": 2, "upstream <n>": 2}
    assert facets.source == {"test.src0": 4, "test.src1": 3}
    assert facets.scope == {"": 4, "acme": 3}


def test_the_backfill_writes_the_exhausted_rows_the_rules_keep(store: OrmStore) -> None:
    works = store.view(lambda t: t.works())
    kept = stored_tally()
    assert kept == tally.count(works)
    assert _exhausted_rows(kept)
    with connection.schema_editor() as editor:
        migration.remove(apps, editor)
    assert stored_tally() == {k: n for k, n in kept.items() if k not in _exhausted_rows(kept)}
    for _ in range(2):  # once as the migration runs, once more: replaced, not added
        with connection.schema_editor() as editor:
            migration.backfill(apps, editor)
        assert stored_tally() == kept


def test_the_rebuild_writes_the_exhausted_rows_too(store: OrmStore) -> None:
    kept = stored_tally()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM conduit_work_tally")
        tally_sql.rebuild(cursor, dialect(connection).true)
    assert stored_tally() == kept
    assert _exhausted_rows(kept)

"""Migration 0015's backfill and ``orm.tally.rebuild``: a store whose tally has no
margins (written before 0015) gets the margins the rules would have kept, equal to
the full count of its Work, on both engines; run again it replaces them rather than
adding; unapplied, the margins go and the per-combination rows stay as they were.
The rebuild a bulk load runs writes the same tally, margins included."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import replace

import pytest
from django.apps import apps
from django.db import connection

from storage import ExecutionState, Guard, Tx, WorkState, seconds
from storage.meaning import tally
from storage.orm import OrmStore
from storage.orm import tally as tally_sql
from storage.orm.dialect import dialect

from ..contract._helpers import terminate
from ..support import make_execution, make_scope, make_work
from ..support.work_tally import stored_tally

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

migration = importlib.import_module("storage.migrations.0015_work_tally_margins")


def _margins(rows: dict[tally.TallyKey, int]) -> dict[tally.TallyKey, int]:
    return {key: n for key, n in rows.items() if key[3].startswith(tally.MARGIN)}


@pytest.fixture
def store() -> Iterator[OrmStore]:
    opened = OrmStore()

    def seed(t: Tx) -> None:
        t.put_scope(make_scope("acme"))
        for n in range(12):
            work = t.put_work(
                make_work(f"w{n:02}", scope_id="acme" if n % 2 else "", kind=f"test.k{n % 3}")
            )
            if n % 4 == 1:
                t.put_work(replace(work, state=WorkState.CANCELLED))
        for work_id in ("w02", "w03"):  # failed attempts, Work ready: exhausted, grouped
            x = t.put_execution(make_execution(f"{work_id}-x1", work_id, 1, executor="shell"))
            x = t.claim(x.id, "runner", t.now + seconds(30))
            terminate(t, x.id, ExecutionState.FAILED, WorkState.READY)

    opened.transact(Guard(), seed)
    yield opened
    opened.close()


def test_the_backfill_writes_the_margins_the_rules_keep(store: OrmStore) -> None:
    works = store.view(lambda t: t.works())
    assert any(w.exhausted for w in works)
    kept = stored_tally()
    assert kept == tally.count(works)
    assert _margins(kept)
    with connection.schema_editor() as editor:
        migration.remove(apps, editor)
    assert stored_tally() == {k: n for k, n in kept.items() if k not in _margins(kept)}
    for _ in range(2):  # once as the migration runs, once more: replaced, not added
        with connection.schema_editor() as editor:
            migration.backfill(apps, editor)
        assert stored_tally() == kept


def test_the_rebuild_writes_the_tally_the_rules_keep_margins_included(store: OrmStore) -> None:
    kept = stored_tally()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM conduit_work_tally")
        tally_sql.rebuild(cursor, dialect(connection).true)
    assert stored_tally() == kept
    assert _margins(kept)

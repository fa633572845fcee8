"""Upgrades a team can trust (issue 30): a database an older release wrote, with a
realistic history (``tests/storage/upgrade/dumps``: the first schema, 0001, and the one
before the last, 0020), is restored as that schema, migrated to the latest, and then
every console page renders on it, every tally the store keeps equals a recount from
the rows, the triage marks equal their recomputation, and an operator's action
commits. Runs on SQLite and PostgreSQL alike (the dumps are engine-neutral JSON)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client

from console.actions.common import new_token
from storage import WorkOrder, WorkQuery
from storage.default import reset_defaults
from storage.meaning.series import select_exhausted
from storage.meaning.triage import failure_key
from storage.orm import OrmStore, series_tally, tally
from storage.orm.dialect import dialect
from storage.routed.rows_orm import rebuild_workflow_tally
from tests.console.conftest import DB
from tests.console.support.pages import EXPECTED, url
from tests.storage.upgrade import load

pytestmark = [DB, pytest.mark.slow]

TALLIES = ("conduit_work_tally", "conduit_series_tally", "conduit_routed_workflow_tally")


def _tallies() -> dict[str, list[tuple[Any, ...]]]:
    """Each tally's rows but their surrogate ID, with a count (a combination counted
    down to 0 may keep its row)."""
    out = {}
    with connection.cursor() as cursor:
        for table in TALLIES:
            cursor.execute(f"SELECT * FROM {table}")  # noqa: S608
            names = [c[0] for c in cursor.description]
            out[table] = sorted(
                tuple(v for n, v in zip(names, row, strict=True) if n != "id")
                for row in cursor.fetchall()
                if row[names.index("n")] != 0
            )
    return out


def _recounted() -> dict[str, list[tuple[Any, ...]]]:
    """The tallies as the full counts (the rebuilds bulk loads use) give them; rolled
    back, so the store keeps what the upgrade left."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            tally.rebuild(cursor, dialect(connection).true)
            series_tally.rebuild(cursor, dialect(connection))
            rebuild_workflow_tally(cursor)
        counted = _tallies()
        transaction.set_rollback(True)
    return counted


def _ids(dump: dict[str, Any]) -> dict[str, str]:
    """The IDs the routes' placeholders take, from the dump; "missing" where the schema
    had no such record (its pages must answer 404)."""
    tables = dump["tables"]

    def rows(table: str) -> list[dict[str, Any]]:
        content = tables.get(table, {"columns": [], "rows": []})
        return [dict(zip(content["columns"], r, strict=True)) for r in content["rows"]]

    done = next(r for r in rows("conduit_execution") if r["work_id"] == "up-done")
    artifact = json.loads(done["data"])["artifacts"][0]["id"]
    workflows = [r["key"] for r in rows("conduit_routed_workflow")]
    deployments = [r["key"] for r in rows("conduit_routed_deployment")]
    runs = (
        [r["run_id"] for r in rows("conduit_run_record")] if "conduit_run_record" in tables else []
    )
    return {
        "work_id": "up-done",
        "event_id": "up-e2",
        "name": "root",
        "execution_id": done["id"],
        "artifact_id": artifact,
        "run_id": "checkout/1" if "checkout/1" in runs else "missing",
        "rest": "checkout/1",
        "deployment_id": deployments[0] if deployments else "missing",
        "alias": "summarise" if rows("conduit_routed_alias") else "missing",
        "workflow_id": workflows[0] if workflows else "missing",
        "scope_id": "up-acme",
    }


def _events_by_key(store: OrmStore) -> tuple[dict[Any, list[int]], dict[Any, list[int]]]:
    """Each correlation key's Events as the key index finds them (migration 0021
    backfilled it) and as a scan of every Event reads them."""

    def read(t: Any) -> tuple[dict[Any, list[int]], dict[Any, list[int]]]:
        scanned: dict[Any, list[int]] = {}
        for stored in t.events():
            for k in stored.event.keys:
                scanned.setdefault(k, []).append(stored.sequence)
        found = {k: [e.sequence for e in t.find_events(key=k)] for k in scanned}
        return found, scanned

    return store.view(read)


def _marks_recomputed(store: OrmStore) -> dict[str, Any]:
    def read(t: Any) -> dict[str, Any]:
        works = list(t.works())
        executions = sorted(t.executions(), key=lambda x: x.attempt)
        latest = {x.work_id: x for x in executions}
        waits = list(t.waits())
        exhausted = select_exhausted(
            WorkQuery(order=WorkOrder.CREATED_ASC), works, executions, t.timers()
        )
        return {
            "kept": {w.id: (w.exhausted, w.error_group) for w in works},
            "recomputed": {
                w.id: (
                    w.id in {e.id for e in exhausted},
                    failure_key(latest.get(w.id), [x for x in waits if x.work_id == w.id]),
                )
                for w in works
            },
        }

    return store.view(read)


@pytest.mark.parametrize("name", ["schema_0001", "schema_0020"])
def test_an_older_database_upgrades_and_every_page_renders(name, django_user_model, settings):
    dump = load.read(name)
    # The artifact folder is kept across an upgrade as the database is.
    load.restore(dump, settings.ARTIFACT_DIR)
    load.migrate_to(load.latest())
    reset_defaults()

    store = OrmStore()
    marks = _marks_recomputed(store)
    assert len(marks["kept"]) == len(dump["tables"]["conduit_work"]["rows"])
    assert marks["kept"] == marks["recomputed"]
    assert sum(1 for e, _ in marks["kept"].values() if e) > 0
    assert _tallies() == _recounted()
    counted = _tallies()
    assert counted["conduit_work_tally"]
    assert counted["conduit_series_tally"]
    # schema 0001 had no routed workflows
    assert bool(counted["conduit_routed_workflow_tally"]) is (name != "schema_0001")
    found, scanned = _events_by_key(store)
    assert len(scanned) > 50
    assert found == scanned

    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(root)
    cancel = {"reason": "upgraded", "token": new_token()}
    assert client.post("/actions/cancel/up-keyed", cancel).status_code == 302
    assert client.post("/views/save", {"name": "f", "query": "state=failed"}).status_code == 302
    pk = client.get("/views").content.decode().split('action="/views/', 1)[1].split("/", 1)[0]
    ids = _ids(dump) | {"pk": pk}

    wrong = {}
    for route, visits in EXPECTED.items():
        for extra, query, status in visits:
            # The seed's names there are the dump's with its prefix.
            values = ids | {k: v.replace("w-", "up-", 1) for k, v in extra.items()}
            values |= {k: "missing" for k in extra if ids.get(k) == "missing"}
            missing = any(f":{k}>" in route for k, v in values.items() if v == "missing")
            target = url(route, values, query)
            got = client.get(target).status_code
            # A record the schema had no table for is a 4xx page, never a 500.
            ok = 400 <= got < 500 if missing and status == 200 else got == status
            if not ok:
                wrong[target] = (got, status)
    assert wrong == {}
    # the cancel counted like any write
    assert _tallies() == _recounted()

"""A database written by an older schema, with a simulated runtime's history, upgrades
to the latest migration on this run's engine (issue 30): every page renders, and every
tally the migrations keep or backfill equals a recount of the rows.

The fixtures were written by older checkouts (tests/upgrade/README.md says how): the
first schema (0001, its own console factories through its storage API), the release
before the last (0020) and the schema before the last (0021), each with its simulated
runtime's history; every later migration runs over them here, backfills included
(storage migrations 0001-0022 are squashed for new databases: these take the
unsquashed path a database in use takes).
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test import Client

from storage.default import reset_defaults
from storage.orm import series_tally as series_rebuild
from storage.orm import tally as work_rebuild
from storage.orm.dialect import dialect
from storage.routed.rows_orm import rebuild_workflow_tally
from tests.upgrade.load import load

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]

PAGES = [
    "/",
    "/?is=exhausted",
    "/dashboard",
    "/errors",
    "/events",
    "/executions",
    "/waits",
    "/timers",
    "/scopes",
    "/routed/workflows",
    "/routed/deployments",
    "/routed/invocations",
    "/run-records",
]
# Record pages: every workflow and run record, and a spread of Work and Events.
RECORDS = {
    "/works/": ("SELECT id FROM conduit_work ORDER BY id", 40),
    "/events/": ("SELECT id FROM conduit_event ORDER BY id", 20),
    "/routed/workflows/": ("SELECT key FROM conduit_routed_workflow ORDER BY key", 0),
    "/run-records/": ("SELECT run_id FROM conduit_run_record ORDER BY run_id", 0),
}
# What each fixture holds beyond Work and Events (schema 0001 had no run records and no
# routed runs).
HOLDS = {
    "schema0001_factories.json.gz": {"conduit_timer", "conduit_wait", "conduit_key"},
    "schema0020_simulated.json.gz": {"conduit_routed_workflow", "conduit_run_record"},
    "schema0021_simulated.json.gz": {
        "conduit_routed_workflow",
        "conduit_run_record",
        "conduit_event_key",
    },
}


@pytest.fixture(params=list(HOLDS))
def upgraded(request, settings, tmp_path):
    settings.ARTIFACT_DIR = tmp_path / "artifacts"
    settings.ROUTED_STATE_DIR = tmp_path / "routed"
    counts = load(request.param)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    reset_defaults()
    yield request.param, counts
    reset_defaults()


def _tallies() -> dict[str, list[tuple]]:
    with connection.cursor() as cursor:
        out = {}
        for table in (
            "conduit_work_tally",
            "conduit_series_tally",
            "conduit_routed_workflow_tally",
        ):
            cursor.execute(f"SELECT * FROM {table}")  # noqa: S608
            names = [d[0] for d in cursor.description]
            n = names.index("n")
            out[table] = sorted(
                tuple(r[i] for i in range(len(r)) if names[i] != "id")
                for r in cursor.fetchall()
                if r[n]
            )
        return out


def test_an_older_schemas_history_upgrades_and_every_tally_is_a_recount(upgraded, admin_user):
    fixture, counts = upgraded
    assert counts["conduit_work"] > 100
    assert counts["conduit_event"] > 100
    assert all(counts.get(table) for table in HOLDS[fixture])
    kept = _tallies()
    assert kept["conduit_work_tally"]
    assert kept["conduit_series_tally"]
    with transaction.atomic(), connection.cursor() as cursor:
        work_rebuild.rebuild(cursor, True)
        series_rebuild.rebuild(cursor, dialect(connection))
        rebuild_workflow_tally(cursor)
        recounted = _tallies()
        transaction.set_rollback(True)
    for table in kept:
        assert kept[table] == recounted[table], table

    client = Client()
    client.force_login(admin_user)
    paths = list(PAGES)
    with connection.cursor() as cursor:
        for prefix, (sql, spread) in RECORDS.items():
            cursor.execute(sql)
            ids = [r[0] for r in cursor.fetchall()]
            paths += [prefix + i for i in (ids[:: max(1, len(ids) // spread)] if spread else ids)]
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, path

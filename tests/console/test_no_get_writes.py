"""No GET writes the store (issue 30): every URL pattern of the console, on seeded data
so that each page has something to show, as a page and as an htmx request; a digest of
every table (the store's, conduit_meta included, and Django's own) taken before and
after must not move.

The routes are listed here with what each must answer, and the list must name every
pattern the console has: a new URL fails this test until it is added."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connections
from django.test import Client

from console.actions.common import new_token
from storage import ExecutionState
from storage.default import reset_defaults
from tests.console import factories as f
from tests.console import routedfactories as rtf
from tests.console import run_record_factories as rf
from tests.console.conftest import DB
from tests.console.support.pages import EXPECTED, routes, url

pytestmark = DB

HTMX = {"HTTP_HX_REQUEST": "true"}


def digest() -> dict[str, str]:
    """Each table's rows, hashed in a stable order."""
    connection = connections["default"]
    out = {}
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.table_names(cursor)):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608
            rows = sorted(repr(row) for row in cursor.fetchall())
            out[table] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return out


@pytest.fixture
def seeded(django_user_model):
    """Work in every state with Events, attempts, an artifact, Waits, Timers, Scopes,
    errors, an operator's action, KV entries, run records, routed workflows,
    deployments, aliases, and a saved view: the IDs each route's placeholders take."""
    f.scope("acme", name="Acme")
    f.scope("acme/eu", parent="acme")
    f.event("e1", work_id="", scope_id="acme", data={"order": 1}, keys=[("shop", "o-1")])
    f.parked("w-parked", scope_id="acme/eu")
    running_x = f.running("w-running", scope_id="acme")
    f.kv("recon/shop", {"cursor": b'{"page": 1}', "seen": b"\x00\x01"}, by=running_x, event="e-kv")
    f.kv("recon/shop", {"cursor": b'{"page": 2}'})
    f.backoff("w-backoff", message="upstream 502 for order 17")
    f.exhausted("w-exhausted", message="upstream 502 for order 18")
    f.failed("w-failed", message="card declined")
    f.work("w-cancelled")
    f.work("w-keyed", keys=[("shop", "o-1")])
    f.timed_out("w-timed-out")
    f.timer("t1", work_id="w-parked")
    f.work("w-done", scope_id="acme")
    ref = f.publish(b'{"ok": true}', "application/json")
    x = f.start("w-done")
    f.finish(x.id, state=ExecutionState.COMPLETED, artifacts=[ref])
    f.event("e2", work_id="w-done", causation="e1", route="route:1")
    rf.checkout("checkout/1")
    rf.payment("payment/1")
    dep = rtf.deployment()
    rtf.alias("summarise", dep)
    running, _ = rtf.running(dep.deployment_id)
    rtf.failed(dep.deployment_id)
    rtf.paused()
    rtf.needs_replan()
    rtf.pipeline()

    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(root)
    # An operator's action (for /operators/<name>) and a saved view, made before the
    # digest: POSTs may write.
    cancel = {"reason": "stop", "token": new_token()}
    assert client.post("/actions/cancel/w-cancelled", cancel).status_code == 302
    view = {"name": "failed", "query": "state=failed"}
    assert client.post("/views/save", view).status_code == 302
    saved = client.get("/views").content.decode()
    pk = saved.split('action="/views/', 1)[1].split("/", 1)[0]
    return client, {
        "work_id": "w-done",
        "event_id": "e2",
        "name": "root",
        "execution_id": x.id,
        "artifact_id": ref.id,
        "run_id": "checkout/1",
        "rest": "checkout/1",
        "deployment_id": dep.deployment_id,
        "alias": "summarise",
        "workflow_id": running.receipt.workflow_id,
        "scope_id": "acme",
        "pk": pk,
    }


def test_every_console_route_is_listed():
    assert set(EXPECTED) == routes()


def test_no_get_writes_the_store(seeded):
    client, ids = seeded
    before = digest()
    # As a console process just started serves them: no store opened yet (opening one
    # once wrote a stamp, so the first GET after a restart wrote the store).
    reset_defaults()
    answers = {}
    for route, visits in EXPECTED.items():
        for extra, query, status in visits:
            target = url(route, ids | extra, query)
            for headers in ({}, HTMX):
                got = client.get(target, **headers).status_code
                answers[target, bool(headers)] = (got, status)

    changed = {table for table, value in digest().items() if before.get(table) != value}
    assert not changed, f"GETs changed {sorted(changed)}"
    assert not set(before) ^ set(digest())
    wrong = {key: got for key, got in answers.items() if got[0] != got[1]}
    assert not wrong, "\n".join(f"{k}: {v}" for k, v in wrong.items())

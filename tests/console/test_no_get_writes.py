"""No GET writes the store (issue 30): every URL pattern of the console, on seeded data
so that each page has something to show, as a page and as an htmx request; a digest of
every table (the store's, conduit_meta included, and Django's own) taken before and
after must not move.

The routes are listed here with what each must answer, and the list must name every
pattern the console has: a new URL fails this test until it is added."""

from __future__ import annotations

import hashlib
from urllib.parse import quote

import pytest
from django.db import connections
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from console.actions.common import new_token
from storage import ExecutionState
from storage.default import reset_defaults
from tests.console import factories as f
from tests.console import routedfactories as rtf
from tests.console import run_record_factories as rf
from tests.console.conftest import DB

pytestmark = DB

HTMX = {"HTTP_HX_REQUEST": "true"}
EXHAUSTED = "is=exhausted"


def routes() -> set[str]:
    """Every URL pattern as a route with <converter:name> placeholders (Django's admin
    left out: not the console's)."""
    found: set[str] = set()

    def walk(entries: list[object], prefix: str) -> None:
        for entry in entries:
            if isinstance(entry, URLResolver):
                if not str(entry.pattern).startswith("admin"):
                    walk(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                found.add(prefix + str(entry.pattern))

    walk(get_resolver().url_patterns, "")
    return found


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
    errors, an operator's action, run records, routed workflows, deployments, aliases,
    and a saved view: the IDs each route's placeholders take."""
    f.scope("acme", name="Acme")
    f.scope("acme/eu", parent="acme")
    f.event("e1", work_id="", scope_id="acme", data={"order": 1}, keys=[("shop", "o-1")])
    f.parked("w-parked", scope_id="acme/eu")
    f.running("w-running", scope_id="acme")
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


# Each route: (placeholder values it takes beyond the seeded IDs, query, status).
# POST-only routes answer 405 to a GET; the old /runs URLs redirect.
EXPECTED: dict[str, list[tuple[dict[str, str], str, int]]] = {
    "accounts/login/": [({}, "", 200)],
    "accounts/logout/": [({}, "", 405)],
    "": [({}, "", 200), ({}, EXHAUSTED, 200), ({}, "q=w-", 200), ({}, "state=failed&size=25", 200)],
    "works/<id:work_id>": [({}, "", 200), ({"work_id": "w-parked"}, "", 200)],
    "actions/cancel/<id:work_id>": [({"work_id": "w-parked"}, "", 200)],
    "actions/retry/<id:work_id>": [({"work_id": "w-exhausted"}, "", 200)],
    "actions/bulk": [({}, "do=retry-all", 200), ({}, "do=cancel-all&state=ready", 200)],
    "actions/bulk/review": [({}, "", 405)],
    "actions/bulk/progress": [({}, f"token={new_token()}", 200)],
    "actions/bulk/resume": [({}, "", 405)],
    "errors": [({}, "", 200)],
    "events": [({}, "", 200), ({}, "unrouted=1", 200)],
    "events/<id:event_id>": [({}, "", 200)],
    "keys": [({}, "source=shop&id=o-1", 200)],
    "operators/<id:name>": [({}, "", 200)],
    "executions": [({}, "", 200), ({}, "expired=1", 200)],
    "executions/<id:execution_id>/artifacts/<str:artifact_id>": [({}, "", 200)],
    "attempts/<id:execution_id>": [({}, "", 200)],
    "waits": [({}, "", 200)],
    "timers": [({}, "", 200), ({}, "due=1", 200)],
    "scopes": [({}, "", 200)],
    "run-records": [({}, "", 200)],
    "run-records/<id:run_id>": [({}, "", 200), ({"run_id": "payment/1"}, "", 200)],
    "runs": [({}, "", 301)],
    "runs/<id:rest>": [({}, "", 301)],
    "routed/actions/bulk": [({}, "do=pause", 200), ({}, "do=cancel", 200)],
    "routed/actions/deployment/deactivate/<id:deployment_id>": [({}, "", 200)],
    "routed/actions/deployment/activate/<id:deployment_id>": [({}, "", 200)],
    "routed/actions/alias/repoint/<id:alias>": [({}, "", 200)],
    "routed/actions/pause/<id:workflow_id>": [({}, "", 200)],
    "routed/actions/resume/<id:workflow_id>": [({}, "", 200)],
    "routed/actions/cancel/<id:workflow_id>": [({}, "", 200)],
    "routed/actions/restart/<id:workflow_id>": [({}, "", 200)],
    "routed/actions/continue/<id:workflow_id>": [({}, "", 200)],
    "routed/actions/amend-limits/<id:workflow_id>": [({}, "", 200)],
    "routed/workflows": [({}, "", 200), ({}, "status=FAILED", 200)],
    "routed/workflows/<id:workflow_id>": [({}, "", 200)],
    "routed/deployments": [({}, "", 200)],
    "routed/invocations": [({}, "", 200)],
    "routed/tiles": [({}, "", 200)],
    "dashboard": [({}, "", 200), ({}, "window=7d", 200)],
    "dashboard/<id:scope_id>": [({}, "", 200)],
    "preferences/poll": [({}, "", 405)],
    "preferences/theme": [({}, "", 405)],
    "preferences/columns": [({}, "", 405)],
    "views": [({}, "", 200)],
    "views/save": [({}, "", 405)],
    "views/<int:pk>/rename": [({}, "", 405)],
    "views/<int:pk>/delete": [({}, "", 405)],
    "healthz": [({}, "", 200)],
    "readyz": [({}, "", 200)],
    # The test client's address is 127.0.0.1, a default allowed network: a full scrape.
    "metrics": [({}, "", 200)],
    "favicon.ico": [({}, "", 302)],
}


def url(route: str, values: dict[str, str], query: str) -> str:
    path = route
    while "<" in path:
        head, rest = path.split("<", 1)
        spec, tail = rest.split(">", 1)
        path = head + quote(values[spec.split(":")[-1]], safe="") + tail
    return "/" + path + (f"?{query}" if query else "")


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

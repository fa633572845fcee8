"""Every console route with what a GET of it must answer (a page, a 405 for a POST-only
route, a redirect), and how to fill its placeholders: the page list the no-GET-writes
test (``tests/console/test_no_get_writes.py``) and the upgrade test
(``tests/console/test_upgrade.py``) visit. A new URL pattern fails
``test_every_console_route_is_listed`` until it is added here."""

from __future__ import annotations

from urllib.parse import quote

from django.urls import URLPattern, URLResolver, get_resolver

from console.actions.common import new_token

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


# Each route: (placeholder values it takes beyond the seeded IDs, query, status).
# POST-only routes answer 405 to a GET; the old /runs URLs redirect.
EXPECTED: dict[str, list[tuple[dict[str, str], str, int]]] = {
    "accounts/login/": [({}, "", 200)],
    "accounts/logout/": [({}, "", 405)],
    # Sign-in through an identity provider (docs/oidc.md) is off in the test settings:
    # its two views are 404 then; the admin's login redirects a signed-in user onward.
    "oidc/start/": [({}, "", 404)],
    "oidc/callback/": [({}, "", 404)],
    "admin/login/": [({}, "", 302)],
    "": [({}, "", 200), ({}, EXHAUSTED, 200), ({}, "q=w-", 200), ({}, "state=failed&size=25", 200)],
    "works/<id:work_id>": [
        ({}, "", 200),
        ({"work_id": "w-parked"}, "", 200),
        ({"work_id": "w-parked"}, "as_of=v1", 200),
        ({}, "as_of=15m", 200),
    ],
    "changes": [({}, "from=1h", 200), ({}, "from=v0&to=v3", 200)],
    "changes/<id:work_id>": [({}, "from=v0", 200), ({"work_id": "w-parked"}, "from=v1&to=v2", 200)],
    "compare/<id:work_id>": [({}, "", 200), ({}, "a=nope", 404)],
    "causation/<id:work_id>": [({}, "", 200), ({"work_id": "w-parked"}, "after=1", 200)],
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
    "dashboard": [({}, "", 200), ({}, "window=7d", 200), ({}, "as_of=1h", 200)],
    "dashboard/<id:scope_id>": [({}, "", 200), ({}, "as_of=v1", 200)],
    "preferences/poll": [({}, "", 405)],
    "preferences/theme": [({}, "", 405)],
    "preferences/columns": [({}, "", 405)],
    "views": [({}, "", 200)],
    "views/save": [({}, "", 405)],
    "views/<int:pk>/rename": [({}, "", 405)],
    "views/<int:pk>/delete": [({}, "", 405)],
    "api/v1/works": [({}, "", 200), ({}, "state=failed&size=25", 200)],
    "api/v1/works/<id:work_id>": [({}, "", 200)],
    "api/v1/events": [({}, "", 200)],
    "api/v1/workflows": [({}, "", 200)],
    "api/v1/workflows/<id:workflow_id>": [({}, "", 200)],
    "api/v1/actions/cancel/<id:work_id>": [({}, "", 405)],
    "api/v1/actions/retry/<id:work_id>": [({}, "", 405)],
    "api/v1/actions/bulk": [({}, "", 405)],
    "api/v1/actions/pause-workflow/<id:workflow_id>": [({}, "", 405)],
    "api/v1/actions/resume-workflow/<id:workflow_id>": [({}, "", 405)],
    "api/v1/actions/cancel-workflow/<id:workflow_id>": [({}, "", 405)],
    "api/v1/openapi.json": [({}, "", 200)],
    "account/tokens": [({}, "", 200)],
    "account/tokens/<int:pk>/revoke": [({}, "", 405)],
    "healthz": [({}, "", 200)],
    "timers/ahead": [({}, "", 200), ({}, "window=24h&scope=acme&kind=billing.charge", 200)],
    # The namespaces, a namespace's keys (the no-GET-writes seed writes "recon/shop"
    # under w-running's lease), and the namespace as of the store's first version.
    "kv": [
        ({}, "", 200),
        ({}, "namespace=recon%2Fshop&prefix=cursor", 200),
        ({}, "namespace=recon%2Fshop&as_of=v1", 200),
    ],
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

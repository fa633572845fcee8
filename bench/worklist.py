"""Benchmark 3: the console's Work list against Django admin's changelist, and the Work
page, on the large history.

In-process with django.test.Client as a signed-in superuser (server time: URL routing,
middleware, the view, the queries and the template; no network). The admin is
``bench.admin_site``: the same Work table with list_filter on state, kind, scope,
source and latest executor, facet counts always shown, 50 rows a page, newest first.
Requests alternate between the pages, so both see the same machine conditions.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

from .config import Sizes
from .proc import DataDir, Workspace, child, log
from .report import Section, Target, ms, ratio, table
from .stats import Spread

ADMIN = "/bench-admin/storage/workrow/"


def measure(reps: int) -> dict[str, Any]:
    """(child) Seconds per call of each page (a GET) and of the console's reads alone."""
    from collections.abc import Callable

    from django.contrib.auth import get_user_model
    from django.http import QueryDict
    from django.test import Client

    from console.filters import parse_work_filter
    from console.reads import read_work_list
    from console.stores import get_store
    from storage import WorkQuery, WorkState, view

    store = get_store()
    failed = frozenset({WorkState.FAILED})

    def pick(tx: Any) -> tuple[str, str, str]:
        kinds = tx.work_facets(WorkQuery(states=failed)).kind
        kind = max(kinds, key=lambda k: (kinds[k], k))
        # A finished parent: children, attempts and a timeline to render.
        parents = tx.query_works(
            WorkQuery(kind="deploy.service", states=frozenset({WorkState.COMPLETED}), limit=1)
        )
        newest = tx.query_works(WorkQuery(limit=1))[0]
        return kind, (parents[0] if parents else newest).id, newest.id

    kind, work_id, newest = view(store, None, pick)
    user = get_user_model().objects.create_superuser("bench", "bench@example.com", "bench-pass")
    client = Client()
    client.force_login(user)
    filtered = urlencode({"state": "failed", "kind": kind})
    pages = {
        "console": "/",
        "admin": ADMIN,
        "console_filtered": f"/?{filtered}",
        "admin_filtered": f"{ADMIN}?{filtered}",
        "work_page": f"/works/{work_id}",
        "work_page_newest": f"/works/{newest}",
    }

    def get(url: str) -> None:
        response = client.get(url)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url}: {response.status_code}")

    calls: dict[str, Callable[[], object]] = {
        name: lambda url=url: get(url) for name, url in pages.items()
    }
    # The console page's storage share: its one View (stamp, page, facets) alone.
    for name, query in (("reads", ""), ("reads_filtered", filtered)):
        f = parse_work_filter(QueryDict(query))
        calls[name] = lambda f=f: read_work_list(f, None)
    for name, wq in (
        ("facets", WorkQuery()),
        ("facets_filtered", WorkQuery(states=failed, kind=kind)),
    ):
        calls[name] = lambda q=wq: view(store, None, lambda tx: tx.work_facets(q))
    times: dict[str, list[float]] = {name: [] for name in calls}
    for rep in range(reps + 1):  # the first round warms up and is not kept
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            if rep:
                times[name].append(time.perf_counter() - started)
    return {"pages": pages, "times": times, "kind": kind}


def run(ws: Workspace, large: DataDir, sizes: Sizes) -> Section:
    log(f"benchmark 3: Work list and admin changelist at {sizes.large:,} Work")
    data = ws.copy_of(large, "worklist")
    result = child(data, "worklist.measure", reps=sizes.page_reps)
    ws.discard(data)
    t = {k: Spread.of(v) for k, v in result["times"].items()}
    p = result["pages"]
    section = Section(
        "3",
        "The Work list against Django admin",
        f"The large history ({sizes.large:,} Work). Server time in-process with "
        "`django.test.Client` as a signed-in superuser (routing, middleware, view, "
        "queries, template; no network), DEBUG off, the production static files storage. "
        "Baseline: Django admin's changelist over the same Work table "
        "(`bench/admin_site.py`: list_filter on state, kind, scope, source and latest "
        "executor, `show_facets = ShowFacets.ALWAYS`, 50 rows a page, newest first), "
        f"registered only for the benchmark. {sizes.page_reps} requests per page after "
        "one warm-up round, pages interleaved.",
    )
    rows = []
    for label, console, admin in (
        ("first page", "console", "admin"),
        (f"filtered: state=failed, kind={result['kind']}", "console_filtered", "admin_filtered"),
    ):
        cost = t[console].median / t[admin].median
        rows.append(
            [label, f"`{p[console]}`", ms(t[console]), f"`{p[admin]}`", ms(t[admin]), ratio(cost)]
        )
        section.targets.append(
            Target(f"Work list {label} vs admin changelist", ratio(cost), "<= 0.25x", cost <= 0.25)
        )
    headers = ["Page", "Console URL", "Console", "Admin URL", "Admin", "Console/admin"]
    section.add(table(headers, rows))
    section.add(
        "Where the console's time goes: its one `storage.view` (stamp, page, `work_facets`) "
        f"takes {ms(t['reads'])} of the first page and {ms(t['reads_filtered'])} of the "
        f"filtered one; `work_facets` alone {ms(t['facets'])} and {ms(t['facets_filtered'])}."
    )
    section.add(
        "The Work page at the same size: "
        f"`{p['work_page']}` (a finished deploy.service with children) {ms(t['work_page'])}; "
        f"the newest Work {ms(t['work_page_newest'])}."
    )
    return section

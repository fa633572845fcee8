"""Benchmark 12: what a poll costs while the runtime commits (issue 35), per region
whose content the commits do not touch, against the full page, on the small and the
large realistic history, on SQLite and on PostgreSQL.

Benchmark 5 counts how often such a poll answers 204; this one times it. Before each
request the child commits what a runtime commits elsewhere (a new Work of another kind
and its Event, one transaction), so the store part of every stamp has moved on and no
poll can take the idle path. Then, in-process with ``django.test.Client`` as a
signed-in superuser, DEBUG off, interleaved after one warm-up round:

- the full page (a first load: no stamp);
- the poll as console.js sends it (``HX-Request`` and the stamp its last 204 brought
  back in ``X-Console-Stamp``): for a Work's page that stamp carries its mark
  (``Tx.work_mark``), so the poll reads a few indexes and nothing else;
- the same poll with the stamp's mark cut off, which is what every poll cost before
  marks: the region read whole and hashed (``console.polling``'s digest), only the
  render skipped;
- the floor of any poll: the same poll with nothing committed since the one before it
  (that one, after the commit, is not timed), which reads the store part alone. What
  a poll costs above it is the region's own reads; the floor is the request's: the
  session and the user (two statements on the default connection), the middleware,
  the View's BEGIN, first statement and COMMIT.

The regions: a finished Work's page (the last of benchmark 11's journeys, played into
each copy: four attempts, a Wait, an operator's retry; its mark is ``Tx.work_mark``)
and the failed Work list (the history's failed Work, which a new ready Work does not
change; its mark is ``Tx.works_mark`` of its page and its facets).
"""

from __future__ import annotations

import itertools
import re
import time
from typing import Any
from urllib.parse import quote

from .config import Sizes
from .past import journey
from .pg import Postgres, on_both_engines
from .proc import DataDir, Workspace
from .report import Section, Target, ms, table
from .stats import Spread

GOAL = 0.10  # issue 35: an unchanged region's poll within 10% of its full page
HEADER = "X-Console-Stamp"
STAMP = re.compile(r'data-stamp="([^"]+)"')
POLL_URL = re.compile(r'hx-get="([^"]*stamp=[^"]*)"')
REGIONS = (
    ("work", "A finished Work's page", True),
    ("failed", "The failed Work list", False),
)
# What each region's row times: the page, the poll as console.js sends it, the poll
# whose stamp has no mark (what a poll cost before marks), and an idle poll (nothing
# committed since the last one: the floor of any poll).
CALLS = ("page", "poll", "unmarked", "idle")
POLLS = CALLS[1:]


def measure(reps: int) -> dict[str, Any]:
    """(child) Seconds per request of each region's page and polls, and the status each
    poll answered (all 204 or the figure means nothing)."""
    import html

    from django.contrib.auth import get_user_model
    from django.test import Client

    from storage import Event, Guard, Tx, Work
    from storage.default import default_store

    work = journey(0)
    user = get_user_model().objects.create_superuser("bench", "bench@example.com", "bench-pass")
    client = Client()
    client.force_login(user)
    store = default_store()
    serial = itertools.count()
    prefix = f"bench-poll/{time.time_ns()}"

    def elsewhere() -> None:
        """What the runtime commits meanwhile: a Work of another kind and its Event."""
        n = next(serial)

        def run(tx: Tx) -> None:
            id = f"{prefix}/{n}"
            tx.put_work(Work(id=id, kind="bench.poll"))
            tx.accept_event(Event(id, "bench", id, "bench.poll", work_id=id))

        store.transact(Guard(), run)

    paths = {"work": f"/works/{quote(work['id'], safe='/')}", "failed": "/?state=failed"}
    polls: dict[str, str] = {}  # region -> its poll URL
    stamps: dict[str, str] = {}  # region -> the stamp its last 204 brought back
    for region, path in paths.items():
        page = client.get(path).content.decode()
        found, url = STAMP.search(page), POLL_URL.search(page)
        if not found or not url:
            raise RuntimeError(f"{path}: no polling region")
        polls[region], stamps[region] = html.unescape(url.group(1)), found.group(1)
    statuses: dict[str, set[int]] = {f"{r}/{c}": set() for r in paths for c in POLLS}

    def poll(region: str, call: str) -> None:
        stamp = stamps[region]
        if call == "unmarked":
            stamp = "-".join(stamp.split("-")[:2])
        response = client.get(polls[region], HTTP_HX_REQUEST="true", HTTP_X_CONSOLE_STAMP=stamp)
        statuses[f"{region}/{call}"].add(response.status_code)
        if response.status_code == 204 and call != "unmarked":
            stamps[region] = response[HEADER]

    def page(region: str) -> None:
        response = client.get(paths[region])
        if response.status_code != 200:
            raise RuntimeError(f"GET {paths[region]}: {response.status_code}")

    calls = {
        f"{region}/{call}": (
            (lambda r=region: page(r)) if call == "page" else (lambda r=region, c=call: poll(r, c))
        )
        for region in paths
        for call in CALLS
    }
    times: dict[str, list[float]] = {name: [] for name in calls}
    for rep in range(reps + 1):
        for name, call in calls.items():
            elsewhere()  # not timed: the store moves on before every request
            if name.endswith("/idle"):
                poll(name.split("/")[0], "poll")  # not timed: then nothing moves
            started = time.perf_counter()
            call()
            if rep:
                times[name].append(time.perf_counter() - started)
    marks = {region: stamps[region].count("-") == 2 for region in paths}
    return {
        "times": times,
        "statuses": {k: sorted(v) for k, v in statuses.items()},
        "marked": marks,
        "paths": paths,
    }


def run(ws: Workspace, histories: dict[str, DataDir], sizes: Sizes, pg: Postgres | None) -> Section:
    engines = ["SQLite"] + (["PostgreSQL"] if pg is not None else [])
    works = {"small": sizes.small, "large": sizes.large}
    results = on_both_engines(
        ws, histories, works, pg, "benchmark 12: polls", "poll_cost.measure", reps=sizes.page_reps
    )
    section = Section(
        "12",
        "Polls while the runtime commits",
        "The realistic histories of benchmark 3, on SQLite and on a PostgreSQL copy. In "
        "each copy the child plays one Work through benchmark 11's journey (four "
        "attempts, a Wait, an operator's retry; finished). Before every timed request "
        "it commits what a runtime commits elsewhere (a Work of another kind and its "
        "Event, one transaction), so no poll can take the idle path. Then, in-process "
        "with `django.test.Client` as a signed-in superuser, DEBUG off, interleaved "
        f"after one warm-up round, {sizes.page_reps} requests each: the region's full "
        "page; its poll as console.js sends it (the stamp its last 204 brought back, "
        "which carries the region's mark: `Tx.work_mark` for the Work's page, "
        "`Tx.works_mark` and the facets for the list); the same poll with the mark cut "
        "off (the region read whole and hashed, as every poll was before marks); and "
        "an idle poll, with nothing committed since the poll before it (untimed): the "
        "floor of any poll, the request itself (session, user, middleware, the View's "
        "BEGIN, first statement and COMMIT). Every poll must answer 204 (the regions "
        f"do not change). The goal is issue 35's: such a poll within {GOAL:.0%} of its "
        "full page; the last column is what the region's own reads add to the floor.",
    )
    for engine in engines:
        rows = []
        for key, works in (("small", sizes.small), ("large", sizes.large)):
            found = results[(engine, key)]
            t = {k: Spread.of(v) for k, v in found["times"].items()}
            for region, title, _ in REGIONS:
                full, cheap, before, idle = (t[f"{region}/{c}"] for c in CALLS)
                share = cheap.median / full.median
                above = (cheap.median - idle.median) / full.median
                statuses = {found["statuses"][f"{region}/{c}"] == [204] for c in POLLS}
                met = share <= GOAL and statuses == {True}
                rows.append(
                    [
                        f"{works:,}",
                        title,
                        "yes" if found["marked"][region] else "no",
                        ms(full),
                        ms(cheap),
                        ms(before),
                        ms(idle),
                        f"{share:.0%}",
                        f"{above:.0%}",
                        ", ".join(
                            f"{c} {'/'.join(map(str, found['statuses'][f'{region}/{c}']))}"
                            for c in POLLS
                        ),
                    ]
                )
                section.targets.append(
                    Target(
                        f"{engine}: poll of an unchanged region / its page, {title.lower()}, "
                        f"{works:,} Work",
                        f"{share:.0%}",
                        f"<= {GOAL:.0%}",
                        met,
                    )
                )
        section.add(f"{engine}:")
        section.add(
            table(
                [
                    "Work",
                    "Region",
                    "Marked",
                    "Full page",
                    "Poll (console.js)",
                    "Poll without the mark",
                    "Idle poll (the floor)",
                    "Poll / page",
                    "Poll above the floor / page",
                    "Statuses",
                ],
                rows,
            )
        )
    return section

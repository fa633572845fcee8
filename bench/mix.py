"""Benchmark 5's request mix: the twelve kinds of request an operator's day sends to the
console, with their weights (requests of each kind in every 25).

- dashboard (3): ``/dashboard`` and a Scope tree's ``/dashboard/<scope>``, each at
  ``?window=1h``, ``24h``, ``7d`` and without a window. The console has no
  whole-history window: a URL without one opens on 24 hours (1 hour on a young history).
- list (3): the Work list unfiltered, ``/``.
- filtered list (2): ``/?state=S&kind=K``, running, completed and failed Work of the
  commonest kind.
- searched list (1): ``/?q=<ID prefix>``, the search box given the start of a Work ID
  (a prefix only one ID starts with answers 302, to that Work's page).
- Work page (4): ``/works/<id>``, the newest Work and live Work (finished and live).
- Events (1): ``/events``.
- Executions (1): ``/executions`` (live attempts) and ``/executions?expired=1``.
- Waits and Timers (1): ``/waits`` and ``/timers``.
- runs (1): ``/run-records`` and run pages ``/run-records/<id>`` (graph runs ``simulate`` saves).
- artifact (1): ``/executions/<id>/artifacts/<id>``, a finished attempt's artifact.
- Workflows (1): ``/routed/workflows`` and workflow pages (routed runs ``simulate`` admits).
- poll (6): a region's poll as console.js sends it, with the stamp header
  (``polls.regions``: a settled and a running list, the dashboard, a finished and a live
  Work page), each region's tab opened once before the clients start.

Why these weights: open tabs poll all day, so polls are the most common request; an
operator mostly watches the dashboard, reads the Work list and opens Work; the runtime
pages, runs, artifacts and routed Workflows are visited while chasing one problem.
"""

from __future__ import annotations

import random
import re
from typing import Any
from urllib.parse import quote

from . import polls

# (kind, weight): requests of each kind in every 25 of the mix.
KINDS: tuple[tuple[str, int], ...] = (
    ("dashboard", 3),
    ("list", 3),
    ("filtered list", 2),
    ("searched list", 1),
    ("Work page", 4),
    ("Events", 1),
    ("Executions", 1),
    ("Waits and Timers", 1),
    ("runs", 1),
    ("artifact", 1),
    ("Workflows", 1),
    ("poll", 6),
)
POLL = "poll"
SEARCH = "searched list"
CYCLES = 80  # cycles of 25 in the schedule each client walks round (2,000 requests)
RUN_LINK = re.compile(r'href="(/run-records/[^"?#]+)"')
WORKFLOW_LINK = re.compile(r'href="(/routed/workflows/[^"?#]+)"')


def variants(info: dict[str, Any], runs: list[str], workflows: list[str]) -> dict[str, list[str]]:
    """The paths of each kind. ``runs`` and ``workflows`` are page paths found on the
    runs and Workflows lists once ``simulate`` has saved some (empty: only the lists)."""
    windows = ("?window=1h", "?window=24h", "?window=7d", "")
    scope = quote(info["scope"], safe="")
    kind = quote(info["kind"], safe="")
    works = info["works"]
    return {
        "dashboard": [f"/dashboard{w}" for w in windows]
        + [f"/dashboard/{scope}{w}" for w in windows],
        "list": ["/"],
        "filtered list": [
            f"/?state={state}&kind={kind}" for state in ("running", "completed", "failed")
        ],
        "searched list": [f"/?q={quote(w[: max(3, len(w) - 4)], safe='')}" for w in works[:20]],
        "Work page": [f"/works/{w}" for w in works],
        "Events": ["/events"],
        "Executions": ["/executions", "/executions?expired=1"],
        "Waits and Timers": ["/waits", "/timers"],
        "runs": ["/run-records", *runs[:10]],
        "artifact": [info["artifact"]] if info["artifact"] else ["/executions"],
        "Workflows": ["/routed/workflows", *workflows[:10]],
        POLL: [path for _, path in polls.regions(info)],
    }


def schedule(paths: dict[str, list[str]], seed: int = 5) -> list[tuple[str, str]]:
    """(kind, path) in the mix's proportions: every cycle of 25 holds each kind its
    weight's times in a shuffled order, and each kind's variants are taken in turn."""
    rng = random.Random(seed)  # noqa: S311 - a repeatable order, not a secret
    taken = dict.fromkeys(paths, 0)
    out: list[tuple[str, str]] = []
    for _ in range(CYCLES):
        cycle = []
        for kind, weight in KINDS:
            for _ in range(weight):
                options = paths[kind]
                cycle.append((kind, options[taken[kind] % len(options)]))
                taken[kind] += 1
        rng.shuffle(cycle)
        out += cycle
    return out


def links(pattern: re.Pattern[str], body: str) -> list[str]:
    """The distinct page paths a list's HTML links to, in order."""
    return list(dict.fromkeys(pattern.findall(body)))

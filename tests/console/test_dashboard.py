"""The team dashboards: every number on the page against an independent count of a
generated history, the links behind the charts, the live refresh, bad input.

The independent counts iterate every record through the public API in one View and
count in Python; they share nothing with the dashboard's reads but the records.
"""

from __future__ import annotations

import html
import io
import re
import time
from collections import Counter
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.management import call_command
from django.db import connections

from console.dashboard.reads import LIST_SIZE, parse_window, read_dashboard
from console.urlstate import parse_since
from storage import (
    LIVE_EXECUTION_STATES,
    LIVE_WORK_STATES,
    ExecutionState,
    Tx,
    WorkState,
    view,
)
from storage.default import default_store
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

SEGMENT = re.compile(
    r'<a href="([^"]+)" data-value="(\d+)" tabindex="-1"><rect class="seg seg-(\w+)"'
)
# The chart's table: one link per non-zero cell, the same lists the segments open.
SEGMENT_LINK = re.compile(r'<a href="([^"]+)" data-value="(\d+)" tabindex="-1"><rect class="seg ')
TABLE_LINK = re.compile(r'<td class="num"><a href="([^"]+)">(\d+)</a></td>')
TILE = re.compile(r'data-figure="(\w+)">\s*<span class="what">[^<]*</span><span class="n">(\d+)<')
BAR = re.compile(r'<ul class="hbars" id="chart-(\w+)">(.*?)</ul>', re.S)
BAR_ROW = re.compile(
    r'<li class="hbar">\s*(?:<a class="label mono" href="[^"]*"[^>]*>|<span class="label[^"]*">)'
    r"([^<]+)<.*?<span class=\"n\">(\d+)</span>",
    re.S,
)


def generated() -> None:
    """A day of history through the storage API: every state, attempts, Waits,
    Timers and Events across the demo's Scope trees (acme/billing, ...)."""
    out = io.StringIO()
    call_command("generate", works=240, seed=11, batch=30, days=1, no_progress=True, stdout=out)


def segments(page: str) -> list[tuple[dict[str, list[str]], int, str, str]]:
    """(query of the link, value, series, path) of every drawn column segment."""
    out = []
    for href, value, series in SEGMENT.findall(page):
        url = urlsplit(html.unescape(href))
        out.append((parse_qs(url.query), int(value), series, url.path))
    return out


def bars(page: str) -> dict[str, dict[str, int]]:
    return {
        chart: {label.strip(): int(n) for label, n in BAR_ROW.findall(body)}
        for chart, body in BAR.findall(page)
    }


def in_tree(tx: Tx, root: str | None) -> set[str]:
    """The Scope IDs under ``root`` by walking parent links upwards, independently
    of console.scopes (None: every Scope, and Work without one)."""
    parents = {s.id: s.parent_id for s in tx.scopes()}
    if root is None:
        return {*parents, ""}
    mine = set()
    for scope_id in parents:
        current = scope_id
        while current and current != root:
            current = parents.get(current, "")
        if current == root:
            mine.add(scope_id)
    return mine


def independent(root: str | None, now: int) -> dict[str, object]:
    """Everything the page shows, counted from whole listings."""

    def count(tx: Tx) -> dict[str, object]:
        scopes = in_tree(tx, root)
        works = [w for w in tx.works() if w.scope_id in scopes]
        by_id = {w.id: w for w in tx.works()}
        attempts = tx.executions()
        live_attempts = {x.work_id for x in attempts if x.state in LIVE_EXECUTION_STATES}
        attempted = {x.work_id for x in attempts}
        timed = {t.work_id for t in tx.timers()}
        live = [w for w in works if w.state in LIVE_WORK_STATES]
        live_ids = {w.id for w in live}
        running = [
            x
            for x in attempts
            if x.state is ExecutionState.RUNNING and (root is None or x.work_id in live_ids)
        ]
        return {
            "works": works,
            "events": [e for e in tx.events() if e.scope_id in scopes],
            "attempts": [
                x for x in attempts if x.started_at and by_id[x.work_id].scope_id in scopes
            ],
            "live_state": Counter(w.state.value for w in live),
            "kind": Counter(w.kind for w in live),
            "executor": Counter(w.latest_executor or "(none)" for w in live),
            "exhausted": sorted(
                (w.updated_at, w.id)
                for w in works
                if w.state is WorkState.READY
                and w.id in attempted
                and w.id not in live_attempts
                and w.id not in timed
            ),
            "expired": sum(1 for x in running if x.lease_expires_at <= now),
            # Late by more than the default grace (CONSOLE_OVERDUE_GRACE_SECONDS, 30 s).
            "overdue": sum(
                1 for t in tx.due_timers(now - 30 * 10**9) if root is None or t.work_id in live_ids
            ),
            "waiting": [
                w.id
                for w in sorted(works, key=lambda w: (w.updated_at, w.id))
                if w.state in (WorkState.READY, WorkState.WAITING)
            ][:10],
            "children": {
                s.id: sum(1 for w in live if w.scope_id in in_tree(tx, s.id))
                for s in tx.scopes()
                if (s.parent_id == (root or ""))
            },
        }

    return view(default_store(), now, count)


@pytest.mark.parametrize(("path", "root"), [("/dashboard", None), ("/dashboard/acme", "acme")])
@pytest.mark.parametrize("window", ["1h", "24h", "7d", "30d", "all"])
def test_every_number_on_the_page_equals_an_independent_count(as_alice, path, root, window):
    generated()
    before = time.time_ns()
    page = as_alice.get(path, {"window": window}).content.decode()
    after = time.time_ns()
    counted = independent(root, after)
    assert independent(root, before) == counted, "a lease or Timer fell due mid-test"
    works, events, attempts = counted["works"], counted["events"], counted["attempts"]

    # Every column: its link names the bucket; the value is what lies inside it.
    drawn = segments(page)
    assert drawn, "the generated day draws columns"
    for query, value, series, path_ in drawn:
        lo, hi = (parse_since(query[k][0], 0) for k in ("since", "until"))
        assert query.get("within", [None])[0] == root
        if series in ("completed", "failed", "cancelled"):
            assert (path_, query["state"]) == ("/", [series])
            expected = sum(1 for w in works if w.state == series and lo <= w.updated_at < hi)
        elif series == "events":
            assert path_ == "/events"
            expected = sum(1 for e in events if lo <= e.event.received_at < hi)
        else:
            assert path_ == "/executions"
            expected = sum(1 for x in attempts if lo <= x.started_at < hi)
        assert value == expected, (series, lo, hi)
    # The tiles count the whole window (the completed tile links to it), and the
    # columns drawn add up to them: nothing counted is left undrawn.
    tiles = dict(TILE.findall(page))
    window_links = re.search(r'href="([^"]*)" data-figure="completed"', page)
    assert window_links is not None
    q = parse_qs(urlsplit(html.unescape(window_links.group(1))).query)
    lo, hi = parse_since(q["since"][0], 0), parse_since(q["until"][0], 0)
    ended = Counter(w.state.value for w in works if lo <= w.updated_at < hi)
    assert int(tiles["completed"]) == ended["completed"]
    assert int(tiles["failed"]) == ended["failed"]
    assert int(tiles["events"]) == sum(1 for e in events if lo <= e.event.received_at < hi)
    assert int(tiles["attempts"]) == sum(1 for x in attempts if lo <= x.started_at < hi)
    for series in ("completed", "failed", "cancelled"):
        assert sum(v for _, v, s, _ in drawn if s == series) == ended[series]

    # Right now.
    assert int(tiles["live"]) == sum(counted["live_state"].values())
    assert int(tiles["exhausted"]) == len(counted["exhausted"])
    assert int(tiles["expired"]) == counted["expired"]
    assert int(tiles["overdue"]) == counted["overdue"]
    charts = bars(page)
    states = {s: n for s, n in charts["states"].items() if s in ("ready", "running", "waiting")}
    assert states == {s: counted["live_state"].get(s, 0) for s in states}
    assert {s: n for s, n in charts["states"].items() if s not in states} == {
        s: ended[s] for s in ("completed", "failed", "cancelled")
    }
    assert charts["kinds"] == dict(counted["kind"])
    assert charts["executors"] == dict(counted["executor"])
    assert {k: v for k, v in charts["scopes"].items() if k != "(no scope)"} == counted["children"]
    waiting = re.search(r'id="waiting".*?</section>', page, re.S)
    assert waiting is not None
    assert re.findall(r'href="/works/([^"]+)">', waiting.group(0)) == counted["waiting"]
    exhausted = re.search(r'id="exhausted".*?</section>', page, re.S)
    assert exhausted is not None
    shown = re.findall(r'<td><a class="mono" href="/works/([^"]+)">', exhausted.group(0))
    assert shown == [work_id for _, work_id in counted["exhausted"][:10]]


def test_the_generated_day_exercises_every_panel(as_alice):
    """The data set above is not vacuous: each figure it checks is nonzero somewhere."""
    generated()
    counted = independent(None, time.time_ns())
    assert counted["exhausted"]
    assert counted["expired"]
    assert counted["overdue"]
    assert counted["events"]
    assert counted["attempts"]
    assert {"completed", "failed", "cancelled"} <= {w.state.value for w in counted["works"]}
    assert counted["children"]["acme"] > 0


def test_a_scope_dashboard_counts_its_descendants_and_links_to_them(as_alice):
    f.scope("acme")
    f.scope("acme-eu", parent="acme")
    f.scope("acme-eu-1", parent="acme-eu")
    f.scope("globex")
    f.work("a", scope_id="acme")
    f.work("deep", scope_id="acme-eu-1")
    f.work("g", scope_id="globex")
    f.failed("broken", scope_id="acme-eu")

    page = as_alice.get("/dashboard/acme").content.decode()

    assert bars(page)["scopes"] == {"acme-eu": 1}
    assert 'href="/dashboard/acme-eu"' in page
    assert 'href="/?state=ready&amp;state=running&amp;state=waiting&amp;within=acme-eu"' in page
    assert re.search(
        r'data-figure="live">\s*<span class="what">Live Work</span><span class="n">2<', page
    )
    failed = [s for s in segments(page) if s[2] == "failed"]
    assert [(q["within"], v) for q, v, _, _ in failed] == [(["acme"], 1)]
    # The crumbs lead back up the tree.
    deep = as_alice.get("/dashboard/acme-eu-1?window=1h").content.decode()
    assert 'href="/dashboard?window=1h">All scopes</a>' in deep
    assert 'href="/dashboard/acme?window=1h">acme</a>' in deep


def test_lists_show_what_an_operator_acts_on(as_alice):
    f.scope("acme")
    f.exhausted("stuck", scope_id="acme")
    f.running("lapsed", scope_id="acme", lease=0.001)
    f.running("fine", scope_id="acme", lease=600)
    f.parked("late", scope_id="acme", timeout_in=-60)

    page = as_alice.get("/dashboard/acme").content.decode()

    assert 'href="/actions/retry/stuck?next=/dashboard/acme"' in page
    expired = re.search(r'id="expired".*?</section>', page, re.S)
    assert expired is not None
    assert "lapsed" in expired.group(0)
    assert "fine" not in expired.group(0)
    overdue = re.search(r'id="overdue".*?</section>', page, re.S)
    assert overdue is not None
    assert "late-timeout" in overdue.group(0)
    running = re.search(r'id="running".*?</section>', page, re.S)
    assert running is not None
    assert running.group(0).index("lapsed") < running.group(0).index("fine")  # oldest first


def test_a_viewer_sees_no_retry_button(as_bob):
    f.exhausted("stuck")
    page = as_bob.get("/dashboard").content.decode()
    assert "stuck" in page
    assert "Retry…" not in page


def test_scopes_deeper_than_the_bound_are_named_not_counted(as_alice):
    parent = "s0"
    f.scope(parent)
    for depth in range(1, 11):
        f.scope(f"s{depth}", parent=parent)
        parent = f"s{depth}"
    f.work("too-deep", scope_id="s10")
    f.work("deep-enough", scope_id="s8")

    page = as_alice.get("/dashboard/s0").content.decode()

    assert "2 Scopes more than 8 levels below" in page
    assert re.search(
        r'data-figure="live">\s*<span class="what">Live Work</span><span class="n">1<', page
    )


def test_it_reads_one_view_with_a_pinned_query_count(as_alice, django_assert_num_queries):
    f.scope("acme")
    f.scope("acme-eu", parent="acme")
    for i in range(3):
        f.completed(f"c{i}", scope_id="acme-eu")
        f.exhausted(f"x{i}", scope_id="acme")
    # BEGIN, snapshot (with the store version and latest sequence), Scopes, live
    # facets (the tally), three series, exhausted (count and list), oldest waiting,
    # first failure, longest running, expired attempts and overdue Timers (first ten
    # and count of each), the listed Work's last tries (latest attempts, Timers,
    # Waits: 3), COMMIT; whatever the number of Work, Scopes or buckets.
    with django_assert_num_queries(20, connection=connections["view"]):
        assert as_alice.get("/dashboard?window=7d").status_code == 200
    # A Scope costs the same: its attempts are selected by their own Scope column,
    # its Timers by their Work's, not by reading its live Work first.
    with django_assert_num_queries(20, connection=connections["view"]):
        assert as_alice.get("/dashboard/acme?window=7d").status_code == 200


def test_the_stamp_turns_every_minute_so_time_driven_figures_refresh():
    """A lease expires or a Timer falls due without any write: the stamp carries the
    minute, so a poll re-renders at least once a minute even when nothing changed."""
    expiry = f.running("r1", lease=600).lease_expires_at
    minute = expiry // 60_000_000_000 * 60_000_000_000  # the minute the lease expires in
    window = parse_window("1h")

    first = read_dashboard(None, window, now=minute)
    assert first is not None
    assert first.expired == []
    assert read_dashboard(None, window, first.stamp, now=minute + 59 * 10**9) is None
    later = read_dashboard(None, window, first.stamp, now=minute + 60 * 10**9)
    assert later is not None
    assert [x.work_id for x in later.expired] == ["r1"]


def test_a_poll_with_an_unchanged_store_is_a_204_and_a_change_rerenders(as_alice, monkeypatch):
    # The minute in the stamp must not turn between the two requests here.
    monkeypatch.setattr("console.dashboard.reads.STAMP_PERIOD", 10**30)
    f.work("w1")
    page = as_alice.get("/dashboard?window=1h").content.decode()
    stamp = re.search(r'data-stamp="([^"]+)"', page).group(1)
    assert 'hx-get="/dashboard?window=1h&amp;stamp=' in page

    poll = as_alice.get("/dashboard", {"window": "1h", "stamp": stamp}, HTTP_HX_REQUEST="true")
    assert poll.status_code == 204
    f.failed("w2")
    poll = as_alice.get("/dashboard", {"window": "1h", "stamp": stamp}, HTTP_HX_REQUEST="true")
    assert poll.status_code == 200
    assert poll.content.decode().lstrip().startswith('<div id="live"')


@pytest.mark.parametrize(
    ("url", "status", "says"),
    [
        ("/dashboard?window=2y", 400, "The window is one of 1h, 24h, 7d, 30d, all."),
        ("/dashboard/nowhere", 404, "Scope &#x27;nowhere&#x27; does not exist"),
        ("/executions?until=1h", 400, "Attempts started since when?"),
        ("/executions?since=someday", 400, "Enter a UTC time"),
    ],
)
def test_bad_input_is_a_clear_4xx(as_alice, url, status, says):
    response = as_alice.get(url)
    assert response.status_code == status
    assert says in response.content.decode()


def test_the_scopes_page_links_each_scope_to_its_dashboard(as_alice):
    f.scope("acme/billing")
    f.failed("w1", scope_id="acme/billing")
    assert 'href="/dashboard/acme/billing"' in as_alice.get("/scopes").content.decode()

    page = as_alice.get("/dashboard/acme/billing").content.decode()  # IDs may hold "/"
    assert '<strong class="mono">acme/billing</strong>' in page
    assert "within=acme%2Fbilling" in page


def test_the_nav_leads_to_the_dashboard_and_the_window_stays_in_the_url(as_alice):
    f.scope("acme")
    page = as_alice.get("/dashboard?window=7d").content.decode()
    assert '<a href="/dashboard" aria-current="page">Dashboard</a>' in page
    assert '<strong aria-current="true">Last 7 days</strong>' in page
    assert 'href="/dashboard/acme?window=7d"' in page


def test_a_chart_bucket_opens_the_attempts_and_events_it_counted(as_alice):
    f.scope("acme")
    f.running("r1", scope_id="acme")
    f.event("e1", scope_id="acme")
    f.event("e2")  # no Scope recorded: not acme's
    page = as_alice.get("/dashboard/acme?window=1h").content.decode()
    links = {s: (p, q) for q, _, s, p in segments(page)}

    path, query = links["attempts"]
    started = as_alice.get(path, {k: v[0] for k, v in query.items()}).content.decode()
    assert "<strong>1</strong> attempt started" in started
    assert "r1-x1" in started
    path, query = links["events"]
    events = as_alice.get(path, {k: v[0] for k, v in query.items()}).content.decode()
    assert 'href="/events/e1"' in events
    assert 'href="/events/e2"' not in events


def test_each_chart_has_a_table_with_the_numbers_and_links_of_its_picture(as_alice):
    """The SVG is hidden from screen readers and the keyboard; its table is not."""
    f.completed("c1")
    f.failed("f1")
    f.event("e1")
    page = as_alice.get("/dashboard?window=1h").content.decode()

    drawn = sorted((html.unescape(h), int(v)) for h, v in SEGMENT_LINK.findall(page))
    tabled = sorted((html.unescape(h), int(v)) for h, v in TABLE_LINK.findall(page))
    assert drawn
    assert tabled == drawn
    assert 'aria-hidden="true"' in page.split('<svg class="columns"', 1)[1][:200]
    assert 'role="img"' not in page


def test_more_expired_leases_than_it_lists_link_to_the_expired_preset_of_its_scope(as_alice):
    f.scope("acme x")
    for i in range(LIST_SIZE + 1):
        f.running(f"lapsed-{i}", scope_id="acme x", lease=0.001)
    f.running("elsewhere", lease=0.001)

    page = as_alice.get("/dashboard/acme%20x").content.decode()
    link = re.search(r'<a href="([^"]*)">All 11 on the Executions page</a>', page)
    assert link is not None
    target = html.unescape(link.group(1))
    assert target == "/executions?expired=1&within=acme%20x"
    listed = as_alice.get(target).content.decode()
    assert all(f"lapsed-{i}" in listed for i in range(LIST_SIZE + 1))
    assert "elsewhere" not in listed

"""A dashboard URL without ``?window=`` opens on the last hour while the history is
younger than a day (on a fresh system the day's window is one bar at its right edge),
and on the last 24 hours after that. A window named in the URL is kept in its links."""

from __future__ import annotations

import re

from django.db import connections

from console.dashboard.reads import parse_window, read_dashboard
from storage import seconds
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

DAY = seconds(24 * 3600)


def _current_window(page: str) -> str:
    picker = re.search(r'<nav class="tabs window-picker".*?</nav>', page, re.S)
    assert picker is not None
    current = re.search(r'<strong aria-current="true">([^<]*)</strong>', picker.group(0))
    assert current is not None
    return current.group(1)


def test_a_young_history_opens_on_the_last_hour(as_alice):
    f.scope("acme")
    f.event("e1", scope_id="acme")
    page = as_alice.get("/dashboard").content.decode()
    assert _current_window(page) == "Last hour"
    # Links keep the page on the window its history chose, not one fixed in the URL.
    assert 'href="/dashboard/acme"' in page


def test_an_empty_store_opens_on_the_last_hour(as_alice):
    assert _current_window(as_alice.get("/dashboard").content.decode()) == "Last hour"


def test_a_history_older_than_a_day_opens_on_the_last_24_hours():
    first = f.event("e1")
    young = read_dashboard(None, None, now=first.event.received_at + DAY - 1)
    old = read_dashboard(None, None, now=first.event.received_at + DAY)
    assert young is not None
    assert old is not None
    assert (young.window.key, young.chosen) == ("1h", False)
    assert (old.window.key, old.chosen) == ("24h", False)


def test_a_window_named_in_the_url_wins_and_stays_in_its_links(as_alice):
    f.scope("acme")
    f.event("e1", scope_id="acme")
    page = as_alice.get("/dashboard?window=24h").content.decode()
    assert _current_window(page) == "Last 24 hours"
    assert 'href="/dashboard/acme?window=24h"' in page
    dash = read_dashboard(None, parse_window("24h"))
    assert dash is not None
    assert dash.chosen


def test_choosing_the_window_costs_one_query(as_alice, django_assert_num_queries):
    f.exhausted("x1")
    # As test_dashboard's pinned count for a named window (22), plus the first Event.
    with django_assert_num_queries(23, connection=connections["view"]):
        assert as_alice.get("/dashboard").status_code == 200

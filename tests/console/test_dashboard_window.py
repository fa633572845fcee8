"""A dashboard URL without ``?window=`` opens on the last hour while the history is
younger than a day (on a fresh system the day's window is one bar at its right edge),
and on the last 24 hours after that. A window named in the URL is kept in its links.
The 30 days' window has a bar a day; the whole history's spans it from its first day in
at most 30 bars of whole days."""

from __future__ import annotations

import re

from django.db import connections
from hypothesis import given
from hypothesis import strategies as st

from console.dashboard.reads import axis, parse_window, read_dashboard
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
    # As test_dashboard's pinned count for a named window (21), plus the first Event.
    with django_assert_num_queries(21, connection=connections["view"]):
        assert as_alice.get("/dashboard").status_code == 200


@given(
    first=st.integers(min_value=0, max_value=4_000 * DAY),
    age=st.integers(min_value=0, max_value=4_000 * DAY),
)
def test_the_whole_history_window_covers_it_in_at_most_30_buckets_of_whole_days(
    first: int, age: int
) -> None:
    now = first + age
    b = axis(parse_window("all"), now, first)
    assert b.start % DAY == 0
    assert b.width % DAY == 0
    assert 1 <= b.count <= 30
    assert b.start <= first
    assert first - b.start < DAY  # it starts on the first instant's day
    assert b.start + (b.count - 1) * b.width <= now < b.end  # the last bucket holds now
    # The fewest days a bucket that keep it within 30 buckets.
    if b.width > DAY:
        assert now // DAY - b.start // DAY + 1 > 30 * (b.width // DAY - 1)


def test_the_whole_history_window_counts_every_event_and_names_its_days(as_alice):
    f.scope("acme")
    for n in range(3):
        f.event(f"e{n}", scope_id="acme")
    page = as_alice.get("/dashboard?window=all").content.decode()
    assert _current_window(page) == "All history"
    dash = read_dashboard(None, parse_window("all"))
    assert dash is not None
    assert sum(dash.events) == 3
    assert dash.axis.start % DAY == 0
    assert "per day" in page
    assert 'href="/dashboard/acme?window=all"' in page


def test_the_whole_history_window_of_an_empty_store_is_the_last_30_days(as_alice):
    dash = read_dashboard(None, parse_window("all"))
    assert dash is not None
    assert (dash.axis.width, dash.axis.count) == (DAY, 30)
    assert as_alice.get("/dashboard?window=all").status_code == 200


def test_the_30_day_window_has_a_bar_a_day(as_alice):
    f.event("e1")
    page = as_alice.get("/dashboard?window=30d").content.decode()
    assert _current_window(page) == "Last 30 days"
    assert "per day, last 30 days" in page
    dash = read_dashboard(None, parse_window("30d"))
    assert dash is not None
    assert (dash.axis.width, dash.axis.count, sum(dash.events)) == (DAY, 30, 1)


def test_the_whole_history_window_costs_two_queries_more(as_alice, django_assert_num_queries):
    f.exhausted("x1")
    # As test_dashboard's pinned count for a named window (21), plus the first Work
    # and the first Event.
    with django_assert_num_queries(22, connection=connections["view"]):
        assert as_alice.get("/dashboard?window=all").status_code == 200

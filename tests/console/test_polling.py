"""Live updates: polling regions, the interval picker and the cheap "unchanged"."""

import re

import pytest
from django.db import connections

from console.polling import COOKIE, polled_view
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

LIVE_PAGES = ["/", "/works/w1", "/events", "/executions", "/waits", "/timers", "/scopes"]


def stamp_of(html: str) -> str:
    return re.search(r'data-stamp="([\d.]+)"', html).group(1)


def poll_url_of(html: str) -> str:
    return re.search(r'hx-get="([^"]+stamp=[^"]+)"', html).group(1).replace("&amp;", "&")


@pytest.fixture
def some_work():
    f.scope("acme")
    f.parked("w1", scope_id="acme")
    f.event("e1", work_id="w1")


@pytest.mark.parametrize("path", LIVE_PAGES)
def test_a_poll_with_an_unchanged_stamp_is_a_204_after_one_cheap_read(
    as_alice, some_work, path, django_assert_num_queries
):
    html = as_alice.get(path).content.decode()
    url = poll_url_of(html)

    # BEGIN, snapshot, latest sequence, store version, COMMIT: nothing else.
    with django_assert_num_queries(5, connection=connections["view"]):
        response = as_alice.get(url, HTTP_HX_REQUEST="true")

    assert response.status_code == 204
    assert response["HX-Reswap"] == "none"
    assert response.content == b""


@pytest.mark.parametrize("path", LIVE_PAGES)
def test_a_poll_after_a_change_gets_the_fresh_fragment(as_alice, some_work, path):
    url = poll_url_of(as_alice.get(path).content.decode())
    f.work("w2")

    response = as_alice.get(url, HTTP_HX_REQUEST="true")

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert stamp_of(html) != url.rsplit("stamp=", 1)[1]


def test_the_poll_keeps_the_filter_and_carries_the_stamp(as_alice, some_work):
    html = as_alice.get("/?kind=billing.charge&state=waiting").content.decode()

    url = poll_url_of(html)
    assert url.startswith("/?kind=billing.charge&state=waiting&stamp=")
    assert 'hx-trigger="every 5s, consolewake"' in html


def test_a_stamp_without_htmx_still_renders_the_page(as_alice, some_work):
    stamp = stamp_of(as_alice.get("/").content.decode())

    response = as_alice.get(f"/?stamp={stamp}")

    assert response.status_code == 200
    assert b"<html" in response.content


@pytest.mark.parametrize(("every", "trigger"), [("2", "every 2s"), ("60", "every 60s")])
def test_the_interval_picker_sets_the_poll_interval(as_alice, some_work, every, trigger):
    response = as_alice.post("/preferences/poll", {"every": every, "next": "/events?unrouted=1"})

    assert response.status_code == 302
    assert response["Location"] == "/events?unrouted=1"
    assert response.cookies[COOKIE].value == every
    assert f'hx-trigger="{trigger}, consolewake"' in as_alice.get("/").content.decode()


def test_off_stops_polling(as_alice, some_work):
    as_alice.post("/preferences/poll", {"every": "0", "next": "/"})

    html = as_alice.get("/").content.decode()

    assert "data-poll" not in html
    assert "hx-trigger" not in html
    assert '<option value="0" selected>off</option>' in html


def test_the_picker_refuses_to_redirect_off_site(as_alice):
    response = as_alice.post("/preferences/poll", {"every": "5", "next": "https://evil.example/"})

    assert response["Location"] == "/"


def test_older_event_pages_do_not_poll(as_alice, some_work):
    html = as_alice.get("/events?before=2").content.decode()

    assert "data-poll" not in html


def test_polled_view_builds_unless_the_stamp_it_was_given_is_still_current(some_work):
    built: list[str] = []

    def build(tx, stamp):
        built.append(stamp)
        return tx.work("w1").id

    assert polled_view("", build) == "w1"
    current = built[-1]
    assert polled_view(current, build) is None
    assert built == [current]  # "unchanged" never calls build
    f.parked("w2")
    assert polled_view(current, build) == "w1"
    assert built[-1] != current


def test_a_period_stamps_the_time_too_so_a_poll_rerenders_when_it_turns(some_work):
    stamps: list[str] = []

    def build(tx, stamp):
        stamps.append(stamp)

    minute = 60 * 10**9
    polled_view("", build, now=10 * minute, period=minute)
    assert polled_view(stamps[0], lambda tx, s: s, now=10 * minute + 1, period=minute) is None
    assert polled_view(stamps[0], lambda tx, s: s, now=11 * minute, period=minute) is not None

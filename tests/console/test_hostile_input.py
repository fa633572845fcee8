"""No input gives a 500 (issue 20): digits that pass str.isdigit() but not int(), times
beyond 64-bit nanoseconds, 20-digit cursors, non-URL ``next`` values; and values that
used to be ignored silently now say why they are refused."""

import pytest

from tests.console import run_record_factories as rf
from tests.console.conftest import DB

pytestmark = DB

SUPERSCRIPT = "\u00b2"  # "²": "²".isdigit() is True, int("²") raises ValueError


@pytest.mark.parametrize(
    "url",
    [
        f"/?size={SUPERSCRIPT}",
        f"/?after={SUPERSCRIPT}1.w",
        f"/?before={SUPERSCRIPT}1.w",
        f"/events?after={SUPERSCRIPT}",
        f"/events?before={SUPERSCRIPT}",
        f"/run-records?format={SUPERSCRIPT}",
        f"/run-records?size={SUPERSCRIPT}",
        f"/run-records?after={SUPERSCRIPT}1.run",
    ],
)
def test_a_superscript_digit_in_a_number_is_a_400_naming_it(as_bob, url):
    response = as_bob.get(url)

    assert response.status_code == 400
    name = url.split("?")[1].split("=")[0]
    assert name.encode() in response.content.lower()


@pytest.mark.parametrize(
    "query",
    [
        "since=0001-01-01",
        "since=9999-12-31",
        "before=0001-01-01",
        "before=9999-12-31T23:59:59",
        "after=99999999999999999999.run",
        "since=9999-12-31&after=99999999999999999999.run",
    ],
)
def test_runs_take_any_time_and_cursor_the_work_list_takes(as_bob, query):
    rf.checkout("run-1")

    runs = as_bob.get(f"/run-records?{query}")
    works = as_bob.get(f"/?{query.replace('.run', '.w').replace('before=', 'until=')}")

    assert (runs.status_code, works.status_code) == (200, 200)
    listed = b'href="/run-records/run-1"' in runs.content
    # Only a lower bound before every commit, an upper one past them, or a cursor past
    # every run lets the run through.
    passes = ("since=0001-01-01", "before=9999-12-31T23:59:59", "after=99999999999999999999.run")
    assert listed == (query in passes)


def test_a_superscript_poll_cookie_falls_back_to_the_default(as_bob):
    as_bob.cookies["console_poll"] = SUPERSCRIPT

    response = as_bob.get("/")

    assert response.status_code == 200


@pytest.mark.parametrize("target", ["7d", "foo", "a:b", "//evil.example/", "https://evil.example/"])
def test_the_poll_picker_goes_home_unless_next_is_a_local_path(as_bob, target):
    response = as_bob.post("/preferences/poll", {"every": "15", "next": target})

    assert response.status_code == 302
    assert response["Location"] == "/"


def test_the_poll_picker_goes_back_to_a_local_path(as_bob):
    response = as_bob.post("/preferences/poll", {"every": "15", "next": "/events?q=a"})

    assert response["Location"] == "/events?q=a"
    assert response.cookies["console_poll"].value == "15"


def test_the_poll_picker_ignores_a_superscript_interval(as_bob):
    response = as_bob.post("/preferences/poll", {"every": SUPERSCRIPT, "next": "/"})

    assert response.status_code == 302
    assert "console_poll" not in response.cookies


def test_an_unknown_unrouted_value_is_refused_with_a_message(as_bob):
    response = as_bob.get("/events?unrouted=maybe")

    assert response.status_code == 400
    assert b"unrouted is 1 or 0" in response.content


@pytest.mark.parametrize("value", ["1", "on", "true", "0", "off", "false", ""])
def test_the_usual_unrouted_spellings_are_taken(as_bob, value):
    assert as_bob.get(f"/events?unrouted={value}").status_code == 200


def test_an_unknown_due_value_is_refused_with_a_message(as_bob):
    response = as_bob.get("/timers?due=bogus")

    assert response.status_code == 400
    assert b"due is 1 (due and overdue Timers only) or 0 (all)" in response.content


@pytest.mark.parametrize("value", ["1", "0", ""])
def test_the_due_spellings_are_taken(as_bob, value):
    assert as_bob.get(f"/timers?due={value}").status_code == 200


@pytest.mark.parametrize(
    ("url", "cookie"),
    [("/works/a%00b", ""), ("/?kind=%00", ""), ("/events?source=a%00", ""), ("/", "\x00")],
)
def test_a_nul_anywhere_in_a_request_is_a_400(as_bob, url, cookie):
    # No ID or text may hold NUL (PostgreSQL text cannot): on PostgreSQL it reached the
    # driver through a lookup, a filter or the session read, as a 5xx.
    extra = {"HTTP_COOKIE": f"sessionid={cookie}"} if cookie else {}

    response = as_bob.get(url, **extra)

    assert response.status_code == 400
    assert b"NUL character" in response.content

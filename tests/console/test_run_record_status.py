"""Run records by derived status, and where a failed attempt's error can be found.

A run's status is derived from its record (console/run_records/outcome.py), not stored,
so a status filter reads at most STATUS_SCAN records a page (one read, whatever the
history) and keeps those with that status; the next page continues after the last one
shown, or after the last one read when none of those matched."""

from __future__ import annotations

import html as markup
import re

import pytest
from django.db import connections

from console.run_records import views as run_views
from tests.console import run_record_factories as rf
from tests.console.conftest import DB

pytestmark = DB


def rows_of(html: str) -> list[str]:
    return re.findall(r'<td class="id"><a class="mono" href="/run-records/([^"]+)">', html)


def owned_queries() -> int:
    return 1 if connections["view"].vendor == "postgresql" else 0


@pytest.fixture
def runs():
    rf.checkout("checkout/1")  # complete
    rf.payment("payment/spent", failures=9)  # its Retry budget spent: failed
    rf.checkout("checkout/2")
    rf.payment("payment/ok", failures=1)  # retried once, then complete


@pytest.mark.parametrize(
    ("qs", "expected"),
    [
        ("status=failed", ["payment/spent"]),
        ("status=complete", ["payment/ok", "checkout/2", "checkout/1"]),
        (
            "status=failed&status=complete",
            ["payment/ok", "checkout/2", "payment/spent", "checkout/1"],
        ),
        ("status=active", []),
        ("status=failed&q=checkout", []),
    ],
)
def test_the_list_filters_by_derived_status(as_bob, runs, qs, expected):
    response = as_bob.get(f"/run-records?{qs}")

    assert response.status_code == 200
    assert rows_of(response.content.decode()) == expected


def test_a_status_chip_removes_that_status_alone(as_bob, runs):
    html = as_bob.get("/run-records?status=failed&status=complete").content.decode()

    assert 'href="?status=complete"' in html
    assert 'href="?status=failed"' in html


def test_an_unknown_status_is_a_400(as_bob):
    response = as_bob.get("/run-records?status=broken")

    assert response.status_code == 400
    assert b"status is one of complete, failed, retrying, active" in response.content


def test_status_pages_continue_after_the_last_match_or_the_last_read(as_bob, monkeypatch):
    monkeypatch.setattr(run_views, "STATUS_SCAN", 3)
    for n in range(4):
        rf.checkout(f"ok/{n}")
    rf.payment("spent/1", failures=9)
    for n in range(4, 8):
        rf.checkout(f"ok/{n}")

    def follow(url: str) -> tuple[list[str], str]:
        html = as_bob.get(url).content.decode()
        found = re.search(r'rel="next" href="([^"]+)"', html)
        return rows_of(html), "/run-records" + markup.unescape(found.group(1)) if found else ""

    pages = []
    url = "/run-records?status=failed"
    while url:
        rows, url = follow(url)
        pages.append(rows)
    # Newest first: ok/7, ok/6, ok/5 | ok/4, spent/1, ok/3 | ok/2, ok/1, ok/0.
    assert pages == [[], ["spent/1"], []]


def test_a_status_page_costs_one_read_whatever_the_history(
    as_bob, django_assert_num_queries, monkeypatch
):
    monkeypatch.setattr(run_views, "STATUS_SCAN", 5)
    counts = []
    for batch in (range(2), range(2, 12)):
        for n in batch:
            rf.checkout(f"c/{n}")
        # BEGIN, snapshot (with the store version and latest sequence), the scan (1),
        # count (1), COMMIT; owned as the list.
        with django_assert_num_queries(5 + owned_queries(), connection=connections["view"]) as ctx:
            assert as_bob.get("/run-records?status=complete").status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]


def test_a_failed_attempt_says_where_its_error_is(as_bob, settings):
    rf.payment("payment/spent", failures=9)
    html = markup.unescape(as_bob.get("/run-records/payment/spent").content.decode())

    assert re.search(
        r"its error is in data/logs/simulate\.log: the line 'run payment/spent node \S+ "
        r"attempt \S+ failed'",
        re.sub(r"<[^>]+>", "", html),
    )


def test_the_error_location_is_a_setting_and_a_bad_one_falls_back(as_bob, settings):
    rf.payment("payment/spent", failures=9)
    settings.CONSOLE_RUN_ERRORS = "at https://logs.example/search?q={run}+{node}"
    html = markup.unescape(as_bob.get("/run-records/payment/spent").content.decode())
    assert "its error is at https://logs.example/search?q=payment/spent+" in html

    settings.CONSOLE_RUN_ERRORS = "in {nowhere"
    html = markup.unescape(as_bob.get("/run-records/payment/spent").content.decode())
    assert "its error is in the runtime's own logs" in html

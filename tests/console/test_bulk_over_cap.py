"""A bulk selection over the documented cap (10,000 eligible Work, the real cap, not
shrunk): the confirmation opens with a page that says how many and what to do (narrow
the filter, with narrower filters offered and counted), each narrower filter opens its
own confirmation under the cap, and a POST that promises more than the cap is a 400
page, never a bare status."""

from __future__ import annotations

import re

import pytest

from console.actions import work as actions
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = [DB, pytest.mark.slow]

CAP = 10_000


@pytest.fixture
def over_cap():
    f.exhausted_many([f"a{i:05d}" for i in range(6_000)], kind="sync.crm")
    f.exhausted_many([f"b{i:05d}" for i in range(4_001)], kind="billing.charge")


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_a_selection_over_the_cap_says_how_many_and_to_narrow_the_filter(as_alice, over_cap):
    assert actions.BULK_CAP == CAP
    response = as_alice.get("/actions/bulk", {"do": "retry-all", "is": "exhausted"})
    html = response.content.decode()
    said = text(html)

    assert response.status_code == 200
    assert 'class="panel over-cap" role="alert"' in html
    assert "Over the cap: 10,001 Work to retry, and one bulk action takes 10,000" in said
    assert "The filter matches 10,001 Work." in said
    assert "leave 1 more to look at for another run" in said
    assert "narrow the filter until it selects 10,000 or fewer" in said
    assert "Retry only kind sync.crm (6,000 match)" in said
    assert "Retry only kind billing.charge (4,001 match)" in said


def test_a_narrower_filter_opens_its_own_confirmation_under_the_cap(as_alice, over_cap):
    html = as_alice.get("/actions/bulk", {"do": "retry-all", "is": "exhausted"}).content.decode()
    link = re.search(r'<a href="([^"]+)">Retry only kind <span class="mono">', html)
    links = re.findall(r'<li><a href="([^"]+)">Retry only kind', html)
    narrowed = as_alice.get(links[1].replace("&amp;", "&")).content.decode()

    assert link is not None
    assert "over-cap" not in narrowed
    assert "<h1>Retry 4,001 Work</h1>" in narrowed


def test_under_the_cap_nothing_is_said(as_alice):
    f.exhausted_many([f"c{i:05d}" for i in range(CAP)], kind="sync.crm")
    html = as_alice.get("/actions/bulk", {"do": "retry-all", "is": "exhausted"}).content.decode()

    assert "<h1>Retry 10,000 Work</h1>" in html
    assert "over-cap" not in html


def test_a_post_promising_more_than_the_cap_is_a_400_page(as_alice):
    f.exhausted("w1")
    ids = ",".join(f'"w{i}"' for i in range(CAP + 1))
    response = as_alice.post(
        "/actions/bulk",
        {
            "do": "retry-all",
            "is": "exhausted",
            "through": "1.w1",
            "promised": f"[{ids}]",
            "seen": "1",
            "token": "t" * 32,
            "reason": "upstream fixed",
        },
    )

    assert response.status_code == 400
    assert b"<html" in response.content

"""The audit by person: the Event stream filtered by actor or by "my actions" with the
reason in the row, the preset "My actions in the last 24 h", and an operator's page
(what they did, linked), each one View with a query count that does not grow with the
history."""

from __future__ import annotations

import html as markup
import re

import pytest
from django.db import connections

from console.events import views as event_views
from console.saved.presets import BY_KEY
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

ROW = re.compile(r'<td class="mono"><a href="/events/([^"]+)">\d+</a></td>')
ACTION_ROW = re.compile(r'<a href="/events/([^"]+)">#\d+</a>')


def manual(event_id: str, who: str, work_id: str, reason: str, action: str = "cancel"):
    return f.event(
        event_id,
        source="core.manual",
        type=f"core.manual.{action}",
        work_id=work_id,
        actor=f"operator:{who}",
        schema="core.manual.v1",
        data={"action": action, "reason": reason},
    )


@pytest.fixture
def actions():
    f.work("w1")
    f.work("w2")
    manual("a1", "alice", "w1", "duplicate order")
    f.event("h1", source="github", work_id="w1")
    manual("b1", "bob", "w2", "customer asked", action="retry")
    manual("a2", "alice", "w2", "stuck since Friday", action="retry")


@pytest.mark.parametrize(
    ("qs", "expected"),
    [
        ("actor=operator:alice", ["a2", "a1"]),
        ("actor=alice", ["a2", "a1"]),  # a bare name is that operator
        ("actor=bob", ["b1"]),
        ("actor=carol", []),
        ("mine=1", ["a2", "a1"]),  # signed in as alice
        ("mine=1&work=w2", ["a2"]),
        ("mine=0", ["a2", "b1", "h1", "a1"]),
    ],
)
def test_the_stream_filters_by_actor_and_by_mine(as_alice, actions, qs, expected):
    response = as_alice.get(f"/events?{qs}")

    assert response.status_code == 200
    assert ROW.findall(response.content.decode()) == expected


def test_a_row_shows_who_and_why_linking_the_operator(as_bob, actions):
    html = as_bob.get("/events").content.decode()

    assert 'href="/operators/alice"' in html
    assert "stuck since Friday" in html
    assert "customer asked" in html


def test_mine_and_actor_together_or_a_bad_flag_are_a_400(as_alice, actions):
    both = as_alice.get("/events?mine=1&actor=bob")
    bad = as_alice.get("/events?mine=maybe")

    assert both.status_code == 400
    assert b"not both" in both.content
    assert bad.status_code == 400


def test_the_preset_is_my_actions_in_the_last_day(as_alice, actions):
    url = BY_KEY["my-actions-24h"].url()
    html = as_alice.get(url).content.decode()

    assert url == "/events?mine=1&since=24h"
    assert ROW.findall(html) == ["a2", "a1"]
    assert "My actions in the last 24 h" in as_alice.get("/views").content.decode()


def test_an_operators_page_lists_what_they_did_with_links(as_bob, actions):
    response = as_bob.get("/operators/alice")
    html = response.content.decode()

    assert response.status_code == 200
    assert ACTION_ROW.findall(html) == ["a2", "a1"]
    assert 'href="/works/w2"' in html
    assert 'href="/works/w1"' in html
    assert "stuck since Friday" in html
    assert "duplicate order" in html
    assert "customer asked" not in html  # bob's own action
    assert 'href="/events?actor=operator%3Aalice"' in html


def test_an_operator_with_no_actions_is_an_empty_page_not_a_404(as_bob, actions):
    response = as_bob.get("/operators/carol")

    assert response.status_code == 200
    assert b"No actions recorded for" in response.content


def test_the_operators_page_refuses_another_actor(as_bob, actions):
    assert as_bob.get("/operators/alice?actor=bob").status_code == 400
    assert as_bob.get("/operators/alice?before=x").status_code == 400


def test_the_user_menu_links_to_my_actions(as_alice):
    assert 'href="/operators/alice">My actions</a>' in as_alice.get("/events").content.decode()


@pytest.mark.parametrize("name", ["a/b", "x..y", "dots.", "ünï", "a/../b", "q?&#%2F", "n" * 246])
def test_any_name_works_in_the_operators_url(as_bob, name):
    f.work("w1")
    manual("odd", name, "w1", "odd name")
    html = as_bob.get("/events").content.decode()
    link = re.search(r'<a class="mono" href="(/operators/[^"]+)"', html).group(1)

    response = as_bob.get(markup.unescape(link))
    assert response.status_code == 200
    assert ACTION_ROW.findall(response.content.decode()) == ["odd"]


def test_an_operators_page_and_the_filtered_stream_cost_the_same_whatever_the_history(
    as_alice, django_assert_num_queries, monkeypatch
):
    monkeypatch.setattr(event_views, "EVENT_PAGE_SIZE", 5)
    f.work("w1")
    for n in range(3):
        manual(f"a{n}", "alice", "w1", "r")
    counts = []
    for _ in range(2):
        for path in ("/operators/alice", "/events?mine=1", "/events?actor=alice"):
            with django_assert_num_queries(4, connection=connections["view"]) as ctx:
                assert as_alice.get(path).status_code == 200
            counts.append(len(ctx.captured_queries))
        for n in range(3, 30):
            manual(f"a{n}", "alice", "w1", "r")
            f.event(f"h{n}", work_id="w1")
    assert len(set(counts)) == 1

"""The Work page: summary, attempts, timeline, Waits, Timers and its actions."""

import re

import pytest
from django.db import connections

from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB


@pytest.fixture
def waiting_work():
    f.scope("acme")
    f.work("parent-1", scope_id="acme")
    wait = f.parked("w1", scope_id="acme", parent="parent-1", keys=[("github", "acme/api#7")])
    f.work("child-1", parent="w1")
    f.event("e1", work_id="w1", data={"note": "<script>alert(1)</script>"}, route="routed")
    f.event("e2", work_id="w1", causation="e1", type="approval.requested")
    return wait


def test_it_shows_the_work_its_attempts_timeline_waits_and_timers(as_alice, waiting_work):
    response = as_alice.get("/works/w1")

    html = response.content.decode()
    assert response.status_code == 200
    assert '<span class="badge badge-waiting">waiting</span>' in html
    assert "github/acme/api#7" in html  # correlation key
    assert 'href="/works/parent-1"' in html
    assert 'href="/works/child-1"' in html
    assert "w1-x1" in html
    assert "badge-parked" in html
    assert "trace-w1-1" in html
    assert "approval.requested" in html
    assert 'href="/events/e1"' in html
    assert "w1-wait" in html
    assert "waiting for approval" in html
    assert "w1-timeout" in html
    assert 'class="countdown' in html


def test_payloads_are_pretty_json_escaped_in_a_collapsible_block(as_alice, waiting_work):
    html = as_alice.get("/works/w1").content.decode()

    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert re.search(r'<details id="payload-\d+" class="payload">', html)
    assert "{\n  &quot;note&quot;: " in html


def test_a_live_lease_renders_as_a_countdown_with_its_absolute_expiry(as_alice):
    f.running("w1", lease=90)

    html = as_alice.get("/works/w1").content.decode()

    match = re.search(
        r'<time class="countdown" datetime="([^"]+)"[^>]*data-remaining="([\d.]+)"', html
    )
    assert match is not None
    assert 85 < float(match.group(2)) <= 90
    assert '· <span class="left">in 1m' in html


def test_an_expired_lease_is_highlighted(as_alice):
    f.running("w1", lease=0.001)

    html = as_alice.get("/works/w1").content.decode()

    assert 'class="lease-expired"' in html
    assert "countdown expired" in html


def test_it_answers_404_for_an_unknown_work(as_alice):
    response = as_alice.get("/works/nope")

    assert response.status_code == 404
    assert b"Work &#x27;nope&#x27; does not exist" in response.content


def test_work_ids_with_slashes_have_pages(as_alice):
    f.work("acme/api/42")

    response = as_alice.get("/works/acme/api/42")

    assert response.status_code == 200
    assert b"acme/api/42" in response.content


def test_an_operator_sees_the_actions_that_apply(as_alice):
    f.exhausted("w1")

    html = as_alice.get("/works/w1").content.decode()

    assert 'href="/actions/retry/w1"' in html
    assert 'href="/actions/cancel/w1"' in html


def test_an_action_that_does_not_apply_is_disabled_with_the_reason(as_alice):
    f.completed("done")
    f.running("busy")

    done = as_alice.get("/works/done").content.decode()
    busy = as_alice.get("/works/busy").content.decode()

    assert 'href="/actions/' not in done
    assert "Work is already completed" in done
    assert "a terminal Work needs a successor, not a retry" in done
    assert "Work has a live attempt" in busy
    assert 'href="/actions/cancel/busy"' in busy
    assert 'href="/actions/retry/busy"' not in busy


def test_a_viewer_sees_no_action_buttons(as_bob):
    f.exhausted("w1")

    html = as_bob.get("/works/w1").content.decode()

    assert "/actions/" not in html
    assert "Retry…" not in html


def test_an_empty_work_says_what_would_appear(as_alice):
    f.work("w1")

    html = as_alice.get("/works/w1").content.decode()

    assert "No attempts yet" in html
    assert "No Events name this Work" in html
    assert "No Waits" in html
    assert "No Timers" in html


def test_the_detail_reads_everything_in_one_view_with_a_pinned_query_count(
    as_alice, waiting_work, django_assert_num_queries, django_assert_max_num_queries
):
    # BEGIN, snapshot (with the store version and latest sequence), Work, children,
    # attempts, timeline, Waits, Timers, the active Wait's near misses
    # (console/works/waiting.py), COMMIT.
    with (
        django_assert_num_queries(10, connection=connections["view"]),
        django_assert_max_num_queries(3, connection=connections["default"]),
    ):
        response = as_alice.get("/works/w1")

    assert response.status_code == 200


def test_a_poll_gets_the_work_fragment_when_something_changed(as_alice, waiting_work):
    response = as_alice.get("/works/w1?stamp=0.0", HTTP_HX_REQUEST="true")

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="work"')
    assert "<html" not in html


def _timeout_cells(html: str) -> list[str]:
    waits = html.split("<h2>Waits</h2>")[1].split("</table>")[0]
    return re.findall(r'<td class="small timeout">(.*?)</td>', waits, re.S)


def test_a_waits_timeout_is_the_time_its_timer_fires(as_alice, waiting_work):
    """Issue 34: the column showed the Timer's ID, not when the Wait times out."""
    cells = _timeout_cells(as_alice.get("/works/w1").content.decode())

    assert len(cells) == 1
    assert '<time class="countdown" datetime="' in cells[0]
    assert "in 59m" in cells[0] or "in 1h" in cells[0]
    assert 'href="#timer-w1-timeout"' in cells[0]
    assert ">w1-timeout<" not in cells[0]


def test_a_timed_out_waits_timeout_says_its_timer_is_gone(as_alice):
    f.timed_out("t1")
    cells = _timeout_cells(as_alice.get("/works/t1").content.decode())
    assert cells == ['<span class="muted" title="Timer t1-timeout">fired or removed</span>']

"""Live executions, active Waits, Timers and the Scope tree."""

import re

from django.db import connections

from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB


def test_live_executions_list_expired_leases_first_and_highlighted(as_alice):
    f.running("fresh", lease=600)
    f.running("stale", lease=0.001)
    f.work("queued")
    f.pending("queued")
    f.completed("done")

    html = as_alice.get("/executions").content.decode()

    rows = re.findall(r'href="/works/([^"#]+)#attempt', html)
    assert rows == ["stale", "fresh", "queued"]
    assert html.count('class="lease-expired"') == 1
    assert "<strong>3</strong> live attempts" in html


def test_live_executions_empty_state(as_alice):
    assert b"No live executions." in as_alice.get("/executions").content


def test_active_waits_show_age_and_timeout(as_alice):
    f.parked("w1", timeout_in=120)
    f.completed("w2")

    html = as_alice.get("/waits").content.decode()

    assert "w1-wait" in html
    assert "approval.granted" in html
    assert 'class="countdown"' in html
    assert "in 1m" in html
    assert "waiting for approval" in html


def test_active_waits_empty_state(as_alice):
    assert b"No active waits." in as_alice.get("/waits").content


def test_timers_show_due_and_overdue_first(as_alice):
    f.work("w1")
    f.timer("later", work_id="w1", fire_in=300)
    f.timer("overdue", work_id="w1", fire_in=-30)

    all_html = as_alice.get("/timers").content.decode()
    due_html = as_alice.get("/timers?due=1").content.decode()

    assert all_html.index("overdue") < all_html.index("later")
    assert '<tr id="timer-overdue" class="overdue">' in all_html  # an anchor search lands on
    assert "overdue" in due_html
    assert ">later<" not in due_html


def test_timers_empty_states(as_alice):
    assert b"No timers." in as_alice.get("/timers").content
    assert b"No timer is due." in as_alice.get("/timers?due=1").content


def test_scopes_form_a_tree_with_work_counts_by_state(as_alice):
    f.scope("acme", name="Acme")
    f.scope("acme-eu", parent="acme")
    f.scope("globex")
    f.work("a1", scope_id="acme")
    f.running("e1", scope_id="acme-eu")
    f.completed("e2", scope_id="acme-eu")
    f.work("loose")

    html = as_alice.get("/scopes").content.decode()

    order = re.findall(r'<a class="mono" href="/\?scope=([^"]+)">', html)
    assert order == ["acme", "acme-eu", "globex"]
    assert 'class="depth-1"' in html
    assert 'href="/?scope=acme-eu&amp;state=running">1</a>' in html
    assert "(no scope)" in html
    # acme: 1 of its own, 3 with its child.
    acme_row = html[html.index('href="/?scope=acme"') : html.index('href="/?scope=acme-eu"')]
    assert "<strong>1</strong>" in acme_row
    assert '<td class="num">3</td>' in acme_row


def test_scopes_cost_the_same_whatever_their_number(as_alice, django_assert_num_queries):
    for i in range(5):
        f.scope(f"s{i}")
        f.work(f"w{i}", scope_id=f"s{i}")

    # BEGIN, snapshot (with the store version and latest sequence), scopes (1), six
    # state facets of one query, COMMIT.
    with django_assert_num_queries(10, connection=connections["view"]):
        assert as_alice.get("/scopes").status_code == 200


def test_scopes_empty_state(as_alice):
    assert b"No Scopes and no Work yet." in as_alice.get("/scopes").content

"""The failure where the retry decision is made: each Work row, the Work page's header,
the confirmations and the dashboard's lists show the latest attempt (number, state in
honest words, outcome text) and what comes next, read for a whole page at once."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from django.db import connections

from storage import (
    Event,
    ExecutionState,
    Outcome,
    OutcomeKind,
    Wait,
    WaitState,
    WorkState,
)

from . import factories as f

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

LONG = "upstream returned 502 Bad Gateway after 3 tries; body: " + "x" * 200


def ended_waiting(work_id: str, *, wake: bool = False) -> None:
    """An attempt that ended waiting (terminal ``waiting``) on a Wait with a timeout;
    then the Wait times out (cancelled, timer gone, Work ready with nothing scheduled)
    or, with ``wake``, is woken by an Event."""
    x = f.running(work_id)
    f.timer(f"{work_id}-timeout", work_id=work_id, fire_in=600, purpose="timeout")

    def park(tx):
        waiting = Outcome(OutcomeKind.WAITING, "waiting for approval.granted")
        tx.put_execution(replace(tx.execution(x.id), state=ExecutionState.WAITING, outcome=waiting))
        tx.put_work(replace(tx.work(work_id), state=WorkState.WAITING))
        tx.put_wait(
            Wait(
                id=f"{work_id}-wait",
                work_id=work_id,
                execution_id=x.id,
                types=("approval.granted",),
                timeout_timer_id=f"{work_id}-timeout",
            )
        )

    f.transact(park)

    def end(tx):
        wait = tx.wait(f"{work_id}-wait")
        if wake:
            event = Event(f"{work_id}-ok", "github", f"d-{work_id}", "approval.granted")
            stored, _ = tx.accept_event(event)
            tx.put_wait(replace(wait, state=WaitState.WOKEN, woken_by=stored.event.id))
        else:
            tx.put_wait(replace(wait, state=WaitState.CANCELLED))
        tx.delete_timer(f"{work_id}-timeout", tx.timer(f"{work_id}-timeout").revision)
        tx.put_work(replace(tx.work(work_id), state=WorkState.READY))

    f.transact(end)


def failed_twice(work_id: str, message: str = "boom", *, retry_in: float | None = None) -> None:
    """Two failed attempts; with ``retry_in`` a retry Timer (backoff), else exhausted."""
    f.work(work_id)
    for _ in range(2):
        x = f.start(work_id)
        f.finish(x.id, state=ExecutionState.FAILED, work_state=WorkState.READY, message=message)
    if retry_in is not None:
        f.timer(f"{work_id}-retry", work_id=work_id, fire_in=retry_in, purpose="retry")


def row(html: str, work_id: str) -> str:
    match = re.search(rf'<tr>\s*<td class="select">.*?value="{work_id}".*?</tr>', html, re.S)
    assert match, f"no row for {work_id}"
    return match.group(0)


def test_a_row_shows_the_attempt_number_its_failure_and_that_it_is_exhausted(as_alice):
    failed_twice("w-ex", "connection reset by peer")

    html = row(as_alice.get("/").content.decode(), "w-ex")

    assert "attempt 2" in html
    assert "connection reset by peer" in html
    assert "badge-exhausted" in html
    assert "exhausted: retries used up, needs an operator" in html
    assert ">ready<" not in html


def test_a_row_in_backoff_says_when_its_retry_timer_fires(as_alice):
    failed_twice("w-backoff", retry_in=90)

    html = row(as_alice.get("/").content.decode(), "w-backoff")

    assert "attempt 2" in html
    assert re.search(
        r"retry at <time class=\"countdown\"[^>]*>.*?in 1m \d+s.*?</time> \(timer\)", html
    )
    assert "exhausted" not in html
    assert ">ready<" in html


def test_a_long_failure_is_cut_with_the_whole_text_on_hover_and_expand(as_alice):
    failed_twice("w-long", LONG)

    html = row(as_alice.get("/").content.decode(), "w-long")

    assert f'title="{LONG}"' in html
    assert '<details class="outcome-text">' in html
    assert f'<p class="whole">{LONG}</p>' in html
    assert "…</summary>" in html


def test_a_timed_out_wait_never_reads_as_waiting(as_alice):
    ended_waiting("w-timeout")

    listing = row(as_alice.get("/").content.decode(), "w-timeout")
    page = as_alice.get("/works/w-timeout").content.decode()

    assert "timed out waiting for approval.granted" in listing
    assert "badge-exhausted" in listing
    assert "waiting for approval.granted" not in listing.replace("timed out waiting for", "")
    attempts = page.split("<h2>Attempts</h2>")[1].split("<h2>Timeline")[0]
    assert "timed out waiting for approval.granted" in attempts
    assert "waiting for approval.granted" not in attempts.replace("timed out waiting for", "")
    waits = page.split("<h2>Waits</h2>")[1].split("<h2>Timers</h2>")[0]
    assert "timed out waiting for approval.granted" in waits


def test_a_woken_wait_says_by_which_event(as_alice):
    ended_waiting("w-woken", wake=True)

    page = as_alice.get("/works/w-woken").content.decode()

    attempts = page.split("<h2>Attempts</h2>")[1].split("<h2>Timeline")[0]
    assert "woken by w-woken-ok" in attempts
    assert "waiting for" not in attempts


def test_a_live_parked_attempt_still_says_what_it_waits_for(as_alice):
    f.parked("w-parked")

    html = row(as_alice.get("/").content.decode(), "w-parked")

    assert "waiting for approval.granted" in html
    assert "timed out" not in html


def test_the_work_page_header_shows_the_last_attempt_and_next_retry(as_alice):
    failed_twice("w-head", "deadline exceeded after 30s", retry_in=60)

    page = as_alice.get("/works/w-head").content.decode()

    head = page.split('aria-label="Last attempt"')[1].split("</section>")[0]
    assert "attempt 2" in head
    assert "deadline exceeded after 30s" in head
    assert "retry at" in head


def test_the_retry_confirmation_shows_the_failure_it_decides_on(as_alice):
    failed_twice("w-confirm", "rate limited (429), giving up")

    page = as_alice.get("/actions/retry/w-confirm").content.decode()

    assert "attempt 2" in page
    assert "rate limited (429), giving up" in page
    assert "exhausted: retries used up" in page
    assert "Attempt 3 is created" in page


def test_the_bulk_confirmations_list_each_eligible_works_failure(as_alice):
    failed_twice("w-b1", "first failure")
    failed_twice("w-b2", "second failure", retry_in=30)

    everything = as_alice.get("/actions/bulk?do=retry-all").content.decode()
    selected = as_alice.post(
        "/actions/bulk/review", {"do": "retry-selected", "work": ["w-b1"]}
    ).content.decode()

    eligible, excluded = everything.split('id="eligible"')[1].split('id="excluded"')
    assert "first failure" in eligible
    # w-b2 is in backoff: a bulk retry never sweeps it in (console/operate/reads.py),
    # and says when its own retry runs.
    assert "w-b2" not in eligible
    assert re.search(
        r"w-b2.*in backoff: its retry Timer runs it at \d\d:\d\d:\d\d UTC", excluded, re.S
    )
    assert "first failure" in selected.split('id="eligible"')[1]


def test_the_dashboard_lists_show_the_last_failure(as_alice):
    failed_twice("w-dash", "exit status 1: assertion failed in step")

    page = as_alice.get("/dashboard").content.decode()

    exhausted = page.split('id="exhausted"')[1].split("</section>")[0]
    assert "attempt 2" in exhausted
    assert "exit status 1: assertion failed in step" in exhausted
    waiting = page.split('id="waiting"')[1].split("</section>")[0]
    assert "badge-exhausted" in waiting


def test_the_attempts_history_does_not_call_a_finished_wait_waiting(as_alice):
    ended_waiting("w-hist")

    page = as_alice.get("/executions?since=1h").content.decode()

    assert "ended (timed out or cancelled)" in page


def test_the_rows_last_tries_cost_three_queries_whatever_the_page_size(
    as_alice, django_assert_num_queries
):
    for i in range(55):
        failed_twice(f"w{i:02d}", retry_in=30 if i % 2 else None)
    f.parked("w-parked")  # Waits too: still one query for them all

    # BEGIN, snapshot (with the store version and latest sequence), page (1), facets
    # (1), last tries (3), COMMIT.
    for size in (25, 50):
        with django_assert_num_queries(8, connection=connections["view"]):
            response = as_alice.get(f"/?size={size}")
        assert response.content.decode().count("attempt ") >= size

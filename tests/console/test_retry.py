"""Operator retry: attempt N+1 pending, Work ready; refused when it does not apply."""

import pytest

import storage
from console.actions.common import new_token
from console.actions.work import do_retry_work
from storage import ExecutionState, WorkState
from storage.default import default_store
from storage.ops.manual import MANUAL_SOURCE, retry_attempt_id
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB


def read(fn):
    return storage.view(default_store(), None, fn)


def test_the_confirmation_names_the_next_attempt(as_alice):
    f.exhausted("w1")

    html = as_alice.get("/actions/retry/w1").content.decode()

    assert "Attempt 2 is created <strong>pending</strong>" in html


def test_it_creates_the_next_attempt_pending_and_makes_the_work_ready(as_alice):
    f.exhausted("w1")
    f.timer("w1-backoff", work_id="w1", purpose="retry")

    response = as_alice.post(
        "/actions/retry/w1", {"reason": "fixed upstream", "token": new_token()}, follow=True
    )

    assert b"Retried Work w1: attempt 2 is pending." in response.content
    work, attempts, timers = read(lambda tx: (tx.work("w1"), tx.executions("w1"), tx.timers("w1")))
    assert work.state is WorkState.READY
    latest = max(attempts, key=lambda x: x.attempt)
    assert (latest.attempt, latest.state, latest.executor) == (2, ExecutionState.PENDING, "python")
    [stored] = [e for e in read(lambda tx: tx.work_events("w1")) if e.event.source == MANUAL_SOURCE]
    assert latest.id == retry_attempt_id(stored.id)  # replays would name the same attempt
    assert timers == []  # the leftover backoff would retry twice


def test_it_refuses_retry_of_a_work_with_a_live_attempt(as_alice):
    f.running("w1")

    response = as_alice.post(
        "/actions/retry/w1", {"reason": "x", "token": new_token()}, follow=True
    )

    assert b"Retry of Work w1 refused: Work has a live attempt." in response.content
    assert len(read(lambda tx: tx.executions("w1"))) == 1


def test_it_refuses_retry_of_a_terminal_failed_work(as_alice):
    f.failed("w1")

    response = as_alice.post(
        "/actions/retry/w1", {"reason": "x", "token": new_token()}, follow=True
    )

    assert b"a terminal Work needs a successor, not a retry" in response.content
    assert read(lambda tx: tx.work("w1")).state is WorkState.FAILED


def test_a_double_submit_creates_one_attempt(as_alice):
    f.exhausted("w1")
    form = {"reason": "again", "token": new_token()}

    as_alice.post("/actions/retry/w1", form)
    as_alice.post("/actions/retry/w1", form)

    assert sorted(x.attempt for x in read(lambda tx: tx.executions("w1"))) == [1, 2]


def test_a_token_reused_for_another_action_is_refused(alice):
    f.exhausted("w1")
    f.exhausted("w2")
    token = new_token()
    do_retry_work(default_store(), username="alice", work_id="w1", reason="x", token=token)

    with pytest.raises(storage.Invalid, match="already used for another action"):
        do_retry_work(default_store(), username="alice", work_id="w2", reason="x", token=token)

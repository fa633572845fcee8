"""Cancel: confirmation, the core.manual Event, the single-transaction effect."""

import json

import pytest

import storage
from console.actions.common import new_token
from console.actions.work import do_cancel_work
from storage import ExecutionState, Fenced, Guard, LeaseRef, NotFound, WaitState, WorkState
from storage.default import default_store
from storage.ops.manual import MANUAL_SOURCE
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB


def read(fn):
    return storage.view(default_store(), None, fn)


def manual_events(work_id: str):
    return [e for e in read(lambda tx: tx.work_events(work_id)) if e.event.source == MANUAL_SOURCE]


@pytest.fixture
def parked_work():
    f.scope("acme")
    return f.parked("w1", scope_id="acme")


def test_the_confirmation_shows_what_cancel_will_do(as_alice, parked_work):
    response = as_alice.get("/actions/cancel/w1")

    html = response.content.decode()
    assert response.status_code == 200
    assert "Attempt 1" in html
    assert "is cancelled" in html
    assert "1 active Wait cancelled" in html
    assert "1 Timer removed" in html
    assert 'name="reason"' in html
    assert 'name="token"' in html
    assert 'name="csrfmiddlewaretoken"' in html


def test_it_cancels_in_one_transaction_and_records_who_and_why(as_alice, parked_work):
    response = as_alice.post(
        "/actions/cancel/w1",
        {"reason": "customer asked", "token": new_token(), "actor": "operator:mallory"},
        follow=True,
    )

    assert response.redirect_chain == [("/works/w1", 302)]
    assert b"Cancelled Work w1." in response.content
    work, attempts, waits, timers = read(
        lambda tx: (tx.work("w1"), tx.executions("w1"), tx.waits("w1"), tx.timers("w1"))
    )
    assert work.state is WorkState.CANCELLED
    assert [x.state for x in attempts] == [ExecutionState.CANCELLED]
    assert [w.state for w in waits] == [WaitState.CANCELLED]
    assert timers == []
    [stored] = manual_events("w1")
    assert stored.event.type == "core.manual.cancel"
    assert stored.event.actor == "operator:alice"  # from the session, never the form
    assert stored.scope_id == "acme"
    assert stored.route.disposition == "routed"
    assert stored.route.work_id == "w1"
    assert stored.event.payload.schema == "core.manual.v1"
    assert json.loads(stored.event.payload.data) == {"action": "cancel", "reason": "customer asked"}


def test_a_stale_completion_is_fenced_after_cancel(as_alice):
    x = f.running("w1")
    as_alice.post("/actions/cancel/w1", {"reason": "stop", "token": new_token()})

    lease = LeaseRef(x.id, x.owner, x.epoch)
    with pytest.raises(Fenced):
        default_store().transact(Guard(lease=lease), lambda tx: tx.execution(x.id))


def test_a_double_submit_of_one_form_has_one_effect(as_alice, parked_work):
    form = {"reason": "double click", "token": new_token()}

    as_alice.post("/actions/cancel/w1", form)
    second = as_alice.post("/actions/cancel/w1", form, follow=True)

    assert len(manual_events("w1")) == 1
    assert b"This form was already submitted" in second.content
    assert read(lambda tx: tx.work("w1")).state is WorkState.CANCELLED


def test_it_refuses_cancel_of_a_terminal_work_with_the_reason(as_alice):
    f.completed("w1")

    response = as_alice.post(
        "/actions/cancel/w1", {"reason": "oops", "token": new_token()}, follow=True
    )

    assert response.status_code == 200
    assert b"Cancel of Work w1 refused: Work is already completed." in response.content
    assert read(lambda tx: tx.work("w1")).state is WorkState.COMPLETED
    [stored] = manual_events("w1")
    assert stored.route.disposition == "refused"


def test_the_confirmation_of_a_terminal_work_shows_why_and_no_form(as_alice):
    f.completed("w1")

    html = as_alice.get("/actions/cancel/w1").content.decode()

    assert "Cancel does not apply:</strong> Work is already completed" in html
    assert 'name="reason"' not in html


def test_a_missing_reason_is_a_400_that_records_nothing(as_alice, parked_work):
    response = as_alice.post("/actions/cancel/w1", {"reason": "  ", "token": new_token()})

    assert response.status_code == 400
    assert b"Give a reason" in response.content
    assert manual_events("w1") == []


def test_cancel_of_an_unknown_work_is_a_404(as_alice):
    response = as_alice.post("/actions/cancel/ghost", {"reason": "x", "token": new_token()})

    assert response.status_code == 404


def test_do_cancel_work_is_the_same_function_for_every_caller(alice):
    f.work("w1")

    result = do_cancel_work(
        default_store(), username="alice", work_id="w1", reason="cli", token=new_token()
    )

    assert result.done
    assert result.applied_now
    with pytest.raises(NotFound):
        do_cancel_work(
            default_store(), username="alice", work_id="nope", reason="x", token=new_token()
        )


@pytest.mark.parametrize(
    ("reason", "match"),
    [("nul \x00 here", "NUL"), ("lone \ud800 surrogate", "unpaired surrogate")],
)
def test_a_reason_no_backend_can_store_is_refused_before_anything_is_written(
    parked_work, reason, match
):
    with pytest.raises(storage.Invalid, match=match):
        do_cancel_work(
            default_store(), username="alice", work_id="w1", reason=reason, token=new_token()
        )

    assert manual_events("w1") == []
    assert read(lambda tx: tx.work("w1").state) is WorkState.WAITING

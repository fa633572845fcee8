"""Bulk cancel and retry: confirmation of what is eligible and why not, batches,
a summary, one Event per Work."""

import re

import pytest

import storage
from console import actions
from console.actions import do_bulk, new_token
from console.operate import reads
from storage import WorkState
from storage.default import default_store
from storage.ops.manual import MANUAL_SOURCE, Action
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB


def read(fn):
    return storage.view(default_store(), None, fn)


def manual_events():
    return [e for e in read(lambda tx: tx.events()) if e.event.source == MANUAL_SOURCE]


@pytest.fixture
def mixed():
    f.exhausted("r1")
    f.exhausted("r2")
    f.running("busy")
    f.completed("done")


def test_the_confirmation_of_selected_rows_splits_eligible_from_excluded(as_alice, mixed):
    response = as_alice.get(
        "/actions/bulk", {"do": "retry-selected", "work": ["r1", "busy", "done", "ghost"]}
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert "<strong>1</strong> eligible" in html
    assert "<strong>3</strong> excluded" in html
    assert "Work has a live attempt" in html
    assert "a terminal Work needs a successor" in html
    assert "no such Work" in html
    assert re.findall(r'<input type="hidden" name="work" value="([^"]+)">', html) == ["r1"]
    assert 'name="reason"' in html
    assert 'name="token"' in html


def test_the_confirmation_of_everything_matching_uses_the_filter(as_alice, mixed):
    html = as_alice.get("/actions/bulk", {"do": "cancel-all", "state": "ready"}).content.decode()

    assert re.findall(r'name="work" value="([^"]+)"', html) == ["r2", "r1"]
    assert 'href="/?state=ready"' in html  # back to the same filtered list


def test_everything_matching_is_capped(as_alice, monkeypatch):
    monkeypatch.setattr(reads, "BULK_CAP", 3)
    f.works_at_once(*[f"w{i}" for i in range(5)])

    html = as_alice.get("/actions/bulk", {"do": "cancel-all"}).content.decode()

    assert "more than 3 Works" in html
    assert len(re.findall(r'name="work" value=', html)) == 3


def test_bulk_retry_acts_on_each_work_and_summarises(as_alice, mixed, monkeypatch):
    monkeypatch.setattr(actions, "BULK_BATCH", 1)  # several batches
    f.exhausted("r3")
    f.completed("r4")  # became terminal after the confirmation

    response = as_alice.post(
        "/actions/bulk",
        {
            "do": "retry-all",
            "work": ["r1", "r2", "r3", "r4"],
            "reason": "outage over",
            "token": new_token(),
        },
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert "Retry: 3 done, 1 skipped" in html
    assert "a terminal Work needs a successor" in html
    attempts = read(lambda tx: {w: len(tx.executions(w)) for w in ("r1", "r2", "r3", "r4")})
    assert attempts == {"r1": 2, "r2": 2, "r3": 2, "r4": 1}
    events = manual_events()
    assert len(events) == 4  # one per Work, each with its own delivery ID
    assert all(e.event.actor == "operator:alice" for e in events)
    assert len({e.event.delivery_id for e in events}) == 4


def test_a_double_submitted_bulk_form_has_one_effect(as_alice, mixed):
    form = {"do": "cancel-selected", "work": ["r1", "r2"], "reason": "x", "token": new_token()}

    as_alice.post("/actions/bulk", form)
    second = as_alice.post("/actions/bulk", form)

    assert len(manual_events()) == 2
    assert b"already done by this form" in second.content
    assert read(lambda tx: tx.work("r1")).state is WorkState.CANCELLED


def test_a_bulk_post_without_a_reason_is_a_400(as_alice, mixed):
    response = as_alice.post(
        "/actions/bulk", {"do": "cancel-selected", "work": ["r1"], "token": new_token()}
    )

    assert response.status_code == 400
    assert b"Give a reason" in response.content
    assert manual_events() == []


@pytest.mark.parametrize(
    "params",
    [
        {"do": "retry-selected"},
        {"do": "explode-all"},
        {"do": ""},
        {"do": "retry-all", "since": "x"},
    ],
)
def test_bad_bulk_requests_are_400s(as_alice, params):
    assert as_alice.get("/actions/bulk", params).status_code == 400


def test_do_bulk_refuses_more_than_the_cap(alice):
    with pytest.raises(storage.Invalid, match="at most"):
        do_bulk(
            default_store(),
            username="alice",
            action=Action.CANCEL,
            work_ids=[f"w{i}" for i in range(actions.BULK_CAP + 1)],
            reason="x",
            token=new_token(),
        )


def test_do_bulk_skips_missing_works_with_the_reason(alice):
    f.work("w1")

    summary = do_bulk(
        default_store(),
        username="alice",
        action="cancel",
        work_ids=["w1", "ghost"],
        reason="x",
        token=new_token(),
    )

    assert [r.work_id for r in summary.done] == ["w1"]
    assert [(s.work_id, s.reason) for s in summary.skipped] == [("ghost", "no such Work")]


def test_it_answers_405_to_a_bulk_request_that_is_neither_get_nor_post(as_alice):
    response = as_alice.put("/actions/bulk?do=cancel-all")

    assert response.status_code == 405
    assert response["Allow"] == "GET, POST"

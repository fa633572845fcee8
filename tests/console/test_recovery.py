"""A crash between recording a manual Event (tx 1) and applying it (tx 2): the Event
stays unrouted and is applied exactly once later."""

from io import StringIO

from django.core.management import call_command

import storage
from console.actions.common import new_token
from storage import Guard, WorkState
from storage.default import default_store
from storage.ops.manual import Action, apply_manual_events, do_apply_manual_event, record
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB


def read(fn):
    return storage.view(default_store(), None, fn)


def record_only(action: Action, work_id: str, token: str | None = None):
    """tx 1 alone, as if the process died right after it committed."""
    stored, added = default_store().transact(
        Guard(),
        lambda tx: record(tx, action, "alice", work_id, "crash test", token or new_token()),
    )
    assert added
    return stored


def test_an_unrouted_retry_is_applied_once_by_the_command():
    f.exhausted("w1")
    stored = record_only(Action.RETRY, "w1")
    assert read(lambda tx: tx.event(stored.id)).route is None

    out = StringIO()
    call_command("apply_manual_events", stdout=out)
    call_command("apply_manual_events", stdout=StringIO())

    assert "1 manual Event(s) applied." in out.getvalue()
    assert sorted(x.attempt for x in read(lambda tx: tx.executions("w1"))) == [1, 2]
    assert read(lambda tx: tx.event(stored.id)).route.disposition == "routed"


def test_applying_the_same_event_twice_applies_it_once():
    f.work("w1")
    stored = record_only(Action.CANCEL, "w1")

    first = do_apply_manual_event(default_store(), stored.id)
    second = do_apply_manual_event(default_store(), stored.id)

    assert first.applied_now
    assert first.done
    assert not second.applied_now
    assert second.done


def test_the_next_action_request_applies_what_a_crash_left(as_alice):
    f.work("w1")
    f.work("w2")
    record_only(Action.CANCEL, "w1")

    as_alice.post("/actions/cancel/w2", {"reason": "x", "token": new_token()})

    states = read(lambda tx: (tx.work("w1").state, tx.work("w2").state))
    assert states == (WorkState.CANCELLED, WorkState.CANCELLED)


def test_a_replayed_form_after_a_crash_applies_the_recorded_event(alice):
    f.exhausted("w1")
    token = new_token()
    record_only(Action.RETRY, "w1", token)

    from console.actions.work import do_retry_work

    result = do_retry_work(default_store(), username="alice", work_id="w1", reason="x", token=token)

    assert result.duplicate
    assert result.done
    assert len(read(lambda tx: tx.executions("w1"))) == 2


def test_recovery_leaves_other_unrouted_events_alone():
    f.work("w1")
    f.event("other", work_id="w1", source="github")
    f.event("manual-wake", work_id="w1", source="core.manual", type="core.manual.wake")

    assert apply_manual_events(default_store()) == []
    assert read(lambda tx: [e.id for e in tx.unrouted_events()]) == ["other", "manual-wake"]


def test_a_manual_event_for_a_terminal_work_is_refused_on_replay():
    f.completed("w1")
    stored = record_only(Action.CANCEL, "w1")

    [result] = apply_manual_events(default_store())

    assert result.event_id == stored.id
    assert result.reason == "Work is already completed"
    assert read(lambda tx: tx.event(stored.id)).route.disposition == "refused"

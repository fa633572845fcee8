"""Each routed action is ONE routed transaction with its audit note inside it (issue 33):
the note is written while the store's transaction is open, a note that fails takes
the action back with it, and ``do_repoint_alias`` (which read the alias, read the
target and swapped in three transactions) is one. Both engines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import DatabaseError

from console.actions import routed as a
from console.actions.common import new_token
from console.actions.routed_bulk import do_bulk_control
from console.models import RoutedActionNote
from storage import Unavailable
from storage.routed.enums import WorkflowStatus
from storage.routed.store import RoutedStore
from tests.console import routedcontrol as rc
from tests.console.conftest import DB

pytestmark = DB

Act = Callable[[RoutedStore], a.RoutedResult]
# What each action changes, read back: (before, after) must differ when it commits.
Probe = Callable[[], object]


def pause() -> tuple[Act, Probe]:
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    generation = rc.routed().view(lambda r: r.get_workflow(wf)).generation

    def act(routed: RoutedStore) -> a.RoutedResult:
        return a.do_pause_workflow(
            routed,
            username="alice",
            workflow_id=wf,
            generation=generation,
            reason="model is down",
            token=new_token(),
        )

    def probe() -> object:
        return (
            rc.routed().view(lambda r: r.get_workflow(wf)).record.status,
            rc.routed().view(lambda r: r.list_control_requests(wf)),
        )

    return act, probe


def amend() -> tuple[Act, Probe]:
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    authority = rc.routed().view(lambda r: r.get_workflow(wf)).record.authority_generation

    def act(routed: RoutedStore) -> a.RoutedResult:
        return a.do_amend_limits(
            routed,
            username="alice",
            workflow_id=wf,
            authority_generation=authority,
            reason="needs longer",
            token=new_token(),
            max_active_duration_ms=7_200_000,
        )

    def probe() -> object:
        return rc.routed().view(lambda r: r.get_workflow(wf)).record.max_active_duration_ms

    return act, probe


def deactivate() -> tuple[Act, Probe]:
    dep_id = rc.admitted().receipt.resolved_deployment_id
    generation = rc.routed().view(lambda r: r.get_deployment(dep_id)).generation

    def act(routed: RoutedStore) -> a.RoutedResult:
        return a.do_deactivate_deployment(
            routed,
            username="alice",
            deployment_id=dep_id,
            generation=generation,
            reason="bad build",
            token=new_token(),
        )

    def probe() -> object:
        return rc.routed().view(lambda r: r.get_deployment(dep_id)).record.status

    return act, probe


def repoint() -> tuple[Act, Probe]:
    old, new = rc.admitted("k1", "1.0.0"), rc.admitted("k2", "2.0.0")
    rc.alias_to("prod", old)
    generation = rc.routed().view(lambda r: r.resolve_alias("prod")).generation

    def act(routed: RoutedStore) -> a.RoutedResult:
        return a.do_repoint_alias(
            routed,
            username="alice",
            alias="prod",
            generation=generation,
            deployment_id=new.receipt.resolved_deployment_id,
            reason="roll forward",
            token=new_token(),
        )

    def probe() -> object:
        return rc.routed().view(lambda r: r.resolve_alias("prod")).record.target_deployment_id

    return act, probe


ACTIONS = {"pause": pause, "amend-limits": amend, "deactivate": deactivate, "repoint": repoint}


@pytest.mark.parametrize("name", ACTIONS)
def test_the_note_is_written_inside_the_actions_transaction(name, monkeypatch):
    act, _ = ACTIONS[name]()
    routed = rc.routed()
    store = routed.store
    inside: list[bool] = []  # the store's transact is running (a frame on the stack)
    noted_inside: list[bool] = []
    transact, save = store.transact, RoutedActionNote.save  # type: ignore[attr-defined]

    def tracked(*args: Any, **kwargs: Any) -> Any:
        inside.append(True)
        try:
            return transact(*args, **kwargs)
        finally:
            inside.pop()

    def spy(note: RoutedActionNote, *args: Any, **kwargs: Any) -> None:
        noted_inside.append(bool(inside))
        save(note, *args, **kwargs)

    monkeypatch.setattr(store, "transact", tracked)
    monkeypatch.setattr(RoutedActionNote, "save", spy)

    result = act(routed)

    assert result.done
    assert noted_inside == [True]
    assert len(a.notes_for(result.target)) == 1


@pytest.mark.parametrize("name", ACTIONS)
def test_a_note_that_fails_takes_the_action_back(name, monkeypatch):
    act, probe = ACTIONS[name]()
    before = probe()

    def refuse(note: RoutedActionNote, *args: Any, **kwargs: Any) -> None:
        raise DatabaseError("the note table refused the row")

    monkeypatch.setattr(RoutedActionNote, "save", refuse)

    # Inside the store's transaction the driver error meets the store's error edge.
    with pytest.raises(Unavailable, match="the note table refused the row"):
        act(rc.routed())

    assert probe() == before
    assert not RoutedActionNote.objects.exists()


@pytest.mark.parametrize("name", ACTIONS)
def test_each_action_is_one_transaction_and_no_other_read(name, monkeypatch):
    act, probe = ACTIONS[name]()
    before = probe()
    routed = rc.routed()
    store = routed.store
    calls: list[str] = []
    transact, view = store.transact, store.view  # type: ignore[attr-defined]

    def counted_transact(*args: Any, **kwargs: Any) -> Any:
        calls.append("transact")
        return transact(*args, **kwargs)

    def counted_view(*args: Any, **kwargs: Any) -> Any:
        calls.append("view")
        return view(*args, **kwargs)

    monkeypatch.setattr(store, "transact", counted_transact)
    monkeypatch.setattr(store, "view", counted_view)

    result = act(routed)

    assert result.done
    assert calls == ["transact"]
    assert probe() != before


def test_a_stale_repoint_writes_neither_the_alias_nor_a_note():
    act, probe = repoint()
    rc.routed().transact(
        lambda r: r.compare_and_swap_alias(  # another operator moved it meanwhile
            r.resolve_alias("prod").record
        )
    )
    before = probe()

    with pytest.raises(a.StaleForm):
        act(rc.routed())

    assert probe() == before
    assert not RoutedActionNote.objects.exists()


def test_a_bulk_notes_each_workflow_inside_its_batch(monkeypatch):
    running = [rc.running(f"k{i}")[0].receipt.workflow_id for i in range(2)]

    def refuse(note: RoutedActionNote, *args: Any, **kwargs: Any) -> None:
        raise DatabaseError("the note table refused the row")

    monkeypatch.setattr(RoutedActionNote, "save", refuse)

    summary = do_bulk_control(
        rc.routed(),
        username="carol",
        action=a.RoutedAction.PAUSE,
        workflow_ids=running,
        reason="model provider down",
        token=new_token(),
    )

    assert summary.done == ()
    assert [wf for wf, _ in summary.skipped] == running
    for wf in running:
        assert rc.routed().view(lambda r, wf=wf: r.list_control_requests(wf)) == []  # type: ignore[arg-type]
        assert (
            rc.routed().view(lambda r, wf=wf: r.get_workflow(wf)).record.status
            is WorkflowStatus.RUNNING
        )  # type: ignore[arg-type]

"""Bulk pause, resume and cancel of workflows over the list's filter: what it matches,
what the map still allows (the rest skipped with their status), one token per run."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from console.actions.common import new_token
from console.actions.routed import RoutedAction
from console.actions.routed_bulk import do_bulk_control
from storage import Invalid
from storage.routed.enums import WorkflowStatus
from tests.console import routedcontrol as rc
from tests.console.conftest import DB

pytestmark = DB


def status_of(wf: str) -> WorkflowStatus:
    return rc.routed().view(lambda r: r.get_workflow(wf)).record.status  # type: ignore[arg-type]


def test_bulk_pause_acts_on_what_runs_and_skips_the_rest():
    running = [rc.running(f"k{i}")[0].receipt.workflow_id for i in range(3)]
    pending = rc.admitted("k-pending").receipt.workflow_id
    token = new_token()

    def pause():
        return do_bulk_control(
            rc.routed(),
            username="carol",
            action=RoutedAction.PAUSE,
            workflow_ids=[*running, pending, "wf-missing"],
            reason="model provider down",
            token=token,
        )

    summary = pause()
    again = pause()

    assert sorted(r.target for r in summary.done) == sorted(running)
    assert {wf: why.split(":")[0] for wf, why in summary.skipped}.keys() == {
        pending,
        "wf-missing",
    }
    assert all(status_of(wf) is WorkflowStatus.PAUSE_REQUESTED for wf in running)
    assert all(r.duplicate for r in again.done)
    assert len(again.done) == 3
    assert all(
        len(rc.routed().view(lambda r, wf=wf: r.list_control_requests(wf))) == 1 for wf in running
    )


def test_bulk_refuses_actions_it_does_not_offer():
    with pytest.raises(Invalid):
        do_bulk_control(
            rc.routed(),
            username="carol",
            action=RoutedAction.RESTART,
            workflow_ids=[],
            reason="r",
            token=new_token(),
        )


def test_the_bulk_page_confirms_the_filter_and_acts_on_what_can_move(django_user_model):
    running = [rc.running(f"k{i}")[0].receipt.workflow_id for i in range(2)]
    pending = rc.admitted("k-pending").receipt.workflow_id
    user = django_user_model.objects.create_user(username="carol", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="routed_control"))
    client = Client()
    client.force_login(user)

    page = client.get("/routed/actions/bulk", {"do": "pause"})
    assert page.status_code == 200
    assert b"data-matched>3<" in page.content  # every workflow ...
    assert b"data-eligible>2<" in page.content  # ... of which the running can pause
    done = client.post(
        "/routed/actions/bulk",
        {"do": "pause", "filter": "", "reason": "drain", "token": new_token()},
    )

    assert b"2 done, 0 skipped" in done.content
    assert all(status_of(wf) is WorkflowStatus.PAUSE_REQUESTED for wf in running)
    assert status_of(pending) is WorkflowStatus.PENDING
    cancelled = client.post(
        "/routed/actions/bulk",
        {"do": "cancel", "filter": "status=PENDING", "reason": "drain", "token": new_token()},
    )
    assert b"1 done, 0 skipped" in cancelled.content
    assert status_of(pending) is WorkflowStatus.CANCELLED


def test_bulk_is_refused_to_a_viewer_and_bad_input_is_400(django_user_model):
    rc.running()
    viewer = Client()
    viewer.force_login(django_user_model.objects.create_user(username="bob", password="pw"))

    assert viewer.get("/routed/actions/bulk", {"do": "pause"}).status_code == 403
    assert viewer.post("/routed/actions/bulk", {"do": "pause"}).status_code == 403
    assert viewer.get("/routed/actions/bulk", {"do": "explode"}).status_code == 400

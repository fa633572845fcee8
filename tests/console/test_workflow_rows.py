"""The Workflows list's rows and the workflow page's controls (issue 33): Continue is
offered only where the status map and the attempt allow it (RUNNING, PAUSED or
NEEDS_REPLAN, with no attempt that has not ended), a row's actions are short links
with a confirmation row after it, and knowing which rows have a live attempt costs
the page two statements whatever the number of rows."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from console.actions.routed import RoutedAction
from console.routed.previews import allowed_actions
from storage.routed.enums import WorkflowStatus
from tests.console import routedfactories as rf
from tests.console.conftest import DB

pytestmark = DB

LIST = reverse("routed_workflows")
W = WorkflowStatus


@pytest.fixture
def controller(client, alice):
    alice.user_permissions.add(Permission.objects.get(codename="routed_control"))
    client.force_login(alice)
    return client


def row_actions(body: str, workflow_id: str) -> list[str]:
    row = re.search(rf'<tr id="row-{re.escape(workflow_id)}">(.*?)</tr>', body, re.S)
    assert row is not None, workflow_id
    return re.findall(r'data-routed-action="([^"]+)"', row.group(1))


@pytest.mark.parametrize(
    ("status", "live", "offered"),
    [
        (W.RUNNING, True, False),  # its attempt runs: nothing to continue
        (W.RUNNING, False, True),  # its attempt ended; the workflow was not ended
        (W.PAUSED, False, True),
        (W.NEEDS_REPLAN, False, True),
        (W.PAUSED, True, False),  # an attempt still live (NEEDS_REPLAN, say)
        (W.PENDING, False, False),  # nothing ran yet
        (W.PAUSE_REQUESTED, False, False),  # a pause under way
        (W.FAILED, False, False),
    ],
)
def test_continue_follows_the_status_map_and_the_attempt(status, live, offered):
    found = RoutedAction.CONTINUE in allowed_actions(status, live_attempt=live)
    assert found is offered


def test_the_list_offers_continue_only_where_no_attempt_is_live(controller):
    running, _ = rf.running()
    stalled, attempt = rf.running()
    rf.end_attempt(attempt)  # failed; the supervisor has not ended the workflow
    replan = rf.needs_replan()
    failed, _ = rf.failed()
    body = controller.get(LIST).content.decode()

    assert row_actions(body, running.receipt.workflow_id) == ["pause", "cancel"]
    assert row_actions(body, stalled.receipt.workflow_id) == ["pause", "continue", "cancel"]
    assert "continue" in row_actions(body, replan.receipt.workflow_id)
    assert row_actions(body, failed.receipt.workflow_id) == ["restart"]
    # Short links on the row, its confirmation opening in the row after it.
    wf = running.receipt.workflow_id
    assert f'hx-target="#confirm-{wf}"' in body
    slot = f'<td colspan="7"><div class="routed-confirm-slot" id="confirm-{wf}">'
    assert f'<tr class="routed-confirm-row">{slot}' in body
    assert 'class="button small' not in body  # no full-size buttons in the rows


def test_the_workflow_page_offers_continue_once_its_attempt_ended(controller):
    admission, attempt = rf.running()
    wf = admission.receipt.workflow_id
    page = reverse("routed_workflow", args=[wf])
    assert 'data-routed-action="continue"' not in controller.get(page).content.decode()
    rf.end_attempt(attempt)
    assert 'data-routed-action="continue"' in controller.get(page).content.decode()


def test_the_live_attempts_cost_two_statements_whatever_the_rows(controller):
    rf.running()
    controller.get(LIST)  # session, caches

    def reads() -> tuple[int, int, int]:
        with CaptureQueriesContext(connections["view"]) as seen:
            controller.get(LIST)
        sql = [q["sql"] for q in seen.captured_queries]
        return (
            len(sql),
            sum('"conduit_routed_run"' in q for q in sql),
            sum('"conduit_routed_attempt"' in q for q in sql),
        )

    few = reads()
    for _ in range(6):
        rf.running()
    rf.needs_replan()
    assert reads() == few
    assert few[1:] == (1, 1)

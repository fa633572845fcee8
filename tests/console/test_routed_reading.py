"""What the routed pages say, read as a new operator would (issue 33): an ended
workflow's envelope is history (no "near its ceiling", no percentage), a restart in
the control history names both workflows, a workflow continued after a pause no
longer reads "desired state: pause", and the list's status filter takes the case
the facets show."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from storage.routed.enums import AttemptStatus, ControlCommand, FailureReason, WorkflowStatus
from tests.console import routedfactories as rf
from tests.console.conftest import DB

pytestmark = DB

LIST = reverse("routed_workflows")


def page(client, workflow_id: str) -> str:
    return client.get(reverse("routed_workflow", args=[workflow_id])).content.decode()


def test_an_expired_workflow_is_not_near_its_ceiling_nor_at_100_per_cent(as_bob):
    admission, attempt = rf.running(max_active_ms=1)  # its ceiling consumed within a request
    rf.end_attempt(attempt, AttemptStatus.FAILED, reason=FailureReason.ACTIVE_TIME_EXHAUSTED)
    rf.finish(admission, WorkflowStatus.EXPIRED, FailureReason.ACTIVE_TIME_EXHAUSTED)
    body = page(as_bob, admission.receipt.workflow_id)
    assert "near its ceiling" not in body
    assert "envelope-near" not in body
    assert "(100%)" not in body
    assert "ended: its active time ran out" in body


def test_a_running_workflow_at_its_ceiling_is_still_near_it(as_bob):
    admission, _ = rf.running(max_active_ms=1)
    body = page(as_bob, admission.receipt.workflow_id)
    assert "near its ceiling" in body
    assert "(100%)" in body


def test_a_restart_in_the_history_names_the_workflow_and_its_successor(as_bob):
    admission, _ = rf.failed()
    wf = admission.receipt.workflow_id
    new = rf.control(wf, ControlCommand.RESTART).result.new_workflow_id
    assert new is not None
    assert new != wf
    body = page(as_bob, wf)
    history = body[body.index('id="control-history"') :]
    assert f"restarted as {new}" not in history  # the store's detail named the new one only
    pair = re.search(r'restarted <span class="mono">([^<]+)</span> → <a [^>]*>([^<]+)</a>', history)
    assert pair is not None
    assert pair.groups() == (wf, new)


def test_a_workflow_continued_after_its_pause_no_longer_desires_the_pause(as_bob):
    admission = rf.needs_replan()
    wf = admission.receipt.workflow_id
    outcome = rf.control(wf, ControlCommand.CONTINUE)
    assert outcome.result.applied
    assert rf.routed().view(lambda r: r.get_workflow(wf)).record.status is WorkflowStatus.RUNNING
    # The store's desired state follows the continue (issue 33, storage): a pause
    # desired before it would refuse the new attempt's claim.
    assert (
        rf.routed().view(lambda r: r.get_desired_state(wf)).record.desired_command
        is ControlCommand.CONTINUE
    )
    body = page(as_bob, wf)
    desired = body[
        body.index('id="desired-state"') : body.index("</dd>", body.index('id="desired-state"'))
    ]
    assert desired.startswith('id="desired-state"><span class="mono">continue</span>')
    assert outcome.request.control_request_id in desired


def test_a_pause_asked_after_a_continue_is_the_desired_state_again(as_bob):
    admission = rf.needs_replan()
    wf = admission.receipt.workflow_id
    rf.control(wf, ControlCommand.CONTINUE)
    pause = rf.control(wf, ControlCommand.PAUSE)
    body = page(as_bob, wf)
    desired = body[
        body.index('id="desired-state"') : body.index("</dd>", body.index('id="desired-state"'))
    ]
    assert desired.startswith('id="desired-state"><span class="mono">pause</span>')
    assert pause.request.control_request_id in desired


@pytest.mark.parametrize("value", ["running", "RUNNING", "Running"])
def test_the_status_filter_takes_either_case(as_bob, value):
    running, _ = rf.running()
    failed, _ = rf.failed()
    response = as_bob.get(LIST, {"status": value})
    assert response.status_code == 200
    body = response.content.decode()
    assert running.receipt.workflow_id in body
    assert failed.receipt.workflow_id not in body
    facet = body[
        body.index('id="facet-status"') : body.index("</section>", body.index('id="facet-status"'))
    ]
    active = re.findall(r'aria-current="true"[^>]*>(.*?)</a>', facet)
    assert len(active) == 1
    assert ">running<" in active[0]


def test_a_reason_filter_takes_either_case_too(as_bob):
    failed, _ = rf.failed(reason=FailureReason.MODEL_RATE_LIMITED)
    body = as_bob.get(LIST, {"reason": "model_rate_limited"}).content.decode()
    assert failed.receipt.workflow_id in body


@pytest.mark.parametrize(
    "params", [{"status": "sleeping"}, {"status": "Runnin"}, {"reason": "nope"}]
)
def test_an_unknown_status_in_any_case_is_still_a_400(as_bob, params):
    response = as_bob.get(LIST, params)
    assert response.status_code == 400
    assert next(iter(params)) in response.content.decode()

"""The confirmation views of routed-run actions: per action and persona (with and
without each authority, read-only), idempotency, a stale form, bad input as 4xx."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.test.utils import CaptureQueriesContext

from console.access import SCOPE_PERMISSION
from console.actions import routed as a
from console.actions.common import new_token
from storage.routed.enums import AttemptStatus, AuthorityScope, WorkflowStatus
from tests.console import routedcontrol as rc
from tests.console import routedfactories as rf
from tests.console.conftest import DB

pytestmark = DB
CONTROL = AuthorityScope.CONTROL
AMEND = AuthorityScope.AMEND_LIMITS


def person(django_user_model, name: str, *scopes: AuthorityScope) -> Client:
    user = django_user_model.objects.create_user(username=name, password="password")
    for scope in scopes:
        codename = SCOPE_PERMISSION[scope].split(".", 1)[1]
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def controller(django_user_model) -> Client:
    return person(django_user_model, "carol", CONTROL)


@pytest.fixture
def amender(django_user_model) -> Client:
    return person(django_user_model, "dave", AMEND)


@pytest.fixture
def viewer(django_user_model) -> Client:
    return person(django_user_model, "bob")


def url(action: str, wf: str) -> str:
    return f"/routed/actions/{action}/{wf}"


def status_of(wf: str) -> WorkflowStatus:
    return rc.routed().view(lambda r: r.get_workflow(wf)).record.status  # type: ignore[arg-type]


def post(client: Client, action: str, wf: str, **fields):
    data = {
        "reason": "operator check",
        "token": new_token(),
        "generation": rc.routed().view(lambda r: r.get_workflow(wf)).generation,  # type: ignore[arg-type]
    } | fields
    return client.post(url(action, wf), data)


def test_the_confirmation_shows_the_transition_and_what_it_touches(controller):
    admission, attempt = rc.running()
    wf = admission.receipt.workflow_id

    response = controller.get(url("cancel", wf))

    text = response.content.decode()
    assert response.status_code == 200
    assert "RUNNING -&gt; CANCELLED" in text
    assert attempt.record.attempt_id in text
    assert "fenced" in text
    assert admission.receipt.run_id in text


def test_a_controller_pauses_and_sees_it_in_the_history(controller):
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id

    response = post(controller, "pause", wf)

    assert response.status_code == 302
    assert response["Location"] == f"/routed/workflows/{wf}"
    assert status_of(wf) is WorkflowStatus.PAUSE_REQUESTED
    page = controller.get(response["Location"]).content.decode()
    assert "operator:carol" in page
    assert "operator check" in page


def test_a_resubmitted_form_acts_once(controller):
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    fields = {"token": new_token()}

    generation = rc.routed().view(lambda r: r.get_workflow(wf)).generation
    first = post(controller, "pause", wf, generation=generation, **fields)
    again = post(controller, "pause", wf, generation=generation, **fields)

    assert first.status_code == again.status_code == 302
    assert len(rc.routed().view(lambda r: r.list_control_requests(wf))) == 1
    flashed = [m.message for m in again.wsgi_request._messages]
    assert any("already submitted" in m for m in flashed)


def test_a_stale_form_is_answered_with_the_fresh_confirmation(controller):
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    stale = rc.routed().view(lambda r: r.get_workflow(wf)).generation
    post(controller, "pause", wf)

    response = post(controller, "cancel", wf, generation=stale)

    assert response.status_code == 409
    assert "changed since you loaded it" in response.content.decode()
    assert status_of(wf) is WorkflowStatus.PAUSE_REQUESTED


@pytest.mark.parametrize(
    "fields",
    [{"reason": ""}, {"token": "x"}, {"generation": "-1"}, {"generation": "many"}],
    ids=["no-reason", "bad-token", "negative-generation", "text-generation"],
)
def test_bad_input_is_a_400_and_changes_nothing(controller, fields):
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id

    response = post(controller, "pause", wf, **fields)

    assert response.status_code == 400
    assert rc.routed().view(lambda r: r.list_control_requests(wf)) == []


def test_unknown_actions_and_workflows_are_404s(controller):
    admission, _ = rc.running()

    assert controller.get(url("explode", admission.receipt.workflow_id)).status_code == 404
    assert controller.get(url("pause", "wf-" + "0" * 32)).status_code == 404
    assert controller.get(url("pause", "not-a-workflow")).status_code == 400


def test_a_pause_the_map_refuses_is_shown_without_a_form(controller):
    wf = rc.admitted().receipt.workflow_id  # PENDING

    response = controller.get(url("pause", wf))

    assert "does not apply" in response.content.decode()
    assert b"data-confirm-action" not in response.content


def test_a_viewer_sees_no_buttons_and_forged_posts_are_403(viewer):
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id

    page = viewer.get(f"/routed/workflows/{wf}").content.decode()
    assert "data-routed-action" not in page
    for action in ("pause", "cancel", "amend-limits", "restart", "continue"):
        assert post(viewer, action, wf).status_code == 403
        assert viewer.get(url(action, wf)).status_code == 403
    assert rc.routed().view(lambda r: r.list_control_requests(wf)) == []


def test_each_authority_shows_and_allows_only_its_own_actions(controller, amender):
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id

    control_page = controller.get(f"/routed/workflows/{wf}").content.decode()
    amend_page = amender.get(f"/routed/workflows/{wf}").content.decode()

    assert 'data-routed-action="pause"' in control_page
    assert 'data-routed-action="amend-limits"' not in control_page
    assert 'data-routed-action="amend-limits"' in amend_page
    assert 'data-routed-action="pause"' not in amend_page
    assert post(controller, "amend-limits", wf).status_code == 403
    assert post(amender, "pause", wf).status_code == 403


def test_read_only_refuses_everyone(settings, django_user_model):
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    settings.CONSOLE_READ_ONLY = True
    both = person(django_user_model, "erin", CONTROL, AMEND)

    assert "data-routed-action" not in both.get(f"/routed/workflows/{wf}").content.decode()
    assert post(both, "pause", wf).status_code == 403
    assert status_of(wf) is WorkflowStatus.RUNNING


def test_amend_prefills_the_current_ceilings_and_raises_one(amender):
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    record = rc.routed().view(lambda r: r.get_workflow(wf)).record

    form = amender.get(url("amend-limits", wf)).content.decode()
    assert f'value="{record.max_active_duration_ms}"' in form
    response = post(
        amender,
        "amend-limits",
        wf,
        generation=record.authority_generation,
        max_active_duration_ms=record.max_active_duration_ms * 2,
        attempt_lease_ms=record.max_attempt_lease_ms,
        max_llm_spend=record.max_llm_spend_decimal,
    )

    assert response.status_code == 302
    after = rc.routed().view(lambda r: r.get_workflow(wf)).record
    assert after.max_active_duration_ms == record.max_active_duration_ms * 2
    assert after.authority_generation == record.authority_generation + 1


def test_amend_refuses_a_decrease_as_400(amender):
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    record = rc.routed().view(lambda r: r.get_workflow(wf)).record

    response = post(
        amender,
        "amend-limits",
        wf,
        generation=record.authority_generation,
        max_active_duration_ms=1000,
        attempt_lease_ms=record.max_attempt_lease_ms,
    )

    assert response.status_code == 400
    assert rc.routed().view(lambda r: r.list_limit_amendments(wf)) == []


def test_restart_offers_the_aliases_and_lands_on_the_new_workflow(controller):
    admission, attempt = rc.running()
    wf = admission.receipt.workflow_id
    rc.alias_to("prod", rc.admitted("key-2", version="2.0.0"))
    rc.end_attempt(attempt, AttemptStatus.FAILED)
    post(controller, "cancel", wf)  # a finished workflow: restart is offered

    form = controller.get(url("restart", wf)).content.decode()
    assert 'value="prod"' in form
    response = post(controller, "restart", wf, target_ref="prod")

    assert response.status_code == 302
    new_page = controller.get(response["Location"]).content.decode()
    assert f'href="/routed/workflows/{wf}"' in new_page
    [note] = a.notes_for(wf)[-1:]
    assert note.action == "restart"


def test_continue_shows_and_resumes_from_the_latest_valid_checkpoint(controller):
    from storage.routed.enums import ResumeCapability
    from tests.storage.routed.support import checkpoint

    admission, attempt = rc.running()
    wf = admission.receipt.workflow_id
    saved = rc.routed().transact(lambda r: r.save_checkpoint(checkpoint(attempt.record)))
    rc.end_attempt(
        attempt, AttemptStatus.FAILED, resume_capability=ResumeCapability.SAFE_CHECKPOINT
    )

    form = controller.get(url("continue", wf)).content.decode()
    assert saved.checkpoint_id in form
    assert "Attempt 2 starts from checkpoint" in form
    response = post(controller, "continue", wf)

    assert response.status_code == 302
    [result] = rc.routed().view(lambda r: r.list_control_results(wf))
    assert result.resume_checkpoint_id == saved.checkpoint_id


def test_the_list_rows_and_the_deployments_page_carry_the_controls(controller, viewer):
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    rc.alias_to("prod", admission)

    rows = controller.get("/routed/workflows?status=RUNNING").content.decode()
    deployments = controller.get("/routed/deployments").content.decode()

    assert f'href="/routed/actions/pause/{wf}?next=' in rows
    assert 'data-bulk="pause"' in rows
    assert "/routed/actions/bulk?status=RUNNING&amp;do=pause" in rows
    assert 'data-deployment-action="deactivate"' in deployments
    assert 'data-alias-action="repoint"' in deployments
    seen = (
        viewer.get("/routed/workflows").content.decode()
        + viewer.get("/routed/deployments").content.decode()
    )
    assert "data-routed-action" not in seen
    assert "data-bulk=" not in seen
    assert "data-deployment-action" not in seen


def test_a_confirmation_costs_the_same_whatever_the_pipeline(controller, django_assert_num_queries):
    from django.db import connections

    small, _ = rc.running()
    big, _ = rf.pipeline(stages=5)
    for action in ("pause", "cancel", "continue"):
        counts = []
        for admission in (small, big):
            with CaptureQueriesContext(connections["view"]) as seen:
                assert controller.get(url(action, admission.receipt.workflow_id)).status_code == 200
            counts.append(len(seen))
        assert counts[0] == counts[1], (action, counts)
    # 14: the envelope's remaining lease is read at the View's monotonic reading (the
    # axis's mark, the workflow's runs and their running attempts: three statements).
    with django_assert_num_queries(14, connection=connections["view"]):
        controller.get(url("pause", big.receipt.workflow_id))

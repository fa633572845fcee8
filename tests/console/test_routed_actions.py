"""The routed-run ``do_*`` actions on the real database: each acts through the
store, records ``operator:<user>`` and the reason, never acts twice for one token,
and refuses a stale form as changed since it was loaded."""

from __future__ import annotations

import pytest

from console.actions import routed as a
from console.actions.common import new_token
from storage import Invalid
from storage.routed.enums import (
    AttemptStatus,
    ControlCommand,
    DeploymentStatus,
    RunStatus,
    WorkflowStatus,
)
from storage.routed.errors import LeaseFenced, TransitionError
from tests.console import routedcontrol as rc
from tests.console.conftest import DB

pytestmark = DB


def wf_gen(workflow_id: str) -> int:
    return rc.routed().view(lambda r: r.get_workflow(workflow_id)).generation  # type: ignore[arg-type]


def status_of(workflow_id: str) -> WorkflowStatus:
    return rc.routed().view(lambda r: r.get_workflow(workflow_id)).record.status  # type: ignore[arg-type]


def control(do, workflow_id: str, token: str | None = None, **more):
    return do(
        rc.routed(),
        username="alice",
        workflow_id=workflow_id,
        generation=wf_gen(workflow_id),
        reason="stuck on the model",
        token=token or new_token(),
        **more,
    )


def test_pause_asks_and_the_boundary_freezes_the_envelope():
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id

    result = control(a.do_pause_workflow, wf)
    assert result.done
    assert result.detail == "pause requested"
    assert status_of(wf) is WorkflowStatus.PAUSE_REQUESTED
    rc.reach_pause_boundary(wf)

    assert status_of(wf) is WorkflowStatus.PAUSED
    env = rc.routed().view(lambda r: r.get_time_envelope(wf)).record
    assert env.running_segment_start_ms is None
    requests = rc.routed().view(lambda r: r.list_control_requests(wf))
    assert [(r.command, r.actor_identity) for r in requests] == [
        (ControlCommand.PAUSE, "operator:alice")
    ]
    [note] = a.notes_for(wf)
    assert (note.actor, note.reason, note.action) == (
        "operator:alice",
        "stuck on the model",
        "pause",
    )


def test_resume_runs_a_paused_workflow_again():
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    control(a.do_pause_workflow, wf)
    rc.reach_pause_boundary(wf)

    result = control(a.do_resume_workflow, wf)

    assert result.done
    assert status_of(wf) is WorkflowStatus.RUNNING


def test_cancel_fences_the_live_attempt():
    admission, attempt = rc.running()
    wf = admission.receipt.workflow_id

    control(a.do_cancel_workflow, wf)

    assert status_of(wf) is WorkflowStatus.CANCELLED
    assert (
        rc.routed().view(lambda r: r.get_run(admission.receipt.run_id)).record.status
        is RunStatus.CANCELLED
    )
    with pytest.raises(LeaseFenced):
        rc.end_attempt(attempt, AttemptStatus.SUCCEEDED)


def test_a_resubmitted_form_does_not_act_twice():
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    token = new_token()
    generation = wf_gen(wf)

    first = a.do_pause_workflow(
        rc.routed(),
        username="alice",
        workflow_id=wf,
        generation=generation,
        reason="r",
        token=token,
    )
    again = a.do_pause_workflow(
        rc.routed(),
        username="alice",
        workflow_id=wf,
        generation=generation,
        reason="r",
        token=token,
    )

    assert first.done
    assert not first.duplicate
    assert again.duplicate
    assert "already submitted" in again.message
    assert len(rc.routed().view(lambda r: r.list_control_requests(wf))) == 1
    assert len(a.notes_for(wf)) == 1


def test_a_stale_form_says_it_changed_since_it_was_loaded():
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    stale = wf_gen(wf)
    control(a.do_pause_workflow, wf)

    with pytest.raises(a.StaleForm, match="changed since you loaded it"):
        a.do_cancel_workflow(
            rc.routed(),
            username="alice",
            workflow_id=wf,
            generation=stale,
            reason="r",
            token=new_token(),
        )
    assert status_of(wf) is WorkflowStatus.PAUSE_REQUESTED


def test_it_refuses_a_pause_the_map_does_not_allow():
    wf = rc.admitted().receipt.workflow_id  # PENDING: nothing to pause yet

    with pytest.raises(TransitionError):
        control(a.do_pause_workflow, wf)
    assert rc.routed().view(lambda r: r.list_control_requests(wf)) == []


def test_a_pause_after_cancel_is_superseded_and_says_so():
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    control(a.do_cancel_workflow, wf)

    result = control(a.do_pause_workflow, wf)

    assert not result.done
    assert result.detail == "superseded by cancel"
    assert status_of(wf) is WorkflowStatus.CANCELLED


@pytest.mark.parametrize(
    ("reason", "token", "match"),
    [
        ("", new_token(), "reason"),
        ("x" * 501, new_token(), "at most"),
        ("nul \x00 here", new_token(), "reason"),
        ("ok", "short", "token"),
    ],
    # Named: a generated token in the ID would differ between xdist workers' collections.
    ids=["empty-reason", "long-reason", "nul-in-reason", "short-token"],
)
def test_it_refuses_bad_input_before_writing(reason, token, match):
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id

    with pytest.raises(Invalid, match=match):
        a.do_pause_workflow(
            rc.routed(),
            username="alice",
            workflow_id=wf,
            generation=wf_gen(wf),
            reason=reason,
            token=token,
        )
    assert rc.routed().view(lambda r: r.list_control_requests(wf)) == []


def test_restart_from_the_current_alias_records_provenance():
    admission, attempt = rc.running()
    wf = admission.receipt.workflow_id
    newer = rc.admitted("key-2", version="2.0.0")
    rc.alias_to("prod", newer)
    rc.end_attempt(attempt, AttemptStatus.FAILED)

    result = control(a.do_restart_workflow, wf, target_ref="prod")

    assert result.done
    assert result.new_workflow_id
    restarted = rc.routed().view(lambda r: r.get_workflow(result.new_workflow_id)).record  # type: ignore[arg-type]
    assert restarted.deployment_id == newer.receipt.resolved_deployment_id
    provenance = rc.routed().view(lambda r: r.get_restart_provenance(result.new_workflow_id))  # type: ignore[arg-type]
    assert provenance.source_workflow_id == wf


def test_continue_starts_the_next_attempt():
    admission, attempt = rc.running()
    wf = admission.receipt.workflow_id
    rc.end_attempt(attempt, AttemptStatus.FAILED)

    result = control(a.do_continue_workflow, wf)

    assert result.done
    assert "attempt 2" in result.detail
    assert len(rc.routed().view(lambda r: r.list_attempts(admission.receipt.run_id))) == 2


def test_amend_raises_a_ceiling_once_per_token_and_refuses_a_stale_generation():
    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    authority = rc.routed().view(lambda r: r.get_workflow(wf)).record.authority_generation
    token = new_token()

    def amend(generation: int, tok: str, active: int = 7_200_000):
        return a.do_amend_limits(
            rc.routed(),
            username="alice",
            workflow_id=wf,
            authority_generation=generation,
            reason="needs longer",
            token=tok,
            max_active_duration_ms=active,
        )

    first = amend(authority, token)
    again = amend(authority, token)

    assert first.done
    assert "3600000 -> 7200000" in first.detail
    assert again.duplicate
    assert len(rc.routed().view(lambda r: r.list_limit_amendments(wf))) == 1
    assert rc.routed().view(lambda r: r.get_workflow(wf)).record.max_active_duration_ms == 7_200_000
    with pytest.raises(a.StaleForm):
        amend(authority, new_token(), active=9_000_000)
    with pytest.raises(Invalid, match="may only grow"):
        amend(authority + 1, new_token(), active=1_000)


def test_deactivate_and_activate_a_deployment_with_cas():
    admission = rc.admitted()
    dep_id = admission.receipt.resolved_deployment_id
    generation = rc.routed().view(lambda r: r.get_deployment(dep_id)).generation
    token = new_token()

    def deactivate(gen: int, tok: str):
        return a.do_deactivate_deployment(
            rc.routed(),
            username="alice",
            deployment_id=dep_id,
            generation=gen,
            reason="bad build",
            token=tok,
        )

    assert deactivate(generation, token).done
    assert deactivate(generation, token).duplicate
    assert (
        rc.routed().view(lambda r: r.get_deployment(dep_id)).record.status
        is DeploymentStatus.INACTIVE
    )
    with pytest.raises(a.StaleForm):
        a.do_activate_deployment(
            rc.routed(),
            username="alice",
            deployment_id=dep_id,
            generation=generation,
            reason="r",
            token=new_token(),
        )
    a.do_activate_deployment(
        rc.routed(),
        username="alice",
        deployment_id=dep_id,
        generation=generation + 1,
        reason="fixed",
        token=new_token(),
    )
    assert (
        rc.routed().view(lambda r: r.get_deployment(dep_id)).record.status
        is DeploymentStatus.ACTIVE
    )


def test_repoint_an_alias_with_cas():
    old, new = rc.admitted("k1", "1.0.0"), rc.admitted("k2", "2.0.0")
    rc.alias_to("prod", old)
    generation = rc.routed().view(lambda r: r.resolve_alias("prod")).generation
    token = new_token()

    def repoint(gen: int, tok: str):
        return a.do_repoint_alias(
            rc.routed(),
            username="alice",
            alias="prod",
            generation=gen,
            deployment_id=new.receipt.resolved_deployment_id,
            reason="roll forward",
            token=tok,
        )

    result = repoint(generation, token)
    assert result.done
    assert "2.0.0" in result.detail
    assert repoint(generation, token).duplicate
    stored = rc.routed().view(lambda r: r.resolve_alias("prod")).record
    assert (stored.target_deployment_id, stored.updated_by) == (
        new.receipt.resolved_deployment_id,
        "operator:alice",
    )
    with pytest.raises(a.StaleForm):
        repoint(generation, new_token())


def test_the_command_pauses_as_the_console_does(django_user_model):
    from django.contrib.auth.models import Permission
    from django.core.management import CommandError, call_command

    admission, _ = rc.running()
    wf = admission.receipt.workflow_id
    carol = django_user_model.objects.create_user(username="carol", password="pw")
    django_user_model.objects.create_user(username="bob", password="pw")
    with pytest.raises(CommandError, match="does not hold runs:control"):
        call_command("routed_action", "pause", wf, "--user", "bob", "--reason", "r")
    carol.user_permissions.add(Permission.objects.get(codename="routed_control"))

    call_command("routed_action", "pause", wf, "--user", "carol", "--reason", "model down")

    assert status_of(wf) is WorkflowStatus.PAUSE_REQUESTED
    assert [n.reason for n in a.notes_for(wf)] == ["model down"]


def test_a_forms_token_acts_for_its_one_action_only():
    """A restart's token is refused for a cancel on another workflow, and the cancel,
    which ran in the refused transaction, is rolled back."""
    failed, attempt = rc.running()
    rc.end_attempt(attempt, AttemptStatus.FAILED)
    other, _ = rc.running("key-other")
    token = new_token()
    assert control(a.do_restart_workflow, failed.receipt.workflow_id, token).done

    target = other.receipt.workflow_id
    with pytest.raises(Invalid, match="used for restart"):
        control(a.do_cancel_workflow, target, token)

    assert status_of(target) is WorkflowStatus.RUNNING
    assert rc.routed().view(lambda r: r.list_control_requests(target)) == []
    assert a.notes_for(target) == []
    with pytest.raises(Invalid, match="used for restart"):  # nor for any other action
        control(a.do_pause_workflow, target, token)

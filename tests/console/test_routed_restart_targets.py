"""What a restart offers to run on (issue 33): the workflow's own deployment and the
aliases pointing at an active deployment of the same package; every other alias is
named with why it is absent, and a POST naming one is refused (400), not run."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission

from console.actions.common import new_token
from storage.routed.enums import DeploymentStatus, FailureReason, WorkflowStatus
from tests.console import routedfactories as rf
from tests.console.conftest import DB

pytestmark = DB


@pytest.fixture
def controller(client, alice):
    alice.user_permissions.add(Permission.objects.get(codename="routed_control"))
    client.force_login(alice)
    return client


def offered(body: str) -> list[str]:
    return re.findall(r'name="target_ref" value="([^"]*)"', body)


def failed_fan_out() -> str:
    """A fan-out workflow (package pkg.fanout 1.0.0) that failed."""
    dep = rf.deployment("pkg.fanout", "1.0.0")
    admission, _ = rf.failed(dep.deployment_id, FailureReason.CHILD_BATCH_FAILED)
    return admission.receipt.workflow_id


def test_restart_offers_its_own_deployment_and_the_aliases_of_its_package(controller):
    wf = failed_fan_out()
    rf.alias("fanout-prod", rf.deployment("pkg.fanout", "2.0.0"))
    rf.alias("summarise-prod", rf.deployment("pkg.summarise", "1.0.0"))
    retired = rf.deployment("pkg.fanout", "0.9.0")
    rf.alias("fanout-old", retired)
    rf.routed().transact(
        lambda r: r.set_deployment_status(
            retired.deployment_id,
            DeploymentStatus.INACTIVE,
            r.get_deployment(retired.deployment_id).generation,
        )
    )

    body = controller.get(f"/routed/actions/restart/{wf}").content.decode()

    assert offered(body) == ["", "fanout-prod"]  # "": the exact deployment it ran on
    absent = body[body.index('id="absent-aliases"') :]
    absent = absent[: absent.index("</div>")]
    assert "summarise-prod" in absent
    assert "points at pkg.summarise@1.0.0, another package than pkg.fanout" in absent
    assert "fanout-old" in absent
    assert "points at pkg.fanout@0.9.0, which is inactive" in absent
    assert "fanout-prod" not in absent


def test_a_post_naming_an_alias_of_another_package_is_refused(controller):
    wf = failed_fan_out()
    rf.alias("summarise-prod", rf.deployment("pkg.summarise", "1.0.0"))
    response = controller.post(
        f"/routed/actions/restart/{wf}",
        {
            "reason": "try the summariser",
            "token": new_token(),
            "generation": rf.routed().view(lambda r: r.get_workflow(wf)).generation,
            "target_ref": "summarise-prod",
        },
    )
    assert response.status_code == 400
    assert rf.routed().view(lambda r: r.restarted_from(wf)) == []
    assert rf.routed().view(lambda r: r.get_workflow(wf)).record.status is WorkflowStatus.FAILED


def test_with_no_other_alias_nothing_is_said_absent(controller):
    wf = failed_fan_out()
    rf.alias("fanout-prod", rf.deployment("pkg.fanout", "2.0.0"))
    body = controller.get(f"/routed/actions/restart/{wf}").content.decode()
    assert offered(body) == ["", "fanout-prod"]
    assert 'id="absent-aliases"' not in body

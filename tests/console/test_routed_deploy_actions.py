"""Deployment deactivate/activate and alias repoint through their confirmation pages:
runs:control only, a stale form re-read as 409 "changed since you loaded it"."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from console.actions.common import new_token
from storage.routed.enums import DeploymentStatus
from tests.console import routedcontrol as rc
from tests.console.conftest import DB

pytestmark = DB


@pytest.fixture
def controller(django_user_model) -> Client:
    user = django_user_model.objects.create_user(username="carol", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="routed_control"))
    client = Client()
    client.force_login(user)
    return client


def test_deactivate_then_a_stale_activate_is_409(controller):
    dep = rc.admitted().receipt.resolved_deployment_id
    url = f"/routed/actions/deployment/deactivate/{dep}"
    generation = rc.routed().view(lambda r: r.get_deployment(dep)).generation

    assert b"stops admitting" in controller.get(url).content
    done = controller.post(
        url, {"reason": "bad build", "token": new_token(), "generation": generation}
    )
    stale = controller.post(
        f"/routed/actions/deployment/activate/{dep}",
        {"reason": "fixed", "token": new_token(), "generation": generation},
    )

    assert done.status_code == 302
    assert (
        rc.routed().view(lambda r: r.get_deployment(dep)).record.status is DeploymentStatus.INACTIVE
    )
    assert stale.status_code == 409
    assert b"changed since you loaded it" in stale.content
    assert (
        rc.routed().view(lambda r: r.get_deployment(dep)).record.status is DeploymentStatus.INACTIVE
    )


def test_repoint_an_alias_through_its_page(controller):
    old, new = rc.admitted("k1", "1.0.0"), rc.admitted("k2", "2.0.0")
    rc.alias_to("prod", old)
    target = new.receipt.resolved_deployment_id
    generation = rc.routed().view(lambda r: r.resolve_alias("prod")).generation

    form = controller.get("/routed/actions/alias/repoint/prod").content.decode()
    assert target in form
    response = controller.post(
        "/routed/actions/alias/repoint/prod",
        {
            "reason": "roll forward",
            "token": new_token(),
            "generation": generation,
            "deployment_id": target,
        },
    )

    assert response.status_code == 302
    assert rc.routed().view(lambda r: r.resolve_alias("prod")).record.target_deployment_id == target


def test_a_viewer_and_bad_input_are_refused(controller, django_user_model):
    dep = rc.admitted().receipt.resolved_deployment_id
    viewer = Client()
    viewer.force_login(django_user_model.objects.create_user(username="bob", password="pw"))

    assert viewer.get(f"/routed/actions/deployment/deactivate/{dep}").status_code == 403
    assert viewer.post("/routed/actions/alias/repoint/prod").status_code == 403
    assert controller.get(f"/routed/actions/deployment/explode/{dep}").status_code == 404
    assert controller.get("/routed/actions/deployment/deactivate/nope").status_code == 400
    assert controller.get("/routed/actions/alias/repoint/missing").status_code == 404
    assert controller.get("/routed/actions/alias/repoint/%00").status_code == 400
    bad = controller.post(
        f"/routed/actions/deployment/deactivate/{dep}",
        {"reason": "", "token": new_token(), "generation": "1"},
    )
    assert bad.status_code == 400
    assert (
        rc.routed().view(lambda r: r.get_deployment(dep)).record.status is DeploymentStatus.ACTIVE
    )

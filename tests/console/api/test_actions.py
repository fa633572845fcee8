"""Acting through the API: a dry run changes nothing and hands out a plan; the apply
needs it and an Idempotency-Key; the same key answers the first result and does
nothing twice; the action goes through the page's do_* function, audited as its user."""

from __future__ import annotations

import json
from datetime import timedelta
from urllib.parse import quote

import pytest
from django.utils import timezone

from console.api.models import ApiPlan, ApiReplay
from storage import WorkState
from storage.default import default_store
from tests.console import factories as f
from tests.console import routedfactories as rf
from tests.console.api.conftest import caller, snapshot
from tests.console.conftest import DB

pytestmark = DB


@pytest.fixture
def api(django_user_model):
    return caller(django_user_model, "operator", "read-write")


def post(client, url, body, key=""):
    extra = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return client.post(url, json.dumps(body), content_type="application/json", **extra)


def state(work_id: str) -> WorkState:
    return default_store().view(lambda tx: tx.work(work_id)).state


def operator_events() -> list[str]:
    found = default_store().view(lambda tx: tx.find_events(actors=["operator:operator"]))
    return [e.event.work_id for e in found]


def test_a_dry_run_changes_nothing_and_the_apply_cancels_as_the_user(api):
    f.work("w/1")
    url = "/api/v1/actions/cancel/" + quote("w/1")
    before = snapshot()
    dry = post(api, url, {"dry_run": True}).json()
    assert dry["would"]["applies"] is True
    assert dry["would"]["work"]["id"] == "w/1"
    assert snapshot()[:2] == before[:2]
    done = post(api, url, {"plan": dry["plan"], "reason": "duplicate order"}, key="k-1")
    assert done.status_code == 200
    assert done.json()["done"] is True
    assert state("w/1") is WorkState.CANCELLED
    assert operator_events() == ["w/1"]


def test_the_same_key_replays_the_first_answer_and_acts_once(api):
    f.exhausted("w")
    url = "/api/v1/actions/retry/w"
    plan = post(api, url, {"dry_run": True}).json()["plan"]
    body = {"plan": plan, "reason": "upstream fixed"}
    first = post(api, url, body, key="retry-w-1")
    again = post(api, url, body, key="retry-w-1")
    assert again.status_code == first.status_code == 200
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert operator_events() == ["w"]
    assert ApiReplay.objects.get().token_prefix.startswith("cc_")


def test_the_same_key_for_another_request_is_a_422(api):
    f.work("a")
    f.work("b")
    plan_a = post(api, "/api/v1/actions/cancel/a", {"dry_run": True}).json()["plan"]
    plan_b = post(api, "/api/v1/actions/cancel/b", {"dry_run": True}).json()["plan"]
    assert (
        post(api, "/api/v1/actions/cancel/a", {"plan": plan_a, "reason": "x"}, "k").status_code
        == 200
    )
    response = post(api, "/api/v1/actions/cancel/b", {"plan": plan_b, "reason": "x"}, "k")
    assert response.status_code == 422
    assert state("b") is WorkState.READY


def test_a_plan_is_used_once_and_only_for_its_target(api):
    f.work("a")
    f.work("b")
    plan = post(api, "/api/v1/actions/cancel/a", {"dry_run": True}).json()["plan"]
    wrong = post(api, "/api/v1/actions/cancel/b", {"plan": plan, "reason": "x"}, "k1")
    assert wrong.status_code == 409
    assert (
        post(api, "/api/v1/actions/retry/a", {"plan": plan, "reason": "x"}, "k1").status_code == 409
    )
    assert (
        post(api, "/api/v1/actions/cancel/a", {"plan": plan, "reason": "x"}, "k1").status_code
        == 200
    )
    again = post(api, "/api/v1/actions/cancel/a", {"plan": plan, "reason": "x"}, "k2")
    assert again.status_code == 409
    assert operator_events() == ["a"]


def test_an_apply_needs_a_plan_a_key_and_a_reason(api):
    f.work("a")
    url = "/api/v1/actions/cancel/a"
    plan = post(api, url, {"dry_run": True}).json()["plan"]
    assert post(api, url, {"plan": plan, "reason": "x"}).status_code == 400  # no key
    assert post(api, url, {"plan": plan, "reason": "x"}, key="bad key!").status_code == 400
    assert post(api, url, {"plan": plan, "reason": "  "}, key="k").status_code == 400
    assert post(api, url, {"plan": "made-up", "reason": "x"}, key="k").status_code == 409
    assert post(api, url, {}, key="k").status_code == 400
    assert api.post(url, "not json", content_type="application/json").status_code == 400
    assert api.post(url, "[1]", content_type="application/json").status_code == 400
    assert state("a") is WorkState.READY


def test_an_expired_plan_is_a_409(api):
    f.work("a")
    url = "/api/v1/actions/cancel/a"
    plan = post(api, url, {"dry_run": True}).json()["plan"]
    ApiPlan.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert post(api, url, {"plan": plan, "reason": "x"}, key="k").status_code == 409
    assert state("a") is WorkState.READY


def test_another_users_plan_is_not_yours(api, django_user_model):
    f.work("a")
    url = "/api/v1/actions/cancel/a"
    plan = post(api, url, {"dry_run": True}).json()["plan"]
    other = caller(django_user_model, "admin", "read-write")
    assert post(other, url, {"plan": plan, "reason": "x"}, key="k").status_code == 409


def test_a_refused_cancel_is_reported_not_done(api):
    f.failed("done-already")
    url = "/api/v1/actions/cancel/done-already"
    dry = post(api, url, {"dry_run": True}).json()
    assert dry["would"]["applies"] is False
    assert dry["would"]["refusal"]
    result = post(api, url, {"plan": dry["plan"], "reason": "x"}, key="k").json()
    assert result["done"] is False
    assert result["refusal"]


def test_bulk_retries_what_the_filter_selected_at_the_dry_run(api):
    for n in range(3):
        f.exhausted(f"tired-{n}")
    f.work("fresh")
    dry = post(
        api, "/api/v1/actions/bulk", {"dry_run": True, "action": "retry", "filter": "is=exhausted"}
    ).json()
    assert sorted(dry["would"]["work_ids"]) == ["tired-0", "tired-1", "tired-2"]
    f.exhausted("tired-later")  # not in the plan: not acted on
    result = post(
        api, "/api/v1/actions/bulk", {"plan": dry["plan"], "reason": "fixed"}, key="b1"
    ).json()
    assert sorted(x["work_id"] for x in result["done"]) == ["tired-0", "tired-1", "tired-2"]
    assert sorted(operator_events()) == ["tired-0", "tired-1", "tired-2"]
    replay = post(api, "/api/v1/actions/bulk", {"plan": dry["plan"], "reason": "fixed"}, key="b1")
    assert replay.json() == result
    assert len(operator_events()) == 3


def test_bulk_rejects_a_bad_filter_or_action(api):
    url = "/api/v1/actions/bulk"
    assert post(api, url, {"dry_run": True, "action": "delete", "filter": ""}).status_code == 400
    bad = post(api, url, {"dry_run": True, "action": "retry", "filter": "state=nope"})
    assert bad.status_code == 400
    assert "state" in bad.json()["error"]["fields"]
    assert post(api, url, {"dry_run": True, "action": "retry", "filter": 3}).status_code == 400


def test_a_workflow_pauses_through_a_plan_and_a_moved_workflow_is_a_409(api):
    admission, _ = rf.running()
    wf = admission.receipt.workflow_id
    dry = post(api, f"/api/v1/actions/pause-workflow/{wf}", {"dry_run": True}).json()
    assert dry["would"]["applies"] is True
    stale = post(api, f"/api/v1/actions/cancel-workflow/{wf}", {"dry_run": True}).json()
    done = post(
        api, f"/api/v1/actions/pause-workflow/{wf}", {"plan": dry["plan"], "reason": "deploy"}, "p1"
    )
    assert done.status_code == 200
    assert done.json()["done"] is True
    body = api.get(f"/api/v1/workflows/{wf}").json()
    assert body["workflow"]["status"] in ("PAUSE_REQUESTED", "PAUSED")
    moved = post(
        api, f"/api/v1/actions/cancel-workflow/{wf}", {"plan": stale["plan"], "reason": "x"}, "c1"
    )
    assert moved.status_code == 409


def test_an_unknown_work_or_workflow_is_a_404_at_the_dry_run(api):
    assert post(api, "/api/v1/actions/cancel/nothing", {"dry_run": True}).status_code == 404
    response = post(api, "/api/v1/actions/pause-workflow/wf-nothing", {"dry_run": True})
    assert 400 <= response.status_code < 500
    assert response.json()["error"]["message"]

"""What the read endpoints answer: the page's filters, keyset pages that end, a Work
with its attempts, Events, Waits and Timers, workflows, and IDs of any shape."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.console import factories as f
from tests.console.api.conftest import caller
from tests.console.conftest import DB

pytestmark = DB


@pytest.fixture
def api(django_user_model):
    return caller(django_user_model, "viewer", "read")


def test_the_work_list_pages_by_keyset_to_the_end(api):
    f.works_at_once(*(f"w-{n:02}" for n in range(60)))
    seen: list[str] = []
    url = "/api/v1/works?size=25&sort=created"
    pages = 0
    while url:
        body = api.get(url).json()
        assert body["count"] == 60
        seen += [w["id"] for w in body["works"]]
        url = body["next_url"]
        pages += 1
    assert pages == 3
    assert sorted(seen) == sorted(f"w-{n:02}" for n in range(60))
    assert len(set(seen)) == 60


def test_the_work_list_takes_the_pages_filters(api):
    f.work("a", kind="billing.charge")
    f.work("b", kind="mail.send")
    f.exhausted("c")
    assert [w["id"] for w in api.get("/api/v1/works?kind=mail.send").json()["works"]] == ["b"]
    assert [w["id"] for w in api.get("/api/v1/works?is=exhausted").json()["works"]] == ["c"]
    body = api.get("/api/v1/works?state=nonsense").json()
    assert body["error"]["status"] == 400
    assert "state" in body["error"]["fields"]


def test_a_work_comes_with_its_attempts_events_waits_and_timers(api):
    f.exhausted("w/with slash", keys=[("shop", "1")])
    f.event("ev-1", work_id="w/with slash", data={"n": 1})
    f.timer("t-1", work_id="w/with slash")
    body = api.get("/api/v1/works/" + quote("w/with slash")).json()
    assert body["work"]["id"] == "w/with slash"
    assert body["work"]["keys"] == [{"source": "shop", "external_id": "1"}]
    assert body["attempts"][0]["state"] == "failed"
    assert any(e["id"] == "ev-1" and e["payload"]["data"] == {"n": 1} for e in body["events"])
    assert len(body["timers"]) == 1
    assert body["waits"] == []
    assert body["cancel_refusal"] == ""


def test_an_unknown_work_is_a_json_404(api):
    response = api.get("/api/v1/works/" + quote("no such/../work"))
    assert response.status_code == 404
    assert "no such" in response.json()["error"]["message"].lower() or response.json()["error"]


def test_the_event_list_pages_newest_first(api):
    f.work("w")
    for n in range(30):
        f.event(f"e-{n:02}", work_id="w")
    first = api.get("/api/v1/events?size=25&work=w").json()
    assert first["events"][0]["id"] == "e-29"
    second = api.get(first["next_url"]).json()
    assert [e["id"] for e in second["events"]][-1] == "e-00"
    assert second["next"] is None


def test_workflows_list_and_one_workflow(api, seeded):
    body = api.get("/api/v1/workflows").json()
    assert [w["workflow_id"] for w in body["workflows"]] == [seeded.workflow_id]
    assert body["workflows"][0]["status"] == "RUNNING"
    one = api.get(f"/api/v1/workflows/{seeded.workflow_id}").json()
    assert one["workflow"]["workflow_id"] == seeded.workflow_id
    assert len(one["attempts"]) == 1
    assert api.get("/api/v1/workflows/wf_nothing").status_code == 404


def test_a_method_other_than_get_is_a_json_405(api):
    response = api.post("/api/v1/works")
    assert response.status_code == 405
    assert response["Allow"] == "GET"

"""What the read endpoints answer: the page's filters, keyset pages that end, a Work
with its attempts, Events, Waits and Timers, workflows, and IDs of any shape."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.http import QueryDict

from console.urlstate import format_key
from console.works.filters import parse_work_filter
from console.works.reads import read_work_list
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


@pytest.mark.parametrize(
    "query",
    [
        "",
        "state=ready",
        "state=failed,completed",
        "kind=mail.send",
        "is=exhausted",
        "scope=acme",
        "within=acme",
        "within=acme&state=ready&kind=billing.charge",
        "sort=created&kind=billing.charge",
    ],
)
def test_the_work_list_counts_and_lists_what_the_page_does(api, query):
    # The API reads a page and a count of its own; the Work list page reads its facets
    # and takes the count from them: the two must agree on every filter.
    f.scope("acme")
    f.scope("acme.eu", parent="acme")
    for n in range(3):
        f.work(f"r{n}", kind="billing.charge", scope_id="acme.eu" if n else "acme")
    f.work("m", kind="mail.send")
    f.exhausted("x1")
    f.exhausted("x2", scope_id="acme")
    f.failed("fail", kind="mail.send")
    f.completed("done", scope_id="acme.eu")
    f.running("busy")
    page = read_work_list(parse_work_filter(QueryDict(query)), None)
    assert page is not None

    body = api.get(f"/api/v1/works?{query}").json()

    assert body["count"] == page.count > 0
    assert [w["id"] for w in body["works"]] == [w.id for w in page.works]
    assert body["next"] == (format_key(page.next_key) if page.next_key else None)


def test_the_work_list_reads_its_page_and_its_count_only(api, django_assert_max_num_queries):
    f.works_at_once(*(f"w-{n:02}" for n in range(30)))
    # The token's lookup and the View's page and count; never the facets or last tries.
    with django_assert_max_num_queries(4) as queries:
        assert api.get("/api/v1/works?size=25").json()["count"] == 30
    sql = " ".join(q["sql"] for q in queries.captured_queries)
    assert "conduit_execution" not in sql


def test_the_work_list_pages_forward_only(api):
    response = api.get("/api/v1/works?before=1.w")
    assert response.status_code == 400
    assert "before" in response.json()["error"]["fields"]

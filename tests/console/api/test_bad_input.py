"""Hostile query strings and IDs: a JSON 4xx with a message, never a 5xx, and nothing
changed (hypothesis over the read endpoints' parameters, with a read token)."""

from __future__ import annotations

from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.console.api.conftest import caller, snapshot
from tests.console.conftest import DB

pytestmark = DB

ENDPOINTS = ["/api/v1/works", "/api/v1/events", "/api/v1/workflows"]
PARAMS = [
    "state",
    "kind",
    "scope",
    "within",
    "since",
    "until",
    "sort",
    "size",
    "after",
    "before",
    "is",
    "q",
    "status",
    "alert",
    "actor",
    "mine",
    "key_source",
    "key_id",
    "unrouted",
    "work",
    "reason",
    "deployment",
]
NASTY = [
    "",
    "\x00",
    "-1",
    "99999999999999999999",
    "9223372036854775808",
    "1.",
    ".x",
    "99999999999999999999.x",
    "²",
    "0001-01-01",
    "x" * 300,
    "é" * 200,
    "%",
    "../..",
    "\ud800",
    "wf_",
    "RUNNING",
    "exhausted",
    "25",
    "7d",
    "on",
]
values = st.one_of(st.sampled_from(NASTY), st.text(max_size=30))
queries = st.lists(st.tuples(st.sampled_from(PARAMS), values), max_size=5)


@pytest.fixture
def api(django_user_model, seeded):
    return caller(django_user_model, "viewer", "read")


@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(endpoint=st.sampled_from(ENDPOINTS), query=queries)
@example(endpoint="/api/v1/events", query=[("before", "99999999999999999999")])
@example(endpoint="/api/v1/works", query=[("after", "99999999999999999999.x")])
@example(endpoint="/api/v1/works", query=[("size", "100000")])
def test_no_query_string_gives_a_5xx_or_a_change(api, endpoint, query):
    before = snapshot()
    path = endpoint + "?" + urlencode([(k, v.encode("utf-8", "surrogatepass")) for k, v in query])
    response = api.get(path)
    assert response.status_code < 500, (path, response.content[:300])
    assert response.status_code in (200, 400), path
    if response.status_code == 400:
        assert response.json()["error"]["message"]
    assert snapshot() == before


@pytest.mark.parametrize("work_id", ["..", ".", "~x", "a/../b", "é/%/?", " lead", "x" * 300, "#"])
def test_any_id_is_a_json_404_or_the_work(api, work_id):
    from console.converters import IdConverter

    response = api.get("/api/v1/works/" + quote(IdConverter().to_url(work_id), safe="/~"))
    assert response.status_code == 404
    assert response.json()["error"]["status"] == 404


def test_a_bad_workflow_id_is_a_json_4xx(api):
    for raw in ["nothing", "wf_", "wf-" + "z" * 500, "%00"]:
        response = api.get("/api/v1/workflows/" + raw)
        assert 400 <= response.status_code < 500, raw
        assert response.json()["error"]["message"]

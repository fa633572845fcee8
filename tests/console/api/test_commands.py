"""``manage.py work`` and ``manage.py workflow``: the page's filters, keyset pages,
and ``--json`` that is exactly the API's answer (one serialiser module)."""

from __future__ import annotations

import json
from io import StringIO
from urllib.parse import quote

import pytest
from django.core.management import CommandError, call_command

from tests.console import factories as f
from tests.console.api.conftest import caller
from tests.console.conftest import DB

pytestmark = DB


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def api(django_user_model):
    return caller(django_user_model, "viewer", "read")


def test_work_list_json_is_the_apis_answer(api):
    f.work("a", kind="mail.send")
    f.work("b", kind="billing.charge")
    printed = json.loads(run("work", "list", "kind=mail.send", "--json"))
    answer = api.get("/api/v1/works?kind=mail.send").json()
    answer.pop("next_url")
    assert printed == answer
    assert [w["id"] for w in printed["works"]] == ["a"]


def test_work_list_pages_with_after(api):
    f.works_at_once(*(f"w-{n:02}" for n in range(30)))
    first = json.loads(run("work", "list", "sort=created", "--size", "25", "--json"))
    second = json.loads(
        run("work", "list", "sort=created", "--size", "25", "--after", first["next"], "--json")
    )
    assert len(first["works"]) == 25
    assert len(second["works"]) == 5
    assert second["next"] is None
    text = run("work", "list", "--size", "25")
    assert "30 matching; next: --after" in text


def test_work_show_prints_the_work_with_its_attempts_and_events(api):
    f.exhausted("w/odd id", message="boom")
    f.event("ev-9", work_id="w/odd id")
    text = run("work", "show", "w/odd id")
    assert "w/odd id" in text
    assert "Attempts (1)" in text
    assert "ev-9" in text
    printed = json.loads(run("work", "show", "w/odd id", "--json"))
    assert printed == api.get("/api/v1/works/" + quote("w/odd id")).json()


def test_bad_filters_and_unknown_ids_are_command_errors():
    with pytest.raises(CommandError, match="state"):
        run("work", "list", "state=nope")
    with pytest.raises(CommandError):
        run("work", "show", "nothing")
    with pytest.raises(CommandError):
        run("workflow", "show", "wf-nothing")
    with pytest.raises(CommandError, match="after"):
        run("work", "list", "--after", "not-a-cursor")


def test_workflow_list_and_show_match_the_api(api, seeded):
    printed = json.loads(run("workflow", "list", "--json"))
    answer = api.get("/api/v1/workflows").json()
    answer.pop("next_url")
    assert printed == answer
    text = run("workflow", "list", "status=RUNNING")
    assert seeded.workflow_id in text
    shown = json.loads(run("workflow", "show", seeded.workflow_id, "--json"))
    assert shown == api.get(f"/api/v1/workflows/{seeded.workflow_id}").json()
    assert "Attempts (1)" in run("workflow", "show", seeded.workflow_id)

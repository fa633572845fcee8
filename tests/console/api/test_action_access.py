"""Who may act through the API: every persona and token kind against every action
(its dry run, which needs the same authority as its apply), with the store, the
audit and the API's replays unchanged after each request, and one plan more only
for an allowed dry run."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from django.test import Client

from console.api.models import ApiPlan
from tests.console.api.conftest import PERSONAS, TOKEN_KINDS, Seeded, caller, snapshot
from tests.console.conftest import DB

pytestmark = DB


def action_requests(s: Seeded) -> list[tuple[str, dict[str, object]]]:
    dry = {"dry_run": True}
    return [
        (f"/api/v1/actions/cancel/{quote(s.work_id)}", dry),
        (f"/api/v1/actions/retry/{quote(s.exhausted_id)}", dry),
        ("/api/v1/actions/bulk", dry | {"action": "retry", "filter": "is=exhausted"}),
        (f"/api/v1/actions/pause-workflow/{s.workflow_id}", dry),
        (f"/api/v1/actions/resume-workflow/{s.workflow_id}", dry),
        (f"/api/v1/actions/cancel-workflow/{s.workflow_id}", dry),
    ]


def expected(persona: str, token_kind: str) -> int:
    if persona == "anonymous" or token_kind in ("bad", "revoked"):
        return 401
    if token_kind == "none":
        return 403  # a session cookie alone, without its CSRF token
    if token_kind == "read" or persona == "viewer":
        return 403
    return 200


CASES = [(p, t) for p in PERSONAS for t in TOKEN_KINDS if p != "anonymous" or t in ("none", "bad")]


def post(client: Client, url: str, body: dict[str, object], **extra: str):
    return client.post(url, json.dumps(body), content_type="application/json", **extra)


@pytest.mark.parametrize(("persona", "token_kind"), CASES)
def test_every_action_answers_as_the_matrix_says_and_changes_nothing_else(
    django_user_model, seeded, persona, token_kind
):
    client = caller(django_user_model, persona, token_kind)
    for url, body in action_requests(seeded):
        before, plans = snapshot(), ApiPlan.objects.count()
        response = post(client, url, body)
        status = expected(persona, token_kind)
        assert response.status_code == status, (url, response.content)
        assert response["Content-Type"] == "application/json"
        assert response.json()["error" if status != 200 else "plan"]
        after = snapshot()
        assert after[:2] == before[:2], url  # the store: no Event, no Work changed
        assert after[2] == before[2]  # routed notes
        assert after[4] == before[4]  # replays
        assert ApiPlan.objects.count() == plans + (status == 200)


def test_a_signed_in_session_acts_with_its_csrf_token(django_user_model, seeded):
    client = caller(django_user_model, "operator", "none")
    client.get("/account/tokens")  # the page sets the CSRF cookie
    csrf = client.cookies["csrftoken"].value
    url = f"/api/v1/actions/cancel/{quote(seeded.work_id)}"
    response = post(client, url, {"dry_run": True}, HTTP_X_CSRFTOKEN=csrf)
    assert response.status_code == 200


def test_a_read_only_console_refuses_every_action(django_user_model, seeded, settings):
    settings.CONSOLE_READ_ONLY = True
    client = caller(django_user_model, "admin", "read-write")
    for url, body in action_requests(seeded):
        before = snapshot()
        response = post(client, url, body)
        assert response.status_code == 403
        assert "read-only" in response.json()["error"]["message"]
        assert snapshot() == before


def test_a_get_of_an_action_is_a_405(django_user_model, seeded):
    client = caller(django_user_model, "operator", "read-write")
    response = client.get(f"/api/v1/actions/cancel/{quote(seeded.work_id)}")
    assert response.status_code == 405
    assert response["Allow"] == "POST"

"""Who may read through the API: every persona and token kind against every read
endpoint, and nothing in the store or the console's audit changes on the way."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.console.api.conftest import PERSONAS, TOKEN_KINDS, Seeded, caller, snapshot
from tests.console.conftest import DB

pytestmark = DB


def read_urls(s: Seeded) -> list[str]:
    return [
        "/api/v1/works",
        f"/api/v1/works/{quote(s.work_id)}",
        "/api/v1/events",
        "/api/v1/workflows",
        f"/api/v1/workflows/{s.workflow_id}",
    ]


def expected(persona: str, token_kind: str) -> int:
    if token_kind in ("bad", "revoked"):
        return 401
    if persona == "anonymous":
        return 401
    return 200


CASES = [(p, t) for p in PERSONAS for t in TOKEN_KINDS if p != "anonymous" or t in ("none", "bad")]


@pytest.mark.parametrize(("persona", "token_kind"), CASES)
def test_every_read_endpoint_answers_as_the_matrix_says_and_changes_nothing(
    django_user_model, seeded, persona, token_kind
):
    client = caller(django_user_model, persona, token_kind)
    for url in read_urls(seeded):
        before = snapshot()
        response = client.get(url)
        assert response.status_code == expected(persona, token_kind), (url, response.content)
        assert response["Content-Type"] == "application/json"
        if response.status_code == 401:
            assert response.json()["error"]["message"]
            assert response["WWW-Authenticate"].startswith("Bearer")
        assert snapshot() == before, url


def test_a_bad_token_is_refused_even_beside_a_signed_in_session(django_user_model, seeded):
    client = caller(django_user_model, "operator", "none")
    response = client.get("/api/v1/works", HTTP_AUTHORIZATION="Bearer cc_nothing")
    assert response.status_code == 401


def test_a_basic_authorization_header_is_refused_with_a_message(django_user_model, seeded):
    client = caller(django_user_model, "viewer", "none")
    response = client.get("/api/v1/works", HTTP_AUTHORIZATION="Basic dXNlcjpwdw==")
    assert response.status_code == 401
    assert "Bearer" in response.json()["error"]["message"]


def test_a_deactivated_users_token_is_refused(django_user_model, seeded):
    client = caller(django_user_model, "operator", "read")
    django_user_model.objects.filter(username="operator").update(is_active=False)
    assert client.get("/api/v1/works").status_code == 401


def test_the_openapi_document_needs_no_sign_in(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert response.json()["openapi"].startswith("3.1")

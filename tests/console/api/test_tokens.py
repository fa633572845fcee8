"""API tokens: kept as a digest, shown once, listed on the user's page with their
last use, revocable by their owner only, and last use written at most once a minute."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone

from console.api.models import ApiToken
from console.api.tokens import mint
from tests.console.conftest import DB

pytestmark = DB


def test_only_a_digest_of_the_token_is_stored(bob):
    minted = mint(bob, "ci", ApiToken.READ)
    row = ApiToken.objects.get(pk=minted.token.pk)
    assert minted.secret not in (row.digest, row.prefix, row.name)
    assert row.digest == hashlib.sha256(minted.secret.encode()).hexdigest()
    assert minted.secret.startswith(row.prefix)
    assert len(minted.secret) >= 40


def test_the_page_shows_a_new_token_once_then_lists_it(as_bob):
    response = as_bob.post("/account/tokens", {"name": "deploy bot", "kind": "read-write"})
    assert response.status_code == 201
    assert response["Cache-Control"] == "no-store"
    row = ApiToken.objects.get()
    secret = response.context["minted"].secret
    assert secret.encode() in response.content
    listing = as_bob.get("/account/tokens")
    assert secret.encode() not in listing.content
    assert b"deploy bot" in listing.content
    assert row.prefix.encode() in listing.content
    assert b"never" in listing.content  # not used yet


def test_a_bad_name_or_kind_is_a_400_page(as_bob):
    assert as_bob.post("/account/tokens", {"name": "", "kind": "read"}).status_code == 400
    assert as_bob.post("/account/tokens", {"name": "x", "kind": "admin"}).status_code == 400
    assert not ApiToken.objects.exists()


def test_revoked_tokens_are_refused_and_only_the_owner_can_revoke(as_bob, alice, client):
    mine = mint(alice, "alice's", ApiToken.READ)
    assert as_bob.post(f"/account/tokens/{mine.token.pk}/revoke").status_code == 404
    headers = {"HTTP_AUTHORIZATION": f"Bearer {mine.secret}"}
    assert client.get("/api/v1/works", **headers).status_code == 200
    client.force_login(alice)
    assert client.post(f"/account/tokens/{mine.token.pk}/revoke").status_code == 302
    client.logout()
    assert client.get("/api/v1/works", **headers).status_code == 401
    assert b"revoked" in _page(client, alice).content


def _page(client, user):
    client.force_login(user)
    return client.get("/account/tokens")


def test_last_use_is_written_at_most_once_a_minute(bob, client, django_assert_num_queries):
    minted = mint(bob, "poller", ApiToken.READ)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {minted.secret}"}
    client.get("/api/v1/openapi.json", **headers)  # public: no token read
    assert ApiToken.objects.get().last_used_at is None
    client.get("/api/v1/works", **headers)
    first = ApiToken.objects.get().last_used_at
    assert first is not None
    client.get("/api/v1/works", **headers)
    assert ApiToken.objects.get().last_used_at == first
    ApiToken.objects.update(last_used_at=timezone.now() - timedelta(minutes=2))
    client.get("/api/v1/works", **headers)
    assert ApiToken.objects.get().last_used_at > first


@pytest.mark.parametrize(
    "header", ["Bearer ", "Bearer cc_", "Bearer " + "cc_" + "é" * 43, "Token x"]
)
def test_malformed_authorization_is_a_401(client, header):
    response = client.get("/api/v1/works", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json()["error"]["status"] == 401

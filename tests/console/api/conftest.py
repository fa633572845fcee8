"""Personas (as console/access.py defines them), their API tokens of each kind, a
seeded store, and a snapshot of everything a request could change."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from console.api.models import ApiPlan, ApiReplay, ApiToken
from console.api.tokens import mint, revoke
from console.models import RoutedActionNote
from storage import WorkQuery
from storage.default import default_store
from tests.console import factories as f
from tests.console import routedfactories as rf

PERSONAS = ("anonymous", "viewer", "operator", "admin")
TOKEN_KINDS = ("none", "bad", "revoked", "read", "read-write")
BAD_TOKEN = "cc_" + "x" * 43


@dataclass(frozen=True, slots=True)
class Seeded:
    work_id: str
    exhausted_id: str
    workflow_id: str


@pytest.fixture
def seeded() -> Seeded:
    """A Work with an attempt and Events, an exhausted Work, a running workflow."""
    f.work("w/one", keys=[("shop", "order 1")])
    f.event("e-1", work_id="w/one")
    f.exhausted("w/tired")
    admission, _ = rf.running()
    return Seeded("w/one", "w/tired", str(admission.receipt.workflow_id))


def persona_user(django_user_model, persona: str):
    """None for anonymous; a viewer (no group), an operator (the "operators" group the
    migrations grant Work and routed control), an admin (superuser)."""
    if persona == "anonymous":
        return None
    if persona == "admin":
        return django_user_model.objects.create_superuser(username="root", password="pw")
    user = django_user_model.objects.create_user(username=persona, password="pw")
    if persona == "operator":
        user.groups.add(Group.objects.get(name="operators"))
    return user


def caller(django_user_model, persona: str, token_kind: str) -> Client:
    """A client as ``persona`` with ``token_kind``: "none" is the session (signed in,
    CSRF enforced), any other sends only ``Authorization: Bearer``."""
    user = persona_user(django_user_model, persona)
    client = Client(enforce_csrf_checks=True)
    if token_kind == "none":
        if user is not None:
            client.force_login(user)
        return client
    if token_kind == "bad" or user is None:
        secret = BAD_TOKEN
    else:
        kind = ApiToken.READ_WRITE if token_kind in ("read-write", "revoked") else ApiToken.READ
        minted = mint(user, f"{token_kind} token", kind)
        secret = minted.secret
        if token_kind == "revoked":
            revoke(user, minted.token.pk)
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {secret}"
    return client


def snapshot() -> tuple[object, ...]:
    """What no refused request and no read may change: the store's newest Event and
    every Work's revision, the routed audit notes, the API's plans and replays."""

    def read(tx):
        newest = tx.find_events(limit=1, newest_first=True)
        works = tx.query_works(WorkQuery(limit=1000))
        return (
            newest[0].sequence if newest else 0,
            sorted((w.id, w.revision, w.state.value) for w in works),
        )

    return (
        *default_store().view(read),
        RoutedActionNote.objects.count(),
        ApiPlan.objects.count(),
        ApiReplay.objects.count(),
    )

"""Personas and a fresh store for every console test.

Tests run on the real SQLite test file with ``transaction=True`` on both aliases:
views read through the separate "view" connection, which would not see data inside
a test's uncommitted transaction.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Group

from console.access import OPERATORS_GROUP
from storage.default import reset_defaults

DB = pytest.mark.django_db(transaction=True, databases=["default", "view"])


@pytest.fixture(autouse=True)
def fresh_store(settings, tmp_path) -> Iterator[None]:
    """A store opened over this test's (flushed) database and artifacts in tmp_path."""
    settings.ARTIFACT_DIR = tmp_path / "artifacts"
    settings.ROUTED_STATE_DIR = tmp_path / "routed"
    reset_defaults()
    yield
    reset_defaults()


@pytest.fixture
def alice(django_user_model):
    """An operator: member of the "operators" group, not a superuser."""
    # Flushing between transactional tests removes the migration's group: recreate it.
    group, _ = Group.objects.get_or_create(name=OPERATORS_GROUP)
    user = django_user_model.objects.create_user(username="alice", password="password")
    user.groups.add(group)
    return user


@pytest.fixture
def bob(django_user_model):
    """A viewer: signed in, in no group."""
    return django_user_model.objects.create_user(username="bob", password="password")


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def as_bob(client, bob):
    client.force_login(bob)
    return client

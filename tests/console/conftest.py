"""Personas and a fresh store for every console test.

Tests run on the real SQLite test file with ``transaction=True`` on both aliases:
views read through the separate "view" connection, which would not see data inside
a test's uncommitted transaction.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Group, Permission

from console.access import WORK_CONTROL
from storage.default import reset_defaults
from tests.support.oidc import running_provider

DB = pytest.mark.django_db(transaction=True, databases=["default", "view"])


@pytest.fixture(autouse=True)
def fresh_store(settings, tmp_path) -> Iterator[None]:
    """A store opened over this test's database (the migrated template's copy) and
    artifacts in tmp_path."""
    settings.ARTIFACT_DIR = tmp_path / "artifacts"
    settings.ROUTED_STATE_DIR = tmp_path / "routed"
    reset_defaults()
    yield
    reset_defaults()


@pytest.fixture
def alice(django_user_model):
    """An operator of Work: member of the "operators" group, which holds the Work
    permission (``console.work_control``), not a superuser. Routed authority is given
    per test, as a test needs it."""
    # The migrations give "operators" the Work and the routed grants (each test starts
    # from the migrated database, tests/support/template_db.py): exactly the Work one.
    group, _ = Group.objects.get_or_create(name="operators")
    group.permissions.set([Permission.objects.get(codename=WORK_CONTROL.split(".", 1)[1])])
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


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory):
    """The test suite's OpenID Connect provider (tests/support/oidc.py), started once
    per session in its own process, with the console registered for the test client's
    callback (a browser test adds its live server's)."""
    with running_provider(tmp_path_factory.mktemp("oidc-provider")) as provider:
        provider.register_console("http://testserver/oidc/callback/")
        yield provider


@pytest.fixture
def oidc(settings, oidc_provider):
    """The console signing in through the test provider (local passwords still on)."""
    for name, value in oidc_provider.console_settings().items():
        setattr(settings, name, value)
    return oidc_provider


@pytest.fixture
def passwords_off(settings, oidc):
    """The provider as the only way in (CONDUIT_LOCAL_PASSWORDS=false): no
    ModelBackend, the login page without its password form."""
    settings.LOCAL_PASSWORDS = False
    settings.AUTHENTICATION_BACKENDS = [
        b for b in settings.AUTHENTICATION_BACKENDS if not b.endswith("ModelBackend")
    ]
    return oidc

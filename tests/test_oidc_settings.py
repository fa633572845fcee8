"""The OIDC settings (conduit/settings.py, docs/oidc.md): the group mapping's reader,
the claim readers, and which authentication backends each combination switches on."""

import json
import subprocess
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from conduit.env import env_group_map
from console.oidc.backend import claimed_username
from console.oidc.groups import claimed_groups, managed_groups, mapped_groups
from tests.support.settings_process import settings_process

PROVIDER = {
    "CONDUIT_OIDC_CLIENT_ID": "console",
    "CONDUIT_OIDC_CLIENT_SECRET": "s3cret",
    "CONDUIT_OIDC_AUTHORIZATION_ENDPOINT": "https://idp.example.com/authorize",
    "CONDUIT_OIDC_TOKEN_ENDPOINT": "https://idp.example.com/token",
    "CONDUIT_OIDC_USERINFO_ENDPOINT": "https://idp.example.com/userinfo",
    "CONDUIT_OIDC_JWKS_ENDPOINT": "https://idp.example.com/jwks",
}


def test_the_group_map_reads_pairs_and_repeated_provider_groups(monkeypatch):
    monkeypatch.setenv(
        "X_MAP", " ops = operators, ops=limit-amenders ,,cn=leads=limit-amenders,ops=operators"
    )

    assert env_group_map("X_MAP") == {
        "ops": ("operators", "limit-amenders"),
        "cn=leads": ("limit-amenders",),
    }


def test_an_unset_group_map_maps_nothing(monkeypatch):
    monkeypatch.delenv("X_MAP", raising=False)

    assert env_group_map("X_MAP") == {}


@pytest.mark.parametrize("raw", ["operators", "=operators", "ops=", "ops=operators,lonely"])
def test_a_malformed_group_map_names_the_variable_and_the_pair(monkeypatch, raw):
    monkeypatch.setenv("X_MAP", raw)

    with pytest.raises(ImproperlyConfigured, match="X_MAP"):
        env_group_map("X_MAP")


@pytest.mark.parametrize(
    ("claim", "groups"),
    [
        (["ops", "payroll"], {"ops", "payroll"}),
        ("ops", {"ops"}),
        (["ops", 7, None], {"ops"}),
        ({"ops": True}, set()),
        (None, set()),
    ],
)
def test_the_group_claim_is_a_list_or_one_name(settings, claim, groups):
    settings.OIDC_GROUPS_CLAIM = "roles"

    assert claimed_groups({"roles": claim}) == groups


def test_the_mapping_grants_the_console_groups_of_the_claimed_ones(settings):
    settings.OIDC_GROUPS_CLAIM = "groups"
    settings.OIDC_GROUP_MAP = {"ops": ("operators",), "leads": ("operators", "limit-amenders")}

    assert mapped_groups({"groups": ["leads", "payroll"]}) == {"operators", "limit-amenders"}
    assert mapped_groups({"groups": ["payroll"]}) == set()
    assert managed_groups() == {"operators", "limit-amenders"}


@pytest.mark.parametrize(
    ("value", "username"),
    [
        ("olga", "olga"),
        (" olga ", "olga"),
        ("", None),
        ("x" * 151, None),
        (7, None),
        ("a\x00", None),
    ],
)
def test_the_username_claim_must_be_a_usable_username(settings, value, username):
    settings.OIDC_USERNAME_CLAIM = "preferred_username"

    assert claimed_username({"preferred_username": value}) == username


def _backends(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import json; from django.conf import settings as s; "
        "print(json.dumps([s.AUTHENTICATION_BACKENDS, s.LOCAL_PASSWORDS, s.OIDC_ENABLED]))"
    )
    return settings_process(tmp_path, code, **env)


AXES = "axes.backends.AxesStandaloneBackend"
PASSWORDS = "django.contrib.auth.backends.ModelBackend"
OIDC = "console.oidc.backend.ConsoleOIDCBackend"


@pytest.mark.parametrize(
    ("env", "backends", "passwords", "oidc"),
    [
        ({}, [AXES, PASSWORDS], True, False),
        (PROVIDER, [AXES, PASSWORDS, OIDC], True, True),
        # No ModelBackend: no password authenticates anywhere (the admin's form included).
        (PROVIDER | {"CONDUIT_LOCAL_PASSWORDS": "false"}, [AXES, OIDC], False, True),
    ],
    ids=["passwords-only-by-default", "both", "provider-only"],
)
def test_the_settings_switch_the_backends_on(tmp_path, env, backends, passwords, oidc):
    result = _backends(tmp_path, **env)

    assert result.returncode == 0, result.stderr
    # axes stays first, as it asks: it refuses a locked-out pair before any backend runs.
    assert json.loads(result.stdout) == [backends, passwords, oidc]


def test_passwords_off_without_a_provider_refuses_to_start(tmp_path):
    result = _backends(tmp_path, CONDUIT_LOCAL_PASSWORDS="false")

    assert result.returncode != 0
    assert "CONDUIT_LOCAL_PASSWORDS=false needs an identity provider" in result.stderr


def test_a_provider_without_its_endpoints_refuses_to_start(tmp_path):
    result = _backends(tmp_path, CONDUIT_OIDC_CLIENT_ID="console")

    assert result.returncode != 0
    assert "CONDUIT_OIDC_TOKEN_ENDPOINT" in result.stderr
    assert "CONDUIT_OIDC_JWKS_ENDPOINT" in result.stderr

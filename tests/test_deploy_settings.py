"""Production settings behind a TLS proxy (issue 30): what the deployment variables
set, and ``manage.py check --deploy`` clean with them, each in a fresh process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management.utils import get_random_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent


def run(tmp_path: Path, args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """``python args`` from the project folder with only the given CONDUIT_* variables."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONDUIT_", "CONSOLE_")) and k != "DATABASE_URL"
    }
    clean |= {"CONDUIT_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "conduit.settings"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=BASE_DIR,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def production(**env: str) -> dict[str, str]:
    """The environment docs/deploy.md gives a console host behind nginx."""
    return {
        "CONDUIT_PRODUCTION": "true",
        "CONDUIT_SECRET_KEY": get_random_secret_key(),
        "CONDUIT_ALLOWED_HOSTS": "console.example.com",
        "CONDUIT_TRUSTED_PROXIES": "127.0.0.1,10.0.0.0/24",
        "CONDUIT_PROXY_SSL_HEADER": "true",
        "CONDUIT_CSRF_TRUSTED_ORIGINS": "https://console.example.com",
    } | env


def settings_of(tmp_path: Path, names: str, **env: str) -> dict[str, object]:
    code = (
        "import json; from django.conf import settings as s; print(json.dumps({k: getattr(s, k,"
        f" None) for k in {names.split()!r}}}, default=str))"
    )
    result = run(tmp_path, ["-c", code], **env)
    assert result.returncode == 0, result.stderr
    values: dict[str, object] = json.loads(result.stdout)
    return values


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"CONDUIT_HSTS_INCLUDE_SUBDOMAINS": "true", "CONDUIT_HSTS_PRELOAD": "true"},
        {"CONDUIT_TRUSTED_PROXIES": "", "CONDUIT_PROXY_SSL_HEADER": "false"},
    ],
    ids=["behind-nginx", "hsts-preload", "tls-in-gunicorn"],
)
def test_check_deploy_is_clean_in_production(tmp_path, env):
    result = run(
        tmp_path, ["manage.py", "check", "--deploy", "--fail-level", "DEBUG"], **production(**env)
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (" in result.stdout, result.stdout


def test_check_deploy_still_warns_about_what_production_does_not_decide(tmp_path):
    # The silenced reminders are exactly HSTS's subdomains and preload: a weak cookie
    # setting or a missing HSTS is still reported.
    result = run(
        tmp_path, ["manage.py", "check", "--deploy"], **production(CONDUIT_HSTS_SECONDS="0")
    )

    assert "security.W004" in result.stderr + result.stdout


def test_production_behind_a_proxy(tmp_path):
    values = settings_of(
        tmp_path,
        "TRUSTED_PROXIES SECURE_PROXY_SSL_HEADER CSRF_TRUSTED_ORIGINS SESSION_COOKIE_SECURE"
        " SESSION_COOKIE_HTTPONLY SESSION_COOKIE_SAMESITE CSRF_COOKIE_SECURE"
        " CSRF_COOKIE_HTTPONLY CSRF_COOKIE_SAMESITE SECURE_HSTS_SECONDS SECURE_SSL_REDIRECT"
        " AXES_CLIENT_IP_CALLABLE",
        **production(),
    )

    assert values == {
        "TRUSTED_PROXIES": ["127.0.0.1/32", "10.0.0.0/24"],
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "CSRF_TRUSTED_ORIGINS": ["https://console.example.com"],
        "SESSION_COOKIE_SECURE": True,
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "CSRF_COOKIE_SECURE": True,
        "CSRF_COOKIE_HTTPONLY": True,
        "CSRF_COOKIE_SAMESITE": "Lax",
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_SSL_REDIRECT": True,
        "AXES_CLIENT_IP_CALLABLE": "conduit.proxy.client_address",
    }


def test_development_trusts_no_proxy_and_no_forwarded_scheme(tmp_path):
    values = settings_of(tmp_path, "TRUSTED_PROXIES SECURE_PROXY_SSL_HEADER")

    assert values == {"TRUSTED_PROXIES": [], "SECURE_PROXY_SSL_HEADER": None}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CONDUIT_TRUSTED_PROXIES": "10.0.0.0/24,nginx"}, "CONDUIT_TRUSTED_PROXIES"),
        # Host bits under a prefix would trust more than was written.
        ({"CONDUIT_TRUSTED_PROXIES": "10.0.0.5/24"}, "'10.0.0.5/24'"),
        ({"CONDUIT_PROXY_SSL_HEADER": "true"}, "needs CONDUIT_TRUSTED_PROXIES"),
    ],
)
def test_a_proxy_setting_that_would_trust_too_much_stops_startup(tmp_path, env, message):
    result = run(tmp_path, ["-c", "from django.conf import settings; settings.DEBUG"], **env)

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr

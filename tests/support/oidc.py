"""The test suite's OpenID Connect provider (tests/support/oidc_provider/) as a running
process, and a sign-in through it without a browser.

``running_provider()`` makes an RS256 key, picks a free port and starts gunicorn on the
provider's WSGI module with a SQLite file of its own; ``Provider`` registers the
console as a client, sets users and their groups at the provider (its directory
endpoint), and gives the console's OIDC settings for it. ``sign_in_through()`` walks
the authorization code flow with Django's test client on the console side and
``requests`` on the provider side, the way a browser would, and returns the console's
answer to the callback.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID = "conduit-console"
# The provider's groups the tests map, and to which console groups.
GROUP_MAP = {"conduit-ops": ("operators",), "conduit-limits": ("limit-amenders",)}
START_TIMEOUT = 30.0  # s: gunicorn plus the provider's migrations on a loaded machine


@dataclass
class Provider:
    url: str
    admin_token: str
    client_secret: str

    def _post(self, path: str, body: dict[str, Any]) -> None:
        response = requests.post(
            urljoin(self.url, path),
            json=body,
            headers={"Authorization": f"Bearer {self.admin_token}"},
            timeout=10,
        )
        response.raise_for_status()

    def register_console(self, *redirect_uris: str) -> None:
        """The console as a confidential client allowed back to these callbacks."""
        self._post(
            "/directory/client/",
            {"client_id": CLIENT_ID, "secret": self.client_secret, "redirect_uris": redirect_uris},
        )

    def set_user(self, username: str, *groups: str, password: str = "provider-pw") -> None:
        """Create or change a provider user; ``groups`` replace the user's groups."""
        self._post(
            "/directory/user/",
            {
                "username": username,
                "password": password,
                "email": f"{username}@example.com",
                "groups": list(groups),
            },
        )

    def console_settings(self) -> dict[str, Any]:
        """The console's OIDC settings for this provider, as conduit.settings would
        build them from CONDUIT_OIDC_* variables."""
        return {
            "OIDC_ENABLED": True,
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": self.client_secret,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{self.url}/o/authorize/",
            "OIDC_OP_TOKEN_ENDPOINT": f"{self.url}/o/token/",
            "OIDC_OP_USER_ENDPOINT": f"{self.url}/o/userinfo/",
            "OIDC_OP_JWKS_ENDPOINT": f"{self.url}/o/.well-known/jwks.json",
            "OIDC_GROUP_MAP": GROUP_MAP,
            "OIDC_PROVIDER_NAME": "Test IdP",
            "AUTHENTICATION_BACKENDS": [
                "axes.backends.AxesStandaloneBackend",
                "django.contrib.auth.backends.ModelBackend",
                "console.oidc.backend.ConsoleOIDCBackend",
            ],
        }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running_provider(folder: Path) -> Iterator[Provider]:
    """The provider served by gunicorn in its own process until the block ends."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_file = folder / "provider-key.pem"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    admin_token = secrets.token_urlsafe(24)
    port = _free_port()
    # Nothing of the console's settings: the provider is another site entirely.
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CONDUIT_", "DJANGO_", "DATABASE_URL"))
    }
    env |= {
        "DJANGO_SETTINGS_MODULE": "tests.support.oidc_provider.settings",
        "OIDC_PROVIDER_DB": str(folder / "provider.sqlite3"),
        "OIDC_PROVIDER_KEY": str(key_file),
        "OIDC_PROVIDER_ADMIN_TOKEN": admin_token,
        "PYTHONPATH": str(ROOT),
    }
    log = (folder / "provider.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "tests.support.oidc_provider.wsgi:application",
         "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "4",
         "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the test OIDC provider exited: {_tail(folder)}")
            try:
                if requests.get(f"{url}/up/", timeout=5).ok:
                    break
            except requests.RequestException:
                pass  # not listening yet, or still migrating (gunicorn loads the app lazily)
            if time.monotonic() > deadline:
                raise RuntimeError(f"the test OIDC provider did not start: {_tail(folder)}")
            time.sleep(0.1)
        yield Provider(url=url, admin_token=admin_token, client_secret=secrets.token_urlsafe(24))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _tail(folder: Path) -> str:
    return (folder / "provider.log").read_text(errors="replace")[-2000:]


def provider_redirect(client: Any, provider: Provider, username: str) -> str:
    """Start a sign-in at the console and sign in at the provider as ``username``; the
    URL the provider sends the browser back to (the console's callback, with code and
    state), not yet followed."""
    start = client.get("/oidc/start/")
    assert start.status_code == 302, start
    session = requests.Session()
    url = start["Location"]
    for _ in range(10):
        response = session.get(url, allow_redirects=False, timeout=10)
        if urlsplit(url).path == "/login/" and response.status_code == 200:
            response = session.post(
                url,
                data={
                    "username": username,
                    "password": "provider-pw",
                    "csrfmiddlewaretoken": session.cookies["provider_csrftoken"],
                },
                headers={"Referer": url},
                allow_redirects=False,
                timeout=10,
            )
        assert response.status_code == 302, response.text[:500]
        url = urljoin(url, response.headers["Location"])
        if not url.startswith(provider.url):
            return url
    raise AssertionError("the provider never sent the browser back")


def sign_in_through(client: Any, provider: Provider, username: str) -> Any:
    """The console's answer to the provider's redirect after signing in as ``username``."""
    back = urlsplit(provider_redirect(client, provider, username))
    return client.get(f"{back.path}?{back.query}")

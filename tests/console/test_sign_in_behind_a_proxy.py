"""Sign-in throttling behind a reverse proxy (issue 30): failures count per (username,
real client address), the address taken from X-Forwarded-For only as the trusted
proxies set it (conduit/proxy.py)."""

from ipaddress import ip_network

import pytest
from django.conf import settings

from tests.console.conftest import DB

pytestmark = DB

LIMIT = settings.AXES_FAILURE_LIMIT
PROXY = "10.0.0.2"  # the nginx in front of the console, as gunicorn sees it


@pytest.fixture(autouse=True)
def behind_a_proxy(settings):
    settings.TRUSTED_PROXIES = [ip_network("10.0.0.0/29")]


def sign_in(client, password="password", *, peer=PROXY, forwarded_for=None):
    headers = {} if forwarded_for is None else {"HTTP_X_FORWARDED_FOR": forwarded_for}
    return client.post(
        "/accounts/login/",
        {"username": "alice", "password": password, "next": "/"},
        REMOTE_ADDR=peer,
        **headers,
    )


def fail(client, times, **kwargs):
    return [sign_in(client, "wrong", **kwargs).status_code for _ in range(times)]


def test_a_locked_out_address_leaves_the_user_free_from_another_behind_the_same_proxy(
    client, alice
):
    assert fail(client, LIMIT, forwarded_for="203.0.113.7")[-1] == 429
    assert sign_in(client, forwarded_for="203.0.113.7").status_code == 429

    # The operator, from the office, through the same nginx: the right password works.
    assert sign_in(client, forwarded_for="198.51.100.20").status_code == 302
    assert "_auth_user_id" in client.session


def test_the_address_is_the_right_most_one_the_trusted_proxies_did_not_write(client, alice):
    # The stranger writes its own X-Forwarded-For; nginx appends the address it saw.
    for forged in ["198.51.100.20", "10.0.0.1", "garbage", "198.51.100.20, 10.0.0.3"]:
        sign_in(client, "wrong", forwarded_for=f"{forged}, 203.0.113.7")
    fail(client, LIMIT - 4, forwarded_for="203.0.113.7")

    # Counted against the stranger's own address, whatever it claimed...
    assert sign_in(client, forwarded_for="203.0.113.7").status_code == 429
    # ...not against the address it named: the operator there signs in.
    assert sign_in(client, forwarded_for="198.51.100.20").status_code == 302


def test_two_trusted_proxies_in_a_row_pass_the_client_on(client, alice):
    # A load balancer (10.0.0.3) in front of nginx (10.0.0.2): both trusted.
    fail(client, LIMIT, forwarded_for="203.0.113.7, 10.0.0.3")

    assert sign_in(client, forwarded_for="203.0.113.7").status_code == 429
    assert sign_in(client, forwarded_for="198.51.100.20, 10.0.0.3").status_code == 302


def test_a_forged_forwarded_for_from_a_client_does_not_move_its_count(client, alice):
    # Not through a trusted proxy: its X-Forwarded-For is never read, so a new claim on
    # every try neither escapes its own count nor charges the addresses it names.
    claims = [f"198.51.100.{n}" for n in range(LIMIT)]
    codes = [
        sign_in(client, "wrong", peer="203.0.113.7", forwarded_for=c).status_code for c in claims
    ]

    assert codes[-1] == 429
    assert sign_in(client, peer="203.0.113.7", forwarded_for="192.0.2.99").status_code == 429
    assert sign_in(client, forwarded_for=claims[0]).status_code == 302


def test_without_trusted_proxies_the_connection_is_the_client(client, alice, settings):
    settings.TRUSTED_PROXIES = []
    fail(client, LIMIT, forwarded_for="203.0.113.7")

    # Everyone behind the unconfigured proxy is the proxy: the README says to set
    # CONDUIT_TRUSTED_PROXIES. A direct client is not affected.
    assert sign_in(client, forwarded_for="198.51.100.20").status_code == 429
    assert sign_in(client, peer="192.0.2.10").status_code == 302

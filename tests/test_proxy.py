"""conduit.proxy: the client's address and scheme behind trusted proxies only."""

from ipaddress import ip_network

import pytest
from django.test import RequestFactory

from conduit.proxy import ForwardedFromTrustedProxies, client_address

PROXIES = [ip_network("10.0.0.0/29"), ip_network("fd00::/64")]


@pytest.fixture(autouse=True)
def trusted(settings):
    settings.TRUSTED_PROXIES = PROXIES


def request(peer, forwarded_for=None, **meta):
    if forwarded_for is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded_for
    return RequestFactory().get("/", REMOTE_ADDR=peer, **meta)


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "client"),
    [
        # Not from a proxy: the connection, whatever the header says.
        ("203.0.113.7", "198.51.100.1", "203.0.113.7"),
        ("203.0.113.7", None, "203.0.113.7"),
        # From a proxy: the right-most entry that is not a proxy.
        ("10.0.0.2", "203.0.113.7", "203.0.113.7"),
        ("10.0.0.2", "198.51.100.1, 203.0.113.7", "203.0.113.7"),
        ("10.0.0.2", "198.51.100.1, 203.0.113.7, 10.0.0.3", "203.0.113.7"),
        ("10.0.0.2", " 203.0.113.7 ,10.0.0.3 ", "203.0.113.7"),
        # Every hop a proxy (a probe from inside): the left-most of them.
        ("10.0.0.2", "10.0.0.1, 10.0.0.3", "10.0.0.1"),
        # The proxy itself, without a header.
        ("10.0.0.2", None, "10.0.0.2"),
        ("10.0.0.2", "", "10.0.0.2"),
        # Not an address: nothing left of it is believed; the hop that passed it is.
        ("10.0.0.2", "203.0.113.7, garbage", "10.0.0.2"),
        ("10.0.0.2", "203.0.113.7, unknown, 10.0.0.3", "10.0.0.3"),
        ("10.0.0.2", "garbage, 203.0.113.7", "203.0.113.7"),
        # IPv6 proxies and clients, and IPv4 clients seen on an IPv6 socket.
        ("fd00::2", "2001:db8::7", "2001:db8::7"),
        ("::ffff:10.0.0.2", "203.0.113.7", "203.0.113.7"),
        ("10.0.0.2", "::ffff:203.0.113.7", "203.0.113.7"),
        ("fd00:0:0:1::2", "203.0.113.7", "fd00:0:0:1::2"),  # outside fd00::/64
        # Outside 10.0.0.0/29: not trusted.
        ("10.0.0.8", "203.0.113.7", "10.0.0.8"),
    ],
)
def test_client_address(peer, forwarded_for, client):
    assert client_address(request(peer, forwarded_for)) == client


def test_an_unreadable_connection_address_is_none():
    assert client_address(request("not-an-address", "203.0.113.7")) is None


def test_several_forwarded_for_headers_read_as_one_list():
    # WSGI joins repeated headers with commas, in the order they came.
    assert client_address(request("10.0.0.2", "198.51.100.1,203.0.113.7")) == "203.0.113.7"


@pytest.mark.parametrize(("peer", "secure"), [("10.0.0.2", True), ("203.0.113.7", False)])
def test_only_a_trusted_proxy_may_say_the_request_came_over_https(settings, peer, secure):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    seen = []
    middleware = ForwardedFromTrustedProxies(lambda r: seen.append(r.is_secure()))

    middleware(request(peer, HTTP_X_FORWARDED_PROTO="https"))

    assert seen == [secure]

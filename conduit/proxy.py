"""The client's address and scheme behind the reverse proxies the deployment trusts.

``settings.TRUSTED_PROXIES`` lists the networks of the proxies in front of the console
(``CONDUIT_TRUSTED_PROXIES``; empty by default: no proxy is trusted). What a request
says about where it came from (``X-Forwarded-For``, ``X-Forwarded-Proto``) is believed
only when the connection itself comes from one of them: anyone who reaches gunicorn
directly could send those headers. Each proxy appends the address of its own peer to
``X-Forwarded-For`` (nginx's ``$proxy_add_x_forwarded_for``), so the list is read from
the right: the right-most address that is not a trusted proxy is the client; whatever
stands to its left was written by that client and is never read.

Why not django-ipware, which django-axes can use: it checks the trailing entries of
the header against its proxy list but never the connection's own address, so a client
that reaches gunicorn directly can forge the whole chain; and it counts nginx's own
hop inside the header, where nginx does not put it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

from django.conf import settings
from django.http import HttpRequest, HttpResponse

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network

FORWARDED_FOR = "HTTP_X_FORWARDED_FOR"
FORWARDED_PROTO = "HTTP_X_FORWARDED_PROTO"


def _parse(text: str) -> Address | None:
    try:
        address = ip_address(text.strip())
    except ValueError:
        return None
    # An IPv4 client seen through an IPv6 socket (::ffff:192.0.2.1) is that IPv4 client.
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: Address, proxies: Iterable[Network]) -> bool:
    return any(address.version == net.version and address in net for net in proxies)


def from_trusted_proxy(request: HttpRequest) -> bool:
    """Whether the connection comes from a proxy the deployment trusts."""
    peer = _parse(request.META.get("REMOTE_ADDR", ""))
    return peer is not None and _trusted(peer, settings.TRUSTED_PROXIES)


def client_address(request: HttpRequest) -> str | None:
    """The client's address: the connection's own unless it comes from a trusted proxy,
    else the right-most ``X-Forwarded-For`` entry that is not a trusted proxy.

    django-axes counts sign-in failures per (username, this address)
    (``AXES_CLIENT_IP_CALLABLE``). An entry that is not an address stops the walk:
    the last trusted hop (the proxy that passed it on) stands for the client, as
    nothing left of it can be believed. None only when even the connection's address is
    unreadable, as axes itself would have it.
    """
    proxies: list[Network] = settings.TRUSTED_PROXIES
    peer = _parse(request.META.get("REMOTE_ADDR", ""))
    if peer is None or not _trusted(peer, proxies):
        return str(peer) if peer is not None else None
    client = peer
    # Several X-Forwarded-For headers arrive joined with commas (WSGI), in order.
    for entry in reversed(request.META.get(FORWARDED_FOR, "").split(",")):
        if not entry.strip():
            continue
        hop = _parse(entry)
        if hop is None:
            break
        client = hop
        if not _trusted(hop, proxies):
            break
    return str(client)


class ForwardedFromTrustedProxies:
    """Forget ``X-Forwarded-Proto`` on a request that no trusted proxy passed on.

    ``SECURE_PROXY_SSL_HEADER`` makes Django believe that header from anyone; a client
    reaching gunicorn directly could claim HTTPS over plain HTTP (no redirect, and the
    CSRF checks of a secure request). First in MIDDLEWARE, so nothing reads it before.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if FORWARDED_PROTO in request.META and not from_trusted_proxy(request):
            del request.META[FORWARDED_PROTO]
        return self.get_response(request)

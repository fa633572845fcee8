"""GET /metrics: Prometheus's text format, for a scraper the deployment allows.

Allowed: a request carrying ``Authorization: Bearer <METRICS_TOKEN>`` (when a token is
set), or one whose client address (``conduit.proxy.client_address``: behind a trusted
proxy, the address it forwarded) is in ``METRICS_NETWORKS`` (default: the loopback
addresses). Anyone else gets a 403 and nothing is read. The response is the store's
figures (``StoreCollector``, one View) and the processes' own counters: every gunicorn
worker's, summed, in prometheus_client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``
set), else this process's.
"""

from __future__ import annotations

import hmac
import os
from ipaddress import ip_address

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from conduit.proxy import client_address
from console.errors import storage_errors
from console.metrics.collector import StoreCollector
from console.metrics.instruments import OWN

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"


def allowed(request: HttpRequest) -> bool:
    token: str = settings.METRICS_TOKEN
    if token:
        scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            return True
    address = client_address(request)
    if address is None:
        return False
    client = ip_address(address)
    return any(client.version == net.version and client in net for net in settings.METRICS_NETWORKS)


def registry() -> CollectorRegistry:
    """A registry for one scrape: the store's figures and the processes' own metrics."""
    scrape = CollectorRegistry()
    scrape.register(StoreCollector())
    if os.environ.get(MULTIPROC_DIR):
        MultiProcessCollector(scrape)  # type: ignore[no-untyped-call]
    else:
        scrape.register(OWN)
    return scrape


@require_GET
@never_cache
@storage_errors
def metrics(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        return HttpResponse(
            "Forbidden: /metrics needs the bearer token or an allowed network "
            "(CONDUIT_METRICS_TOKEN, CONDUIT_METRICS_NETWORKS).\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)

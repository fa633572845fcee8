from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from console.errors import storage_errors
from console.http import HtmxHttpRequest


def page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A read-only console page: GET, signed in, storage errors as status pages, and
    ``Vary: HX-Request`` because the same URL answers a fragment to htmx."""
    return require_GET(login_required(storage_errors(vary_on_headers("HX-Request")(view))))


def wants_fragment(request: HtmxHttpRequest) -> bool:
    """htmx swapping a region (not restoring history, which needs the whole page)."""
    return bool(request.htmx) and not request.htmx.history_restore_request

"""The request type, the page decorator and the one fragment-or-page render of
console views (django-htmx's ``partial_rendering`` example, as one helper)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails

from console.errors import storage_errors


class HtmxHttpRequest(HttpRequest):
    """The request type of console views: django-htmx's middleware attaches `htmx`."""

    htmx: HtmxDetails


# A view as its decorators see it: file downloads stream, so not every answer is an
# HttpResponse.
View = Callable[..., HttpResponseBase]


def page(view: View) -> View:
    """A read-only console page: GET, signed in, storage errors as status pages, and
    ``Vary: HX-Request`` because the same URL answers a fragment to htmx."""
    return require_GET(login_required(storage_errors(vary_on_headers("HX-Request")(view))))


def wants_fragment(request: HtmxHttpRequest) -> bool:
    """htmx swapping a region (not restoring history, which needs the whole page)."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def local_next(request: HttpRequest) -> str:
    """The ``next`` a form or link carries (POST, else GET), when it is a path on this
    site ("/..."; never "//host", a scheme or a backslash trick), else ""."""
    raw = request.POST.get("next") or request.GET.get("next") or ""
    if not raw.startswith("/") or raw.startswith("//") or "\\" in raw or len(raw) > 2000:
        return ""
    if not url_has_allowed_host_and_scheme(raw, allowed_hosts={request.get_host()}):
        return ""
    return raw


def render_region(
    request: HtmxHttpRequest, template: str, region: str, context: Mapping[str, Any]
) -> HttpResponse:
    """The page, or only its ``{% partialdef region %}`` when htmx swaps that region."""
    if wants_fragment(request):
        return render(request, f"{template}#{region}", context)
    return render(request, template, context)


def by_method(*, get: View, post: View) -> View:
    """One URL, one view per method: the confirmation (GET) and the action (POST) stay
    two small functions while old forms and bookmarks keep their address. Each view
    carries its own decorators; anything but GET or POST is a 405."""

    def dispatch(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        view = {"GET": get, "POST": post}.get(request.method or "")
        if view is None:
            return HttpResponseNotAllowed(["GET", "POST"])
        return view(request, *args, **kwargs)

    return dispatch

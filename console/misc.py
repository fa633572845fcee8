from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.templatetags.static import static
from django.utils.cache import patch_cache_control
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from console.polling import CHOICES, COOKIE
from console.theme import THEME_COOKIE, THEMES, theme_response


@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness for `make run` and load balancers: no login, no database."""
    return HttpResponse("ok", content_type="text/plain")


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers, bookmark and feed tools ask for /favicon.ico whatever a page's <link>
    says; each ask was a 404 in the log. Redirect to the static icon, whose URL carries
    its hash, and let clients keep the redirect for a day (a deploy may change it)."""
    response = HttpResponseRedirect(static("favicon.svg"))
    patch_cache_control(response, public=True, max_age=86400)
    return response


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: Django's own page carries an inline style that our CSP blocks,
    leaving a bare "403 Forbidden". Most often a form was open across a sign-in, a
    sign-out or a server restart, so its token is stale: say so and link back."""
    back = request.META.get("HTTP_REFERER", "")
    if not url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure()):
        back = "/"
    return render(request, "403_csrf.html", {"reason": reason, "back": back}, status=403)


def _back(request: HttpRequest) -> str:
    """The form's ``next``, when it is a path of ours; else the Work list. A bare
    redirect() would take "foo" or "a:b" for a view name."""
    target = request.POST.get("next", "")
    if not target.startswith("/") or not url_has_allowed_host_and_scheme(
        target, {request.get_host()}, request.is_secure()
    ):
        return "/"
    return target


def _remember(request: HttpRequest, response: HttpResponse, name: str, value: str) -> None:
    response.set_cookie(
        name,
        value,
        max_age=365 * 86400,
        samesite="Lax",
        httponly=True,
        secure=request.is_secure(),
    )


@require_POST
@login_required
def poll_interval(request: HttpRequest) -> HttpResponse:
    """The interval picker: remember the choice in a cookie, go back where we were."""
    raw = request.POST.get("every", "")
    response = HttpResponseRedirect(_back(request))
    if raw.isascii() and raw.isdigit() and int(raw) in CHOICES:
        _remember(request, response, COOKIE, raw)
    return response


@require_POST
def theme(request: HttpRequest) -> HttpResponse:
    """The theme button: remember light, dark or system in a cookie. No login: the
    sign-in page has the button too, and a colour choice reveals nothing. Without JS
    the form posts and comes back to the page; console.js posts it in the background
    (HX-Request) and gets a 204, having already switched the page itself."""
    choice = request.POST.get("theme", "")
    if choice not in THEMES:
        return HttpResponse("Unknown theme.", status=400, content_type="text/plain")
    response = theme_response(request, _back(request))
    _remember(request, response, THEME_COOKIE, choice)
    return response

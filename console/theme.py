"""The colour theme: light, dark or system (follow the device), kept in a cookie and
read by the server, so each page is rendered in its theme (``<html data-theme>``)
with no flash of the other one before a script could run."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

THEME_COOKIE = "console_theme"
THEMES = ("system", "light", "dark")  # the button's cycle, in this order
DEFAULT = "system"
LABELS = {"system": "System theme", "light": "Light theme", "dark": "Dark theme"}


def theme_of(request: HttpRequest) -> str:
    raw = request.COOKIES.get(THEME_COOKIE, "")
    return raw if raw in THEMES else DEFAULT


def next_theme(current: str) -> str:
    return THEMES[(THEMES.index(current) + 1) % len(THEMES)]


def theme_response(request: HttpRequest, target: str) -> HttpResponse:
    """A background post from console.js needs no page; a plain form goes back."""
    if request.headers.get("HX-Request"):
        return HttpResponse(status=204)
    return HttpResponseRedirect(target)

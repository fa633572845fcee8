"""Live updates: the interval picker's cookie and the cheap "unchanged" answer.

A polling region sends the stamp (``<latest sequence>.<store version>``) it was
rendered from; when the store has not changed since, the view answers 204 after
reading only the stamp, and htmx leaves the region alone.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

COOKIE = "console_poll"
CHOICES = (0, 2, 5, 15, 60)  # seconds; 0 is "off"
DEFAULT = 5


def poll_seconds(request: HttpRequest) -> int:
    raw = request.COOKIES.get(COOKIE, "")
    return int(raw) if raw.isdigit() and int(raw) in CHOICES else DEFAULT


def seen_stamp(request: HttpRequest) -> str:
    """The stamp a poll carries; "" for any other request (which always renders)."""
    if not request.headers.get("HX-Request"):
        return ""
    return request.GET.get("stamp", "")


def unchanged() -> HttpResponse:
    """htmx does not swap a 204; HX-Reswap says the same for any other client."""
    response = HttpResponse(status=204)
    response["HX-Reswap"] = "none"
    return response

"""A database that cannot be written outside storage's own writes is a 503, not a 500.

Storage translates its driver errors to ``Unavailable`` (a 503 page, console.errors).
Django's own tables are written elsewhere: sign-in updates the session, ``last_login``
and django-axes' failure count. On a full disk or a read-only data folder those writes
raise ``OperationalError``; the operator should learn that the console is unavailable
and why, as an action would tell them.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.middleware.gzip import GZipMiddleware

from console.errors import error_page


class DatabaseUnavailable:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not isinstance(exc, OperationalError):
            return None
        message = (
            f"The console's database cannot be written ({exc}); nothing was changed. "
            "Try again once the disk has room and the data folder is writable."
        )
        return error_page(request, 503, "Database unavailable", message)


class RefuseNul:
    """A NUL character anywhere in a request (path, query, form, cookie) is a 400.

    No stored ID or text may hold one (PostgreSQL text cannot), so nothing it names can
    exist; passed on, it reached PostgreSQL as a driver error (a 5xx) through a lookup,
    a filter or Django's own session read. Placed before the session middleware.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if _has_nul(request):
            message = "The request holds a NUL character, which no ID or text may contain."
            return error_page(request, 400, "Invalid request", message)
        return self.get_response(request)


def _has_nul(request: HttpRequest) -> bool:
    if "\x00" in request.path:
        return True
    if any("\x00" in k or "\x00" in v for k, v in request.COOKIES.items()):
        return True
    for data in (request.GET, request.POST if request.method == "POST" else None):
        if data is not None and any(
            "\x00" in key or any("\x00" in v for v in values) for key, values in data.lists()
        ):
            return True
    return False


class CompressPages(GZipMiddleware):
    """Django's gzip (with its BREACH mitigation: up to 100 random bytes in each gzip
    header) for pages, fragments and polls' 200s; never for a streamed response.

    The streamed ones are artifact downloads: an executor's bytes sent exactly as
    stored, with the Content-Length their reference records (compressing a stream drops
    it). Static files never get here: WhiteNoise, above in MIDDLEWARE, answers them with
    the ``.br``/``.gz`` copies made at collectstatic. Bodies under 200 bytes (a poll's
    bodiless 204) are left alone by Django already. Why compressing HTML is safe enough
    here: console/README.md, "Compression".
    """

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if response.streaming:
            return response
        return super().process_response(request, response)

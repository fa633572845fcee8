"""A database that cannot be used outside storage's own calls is a 503, not a 500.

Storage translates its driver errors to ``Unavailable`` (a 503 page, console.errors).
Django's own tables are read and written elsewhere: every signed-in request reads the
session and the user, sign-in writes the session, ``last_login`` and django-axes'
failure count. On a full disk, a read-only data folder (where SQLite cannot even open
a database in WAL mode without its -shm file) or a server that is down or refuses
writes, those raise ``OperationalError`` (or a read-only SQLSTATE); the operator should
learn that the console is unavailable and why, on the console's own page.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import AnonymousUser
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.middleware.gzip import GZipMiddleware

from console.api.http import API_PREFIX, problem
from console.errors import error_page


class DatabaseUnavailable:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not _unavailable(exc):
            return None
        message = (
            f"The console's database cannot be used ({exc}); nothing was changed. "
            "Try again once the database is reachable, the disk has room and the data "
            "folder is writable."
        )
        try:
            return error_page(request, 503, "Database unavailable", message)
        except DatabaseError:
            # The page reads the signed-in user (its name, role, the nav), which needs
            # the database too: when that is what failed, it is drawn as for a visitor.
            request.user = AnonymousUser()
            return error_page(request, 503, "Database unavailable", message)


def _unavailable(exc: Exception) -> bool:
    """The database could not be reached, opened or written: a full disk, a read-only
    file or folder, a server down or restarting, or one that refuses writes (SQLSTATE
    25006, a read-only transaction or a standby). Not a bug in a query."""
    if isinstance(exc, OperationalError | InterfaceError):
        return True
    return isinstance(exc, DatabaseError) and getattr(exc.__cause__, "sqlstate", None) == "25006"


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
            if request.path.startswith(API_PREFIX):
                return problem(400, message)  # the API answers errors in JSON
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

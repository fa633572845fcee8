"""Storage errors become HTTP responses here, and only here.

Every console view is wrapped in ``storage_errors``: a ``NotFound`` is a 404 page, an
``Invalid`` a 400, a ``Conflict`` (or ``Fenced``) a 409, a ``ReadOnly`` a 403, an
``Unavailable`` a 503 and a record this code cannot read (``Corrupt``, ``RecordsNewer``)
a 409, each rendered with the error's message so an operator knows what happened.
Anything else propagates (Django's 500 page and the log).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from storage import (
    Conflict,
    Corrupt,
    Fenced,
    Invalid,
    NotFound,
    ReadOnly,
    RecordsNewer,
    StorageError,
    Unavailable,
)

# Most specific first: ArtifactMissing is both an ArtifactError and a NotFound.
STATUS: tuple[tuple[type[StorageError], int, str], ...] = (
    (NotFound, 404, "Not found"),
    (Invalid, 400, "Invalid request"),
    (Conflict, 409, "Conflict"),
    (Fenced, 409, "Conflict"),
    (ReadOnly, 403, "Read-only"),
    (Unavailable, 503, "Storage unavailable"),
    # Stored state this code cannot read: the request is fine, the record is not.
    (Corrupt, 409, "Corrupt record"),
    (RecordsNewer, 409, "Records newer than this console"),
)


def error_page(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    context = {"status": status, "title": title, "message": message}
    response = render(request, "console/error.html", context, status=status)
    if status == 503:
        response["Retry-After"] = "5"
    return response


def storage_errors(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            return view(request, *args, **kwargs)
        except StorageError as exc:
            for cls, status, title in STATUS:
                if isinstance(exc, cls):
                    return error_page(request, status, title, str(exc))
            raise

    return wrapper

"""How every API endpoint answers: who is asking, may they, and errors as JSON.

``api_view`` authenticates by ``Authorization: Bearer <token>`` (console.api.tokens)
or, without that header, by the browser's session. A request carrying a token is
exempt from CSRF (a token is not sent by a browser on its own, so a forged page
cannot use it); a session-only request is checked for CSRF as any form is, so a
cookie alone never acts. With ``act=perm`` it is an action: a read-only token is
refused, then the one access rule (``console.access.may``: the permission, and
``CONSOLE_READ_ONLY``). Errors are ``{"error": {"status", "message", "fields"}}``:
401 unauthenticated, 403 refused, 404/400/409/503 from storage's error root (the
same table as the pages, ``console.errors.STATUS``), 400 for a bad filter.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

from console.access import WHAT, may
from console.api.models import ApiToken
from console.api.tokens import authenticate
from console.errors import STATUS
from console.urlstate import FilterError
from storage import StorageError

SAFE = ("GET", "HEAD", "OPTIONS")
API_PREFIX = "/api/"


class ApiError(Exception):
    def __init__(self, status: int, message: str, fields: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.fields = fields or {}


class ApiRequest(HttpRequest):
    api_token: ApiToken | None


def api_user(request: HttpRequest) -> User:
    """The request's user, whom ``api_view`` has authenticated."""
    user = request.user
    if not isinstance(user, User):
        raise ApiError(401, "Authentication required.")
    return user


def problem(status: int, message: str, fields: dict[str, str] | None = None) -> JsonResponse:
    body = {"error": {"status": status, "message": message, "fields": fields or {}}}
    response = JsonResponse(body, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="conduit-console"'
    return response


def ok(body: dict[str, Any], status: int = 200) -> JsonResponse:
    return JsonResponse(body, status=status, json_dumps_params={"ensure_ascii": False})


type ApiFunc = Callable[..., HttpResponse]


def _csrf_refusal(request: HttpRequest) -> str | None:
    """Django's own CSRF check, for a session-only unsafe request."""
    checker = CsrfViewMiddleware(lambda r: HttpResponse())
    checker.process_request(request)
    refused = checker.process_view(request, lambda r: HttpResponse(), (), {})
    if refused is None:
        return None
    return "CSRF check failed: send an API token, or the session's CSRF token."


def who(request: HttpRequest) -> JsonResponse | None:
    """Authenticate the request (see the module); a 401/403 answer, or None."""
    request.api_token = None  # type: ignore[attr-defined]
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            return problem(401, "Authorization must be 'Bearer <token>'.")
        token = authenticate(raw.strip())
        if token is None:
            return problem(401, "Unknown, revoked or malformed API token.")
        request.user = token.user
        request.api_token = token  # type: ignore[attr-defined]
        return None
    if not request.user.is_authenticated or not request.user.is_active:
        return problem(401, "Authentication required: send 'Authorization: Bearer <token>'.")
    if request.method not in SAFE:
        refused = _csrf_refusal(request)
        if refused:
            return problem(403, refused)
    return None


def refused_action(request: HttpRequest, perm: str) -> JsonResponse | None:
    token: ApiToken | None = getattr(request, "api_token", None)
    if token is not None and not token.may_act:
        return problem(403, "This API token is read-only; actions need a read-write token.")
    if not may(request, perm):
        if settings.CONSOLE_READ_ONLY:
            return problem(403, "The console is in read-only mode (CONSOLE_READ_ONLY).")
        return problem(403, f"Your account may not {WHAT.get(perm, perm)}.")
    return None


def api_view(*methods: str, act: str = "") -> Callable[[ApiFunc], ApiFunc]:
    """An API endpoint answering ``methods`` (GET when none); ``act``: the permission
    an action needs."""
    allowed = methods or ("GET",)

    def decorate(view: ApiFunc) -> ApiFunc:
        @csrf_exempt  # checked in ``who`` for session-only requests
        @wraps(view)
        def endpoint(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in allowed:
                response = problem(405, f"{request.method} is not allowed here.")
                response["Allow"] = ", ".join(allowed)
                return response
            refused = who(request) or (refused_action(request, act) if act else None)
            if refused is not None:
                return refused
            try:
                return view(request, *args, **kwargs)
            except ApiError as exc:
                return problem(exc.status, exc.message, exc.fields)
            except FilterError as exc:
                return problem(400, "Invalid query parameters.", exc.errors)
            except StorageError as exc:
                for cls, status, _title in STATUS:
                    if isinstance(exc, cls):
                        return problem(status, str(exc))
                raise

        return endpoint

    return decorate

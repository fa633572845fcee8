"""Who may do what in the console.

Viewers are any active, signed-in user; operators are superusers or members of the
Django Group "operators" (created by migration 0001). ``settings.CONSOLE_READ_ONLY``
turns every operator into a viewer: actions are hidden and refused server-side.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

OPERATORS_GROUP = "operators"


def is_operator(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Superuser or member of the "operators" group. One query for a non-superuser,
    remembered on the user object for the rest of the request."""
    if not user.is_authenticated or not user.is_active:
        return False
    if getattr(user, "is_superuser", False):
        return True
    cached = getattr(user, "_console_is_operator", None)
    if cached is None:
        # PermissionsMixin's ``groups``: the stubs type the user as AbstractBaseUser.
        cached = user.groups.filter(name=OPERATORS_GROUP).exists()  # type: ignore[attr-defined]
        setattr(user, "_console_is_operator", cached)  # noqa: B010 (a per-request memo)
    return bool(cached)


def can_act(request: HttpRequest) -> bool:
    """Whether this request may see and use operator actions; cached on the request."""
    cached = getattr(request, "_console_can_act", None)
    if cached is None:
        cached = not settings.CONSOLE_READ_ONLY and is_operator(request.user)
        request._console_can_act = cached  # type: ignore[attr-defined]
    return bool(cached)


def refusal(request: HttpRequest) -> HttpResponse | None:
    """The 403 page for a request that may not act, or None when it may."""
    if settings.CONSOLE_READ_ONLY:
        message = (
            "The console is in read-only mode (CONSOLE_READ_ONLY is set): operator "
            "actions are switched off for everyone."
        )
    elif not is_operator(request.user):
        message = (
            "Your account can view the console but not act on Work. Ask an administrator "
            f'to add you to the "{OPERATORS_GROUP}" group.'
        )
    else:
        return None
    context = {"status": 403, "title": "Action not allowed", "message": message}
    return render(request, "console/error.html", context, status=403)


def operator_required(
    view: Callable[..., HttpResponseBase],
) -> Callable[..., HttpResponseBase]:
    """Refuse (403 page) unless the user is an operator and the console is writable.
    Place under ``login_required`` so anonymous visitors are sent to sign in first."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        refused = refusal(request)
        if refused is not None:
            return refused
        return view(request, *args, **kwargs)

    return wrapper

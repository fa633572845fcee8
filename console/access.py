"""Who may do what in the console: one model, Django permissions, for every action.

Viewers are any active, signed-in user. Each operator action needs one permission
(``console.<codename>``, declared on ``console.models.RoutedActionNote``):

- ``WORK_CONTROL``: cancel and retry Work, one or in bulk;
- ``ROUTED_CONTROL``: the routed-run spec's ``runs:control`` (pause, resume, cancel,
  restart, continue a workflow; deployment status; alias repoints);
- ``ROUTED_AMEND_LIMITS``: ``runs:amend_limits`` (raise a workflow's ceilings).

Groups grant them (``GROUP_PERMISSIONS``, assigned by console migrations 0002 and
0004): "operators" hold Work and routed control, "limit-amenders" hold the limit
amendments; superusers hold every permission. An administrator may grant any of them
to a user or another group in the admin. ``settings.CONSOLE_READ_ONLY`` takes every
permission away from everyone: actions are hidden and refused server-side.

Views use ``@action_view(perm)``; a view whose permission depends on its input calls
``refusal(request, perm)`` itself. Templates ask ``may(request, perm)``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group, Permission
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from console.errors import storage_errors
from storage.routed.enums import AuthorityScope

WORK_CONTROL = "console.work_control"
ROUTED_CONTROL = "console.routed_control"
ROUTED_AMEND_LIMITS = "console.routed_amend_limits"

# What each permission lets a user do, for the 403 page.
WHAT = {
    WORK_CONTROL: "cancel or retry Work",
    ROUTED_CONTROL: "control routed runs (runs:control)",
    ROUTED_AMEND_LIMITS: "raise a workflow's limits (runs:amend_limits)",
}
# The routed-run spec's authority scopes, as the permission that holds each.
SCOPE_PERMISSION = {
    AuthorityScope.CONTROL: ROUTED_CONTROL,
    AuthorityScope.AMEND_LIMITS: ROUTED_AMEND_LIMITS,
}
# The groups the console's migrations create and what they grant (migration 0004
# keeps a frozen copy: a migration never imports this module).
GROUP_PERMISSIONS = {
    "operators": (WORK_CONTROL, ROUTED_CONTROL),
    "limit-amenders": (ROUTED_AMEND_LIMITS,),
}

type ViewFunc = Callable[..., HttpResponseBase]


def holds(user: AbstractBaseUser | AnonymousUser, perm: str) -> bool:
    """An active user with ``perm`` (directly, through a group, or as a superuser)."""
    if perm not in WHAT or not user.is_authenticated or not user.is_active:
        return False
    if getattr(user, "is_superuser", False):
        return True
    return perm in _action_perms(user)


def _action_perms(user: AbstractBaseUser) -> frozenset[str]:
    """The action permissions ``user`` holds, directly or through its groups: one query
    (Django's ``has_perm`` asks two, user's and groups', and every page asks this),
    remembered on the user object for the rest of the request."""
    cached: frozenset[str] | None = getattr(user, "_console_action_perms", None)
    if cached is None:
        codenames = [p.split(".", 1)[1] for p in WHAT]
        rows = (
            Permission.objects.filter(Q(user=user) | Q(group__user=user))
            .filter(content_type__app_label="console", codename__in=codenames)
            .values_list("codename", flat=True)
            .distinct()
        )
        cached = frozenset(f"console.{codename}" for codename in rows)
        setattr(user, "_console_action_perms", cached)  # noqa: B010 (a per-request memo)
    return cached


def may(request: HttpRequest, perm: str) -> bool:
    """Whether this request may see and use the actions ``perm`` guards."""
    return not settings.CONSOLE_READ_ONLY and holds(request.user, perm)


def refusal(request: HttpRequest, perm: str) -> HttpResponse | None:
    """The 403 page for a request that may not use ``perm``, or None when it may."""
    if settings.CONSOLE_READ_ONLY:
        message = (
            "The console is in read-only mode (CONSOLE_READ_ONLY is set): operator "
            "actions are switched off for everyone."
        )
    elif not holds(request.user, perm):
        message = f"Your account can view the console but not {WHAT.get(perm, perm)}. "
        message += _who_grants(perm)
    else:
        return None
    context = {"status": 403, "title": "Action not allowed", "message": message}
    return render(request, "console/error.html", context, status=403)


def action_view(perm: str) -> Callable[[ViewFunc], ViewFunc]:
    """An operator action's view: signed in (else the login page), ``perm`` on a
    writable console (else 403), storage errors as status pages."""

    def decorate(view: ViewFunc) -> ViewFunc:
        inner = storage_errors(view)

        @wraps(view)
        def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            refused = refusal(request, perm)
            if refused is not None:
                return refused
            return inner(request, *args, **kwargs)

        return login_required(guarded)

    return decorate


def _who_grants(perm: str) -> str:
    """Which groups hold ``perm`` now (one query, on the refusal path only)."""
    app_label, codename = perm.split(".", 1)
    groups = sorted(
        Group.objects.filter(
            permissions__content_type__app_label=app_label, permissions__codename=codename
        ).values_list("name", flat=True)
    )
    if not groups:
        return f'Ask an administrator for the "{codename}" permission.'
    names = " or ".join(f'"{name}"' for name in groups)
    return f"Ask an administrator to add you to the {names} group."

"""Who may act on routed runs: the spec's authority scopes as Django permissions.

``runs:control`` is ``console.routed_control`` and ``runs:amend_limits`` is
``console.routed_amend_limits`` (on ``console.models.RoutedActionNote``), granted
through groups by migration 0002: "operators" hold runs:control, "limit-amenders"
hold runs:amend_limits; superusers hold both. ``CONSOLE_READ_ONLY`` takes both away
from everyone, as it takes the Work actions.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from storage.routed.enums import AuthorityScope

PERMISSION = {
    AuthorityScope.CONTROL: "console.routed_control",
    AuthorityScope.AMEND_LIMITS: "console.routed_amend_limits",
}
GROUP = {AuthorityScope.CONTROL: "operators", AuthorityScope.AMEND_LIMITS: "limit-amenders"}


def holds(user: AbstractBaseUser | AnonymousUser, scope: AuthorityScope) -> bool:
    """The user holds ``scope`` (Django caches a user's permissions after one query)."""
    if scope not in PERMISSION or not user.is_authenticated or not user.is_active:
        return False
    # PermissionsMixin's has_perm: the stubs type the user as AbstractBaseUser.
    return bool(user.has_perm(PERMISSION[scope]))  # type: ignore[attr-defined]


def may(request: HttpRequest, scope: AuthorityScope) -> bool:
    return not settings.CONSOLE_READ_ONLY and holds(request.user, scope)


def scopes_of(request: HttpRequest) -> frozenset[AuthorityScope]:
    """Every scope this request may use (for showing buttons)."""
    return frozenset(s for s in PERMISSION if may(request, s))


def refusal(request: HttpRequest, scope: AuthorityScope) -> HttpResponse | None:
    """The 403 page for a request that may not use ``scope``, or None when it may."""
    if settings.CONSOLE_READ_ONLY:
        message = (
            "The console is in read-only mode (CONSOLE_READ_ONLY is set): operator "
            "actions are switched off for everyone."
        )
    elif not holds(request.user, scope):
        message = (
            f"This needs the {scope.value} authority. Ask an administrator to add you "
            f'to the "{GROUP[scope]}" group.'
        )
    else:
        return None
    context = {"status": 403, "title": "Action not allowed", "message": message}
    return render(request, "console/error.html", context, status=403)

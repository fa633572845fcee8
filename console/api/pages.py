"""The user's own page of API tokens: the list (name, kind, created, last used,
revoked), a form to make one (its secret shown once, in the answer to that POST and
never again: only its digest is kept), and revoke. Every user manages only their own."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from console.api.models import ApiToken
from console.api.tokens import LAST_USE_EVERY, mint, revoke, tokens_of
from console.errors import error_page

TEMPLATE = "console/api/tokens.html"


def _context(request: HttpRequest, **extra: object) -> dict[str, object]:
    return {
        "tokens": tokens_of(request.user),  # type: ignore[arg-type]
        "kinds": ApiToken.KINDS,
        "last_use_minutes": int(LAST_USE_EVERY.total_seconds() // 60),
        **extra,
    }


@login_required
@require_http_methods(["GET", "POST"])
def token_page(request: HttpRequest) -> HttpResponse:
    """GET lists the user's tokens; POST makes one and shows its secret, once."""
    if request.method == "GET":
        return render(request, TEMPLATE, _context(request))
    try:
        minted = mint(request.user, request.POST.get("name", ""), request.POST.get("kind", ""))  # type: ignore[arg-type]
    except ValueError as exc:
        return render(request, TEMPLATE, _context(request, error=str(exc)), status=400)
    # Rendered, not redirected: the secret must not travel in a URL or a session.
    response = render(request, TEMPLATE, _context(request, minted=minted), status=201)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def revoke_token(request: HttpRequest, pk: int) -> HttpResponse:
    if not revoke(request.user, pk):  # type: ignore[arg-type]
        return error_page(request, 404, "Not found", "You have no live API token with that number.")
    messages.success(request, "Token revoked: requests with it are refused from now on.")
    return redirect("api_tokens")

"""The login page and the two OIDC views (start, callback).

The library's views are wrapped, not copied: the start view is served only when a
provider is configured (else 404); the callback turns every way a sign-in can fail
into a status page: a state or nonce that does not match this browser's session or a
token that does not verify (signature, expiry, audience) is a 400, a code the provider
refuses or a user it may not sign in a 403, a provider that does not answer a 502.
Never a 500: each is something a browser or a provider can make happen.
"""

from __future__ import annotations

import logging

import jwt
import requests
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_GET
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from console.errors import error_page

log = logging.getLogger(__name__)


def login(request: HttpRequest) -> HttpResponseBase:
    """Django's login view with the provider's button beside the form; with local
    passwords off, the button alone, and a password POST is refused (403)."""
    context = {
        "oidc_enabled": settings.OIDC_ENABLED,
        "oidc_provider_name": settings.OIDC_PROVIDER_NAME,
        "local_passwords": settings.LOCAL_PASSWORDS,
    }
    if settings.LOCAL_PASSWORDS:
        return auth_views.LoginView.as_view(extra_context=context)(request)
    if request.method not in ("GET", "HEAD"):
        return error_page(
            request,
            403,
            "Password sign-in is off",
            f"This console signs in through {settings.OIDC_PROVIDER_NAME} only.",
        )
    context["next"] = request.GET.get("next", "")
    return render(request, "registration/login.html", context)


def admin_login(request: HttpRequest) -> HttpResponseBase:
    """The admin's own login form while passwords are on; the console's page (the
    provider only) when they are off, so that form is no way around it."""
    if settings.LOCAL_PASSWORDS:
        return admin.site.login(request)
    return login(request)


@require_GET
def start(request: HttpRequest) -> HttpResponseBase:
    """Off to the provider's authorization endpoint, with state, nonce and PKCE
    challenge kept in the session."""
    if not settings.OIDC_ENABLED:
        raise Http404("No identity provider is configured.")
    response: HttpResponseBase = OIDCAuthenticationRequestView.as_view()(request)
    return response


class _Callback(OIDCAuthenticationCallbackView):  # type: ignore[misc]  # untyped library
    def login_failure(self) -> HttpResponse:
        return error_page(
            self.request,
            403,
            "Sign-in did not succeed",
            f"{settings.OIDC_PROVIDER_NAME} did not sign you in to this console: the "
            "sign-in was cancelled or refused, took too long, or your account here is "
            "disabled. Start again from the sign-in page.",
        )


@require_GET
def callback(request: HttpRequest) -> HttpResponseBase:
    """Back from the provider: the library checks state, nonce, PKCE and the ID token;
    every failure is a 4xx page (module docstring), a silent provider a 502."""
    if not settings.OIDC_ENABLED:
        raise Http404("No identity provider is configured.")
    try:
        response: HttpResponseBase = _Callback.as_view()(request)
    except (SuspiciousOperation, jwt.PyJWTError) as exc:
        log.warning("OIDC callback refused: %s", exc)
        return error_page(
            request,
            400,
            "Sign-in could not be checked",
            "This answer from the identity provider does not belong to this browser's "
            "sign-in (its state, nonce or token did not match). Start again from the "
            "sign-in page.",
        )
    except requests.HTTPError as exc:
        # The token endpoint refused the code (reused, expired, forged) or the
        # userinfo endpoint the token: the provider's no.
        log.warning("OIDC provider refused the sign-in: %s", exc)
        return _Callback(request=request).login_failure()
    except requests.RequestException as exc:
        # Unreachable, timed out, or an answer that is not JSON.
        log.error("OIDC provider unusable: %s", exc)
        return error_page(
            request,
            502,
            "Identity provider unavailable",
            f"{settings.OIDC_PROVIDER_NAME} did not answer usably. Try again shortly.",
        )
    return response

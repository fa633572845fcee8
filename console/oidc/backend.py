"""mozilla-django-oidc's backend with the console's rules for who a provider user is.

A provider user is the console user whose username equals the username claim
(``settings.OIDC_USERNAME_CLAIM``, ``preferred_username`` by default), not the one
with the same e-mail address (the library's default): addresses change and repeat, a
directory's login name is what the company keeps unique. The first sign-in creates
the user, with no usable password; every sign-in copies the e-mail address and
re-syncs the mapped groups (groups.py), so the provider stays the authority on who
may act. The library checks the ID token's signature (the provider's JWKS), its
expiry, the nonce and PKCE; ``verify_token`` adds the audience.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import SuspiciousOperation
from django.db.models import QuerySet
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from console.oidc.groups import sync_groups

# Django's own limit on User.username.
USERNAME_MAX = 150


def claimed_username(claims: Mapping[str, Any]) -> str | None:
    """The username claim when it is a usable username, else None."""
    value = claims.get(settings.OIDC_USERNAME_CLAIM)
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or len(value) > USERNAME_MAX or "\x00" in value:
        return None
    return value


class ConsoleOIDCBackend(OIDCAuthenticationBackend):  # type: ignore[misc]  # untyped library
    """Sign-in by the provider's username claim, with group re-sync (module docstring)."""

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        # The library checks signature, expiry and nonce but not the audience (its
        # jwt.decode passes verify_aud=False): a token the provider made for another
        # client is not a sign-in to this one.
        payload: dict[str, Any] = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or settings.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("ID token audience is not this console")
        return payload

    def verify_claims(self, claims: Mapping[str, Any]) -> bool:
        # Refused (the callback answers 403) rather than a user made from nothing.
        return claimed_username(claims) is not None

    def filter_users_by_claims(self, claims: Mapping[str, Any]) -> QuerySet[AbstractUser]:
        users: QuerySet[AbstractUser] = get_user_model().objects.all()
        username = claimed_username(claims)
        return users.none() if username is None else users.filter(username=username)

    def create_user(self, claims: Mapping[str, Any]) -> AbstractUser:
        # No password: create_user() without one sets an unusable password.
        username = claimed_username(claims)
        if username is None:  # verify_claims refused it before; never reached
            raise SuspiciousOperation("OIDC claims hold no usable username")
        user: AbstractUser = get_user_model().objects.create_user(username, email=_email(claims))
        sync_groups(user, claims)
        return user

    def update_user(self, user: AbstractUser, claims: Mapping[str, Any]) -> AbstractUser:
        email = _email(claims)
        if email and email != user.email:
            user.email = email
            user.save(update_fields=["email"])
        sync_groups(user, claims)
        return user


def _email(claims: Mapping[str, Any]) -> str:
    value = claims.get("email")
    return value.strip()[:254] if isinstance(value, str) else ""

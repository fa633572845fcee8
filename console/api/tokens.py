"""Per-user API tokens: minted (the secret shown once), found by prefix and checked
by digest, revoked, and their last use recorded at most once a minute.

A token reads ``cc_`` and 43 URL-safe characters (32 random bytes). The row keeps
its first ``PREFIX_LEN`` characters, to find it, and the hex SHA-256 of the whole
token, compared in constant time; a plain hash is enough because the secret has 256
bits of entropy (a slow password hash protects guessable secrets, not random ones).

Last use: a request with a token writes ``last_used_at`` only when the stored time is
older than ``LAST_USE_EVERY``, with a conditional UPDATE (one row of the console's
own table, never the Conduit store). So a GET through the API writes at most one
console row a minute per token, and only the token row: a busy script's reads do
not turn into a stream of writes, and the page's "last used" is right to the minute.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from console.api.models import PREFIX_LEN, ApiToken

SCHEME = "cc_"
LAST_USE_EVERY = timedelta(minutes=1)
NAME_MAX = 80
# A token is SCHEME plus token_urlsafe(32) (43 characters); anything longer is not one.
TOKEN_MAX = 64


@dataclass(frozen=True, slots=True)
class Minted:
    token: ApiToken
    secret: str  # the whole token, shown once


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def mint(user: User, name: str, kind: str) -> Minted:
    """A new token of ``user``; ``ValueError`` for a bad name or kind."""
    name = name.strip()
    if not name or len(name) > NAME_MAX or "\x00" in name:
        raise ValueError(f"Give the token a name of 1 to {NAME_MAX} characters.")
    if kind not in (ApiToken.READ, ApiToken.READ_WRITE):
        raise ValueError("A token is read-only or read-write.")
    for _ in range(3):  # a prefix collision (54 random bits) is near impossible
        secret = SCHEME + secrets.token_urlsafe(32)
        try:
            with transaction.atomic():
                row = ApiToken.objects.create(
                    user=user,
                    name=name,
                    kind=kind,
                    prefix=secret[:PREFIX_LEN],
                    digest=digest(secret),
                )
        except IntegrityError:
            continue
        return Minted(row, secret)
    raise RuntimeError("could not mint a token with a unique prefix")


def authenticate(secret: str) -> ApiToken | None:
    """The live token ``secret`` is, with its (active) user; None otherwise. One query,
    plus the last-use write at most once a minute."""
    if not secret.startswith(SCHEME) or len(secret) > TOKEN_MAX or not secret.isascii():
        return None
    row = (
        ApiToken.objects.select_related("user")
        .filter(prefix=secret[:PREFIX_LEN], revoked_at__isnull=True)
        .first()
    )
    if row is None or not hmac.compare_digest(row.digest, digest(secret)):
        return None
    if not row.user.is_active:
        return None
    _touch(row)
    return row


def _touch(row: ApiToken) -> None:
    now = timezone.now()
    stale = now - LAST_USE_EVERY
    if row.last_used_at is not None and row.last_used_at > stale:
        return
    # Conditional: of two requests in the same minute, one writes.
    ApiToken.objects.filter(pk=row.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lte=stale)
    ).update(last_used_at=now)
    row.last_used_at = now


def revoke(user: User, pk: int) -> bool:
    """Revoke ``user``'s token ``pk``; False when it has none such still live."""
    updated = ApiToken.objects.filter(pk=pk, user=user, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    return updated == 1


def tokens_of(user: User) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=user))

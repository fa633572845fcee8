"""The API's own rows, in the console's tables (never the Conduit store's): per-user
tokens, the plans a dry-run hands out, and each action's first answer by its client's
idempotency key (docs/api.md).

A token is kept as a digest: ``sha256(secret)`` of a 32-byte random secret, with its
first characters (``prefix``, not secret: shown on the user's page) to find the row.
Whoever reads the table cannot sign in with what it holds.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

PREFIX_LEN = 12


class ApiToken(models.Model):
    READ = "read"
    READ_WRITE = "read-write"
    KINDS = [(READ, "Read-only"), (READ_WRITE, "Read-write")]

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=80)
    kind = models.CharField(max_length=16, choices=KINDS, default=READ)
    prefix = models.CharField(max_length=PREFIX_LEN, unique=True)
    digest = models.CharField(max_length=64)  # hex sha256 of the whole secret
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        default_permissions = ()
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.kind}) of {self.user_id}"

    @property
    def may_act(self) -> bool:
        return self.kind == self.READ_WRITE


class ApiPlan(models.Model):
    """What a dry-run found, for its apply: the action, its target and what it acts on
    (a workflow's generation, a bulk run's Work IDs). Used once, by its user, before
    ``expires_at``."""

    key = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    action = models.CharField(max_length=32)
    target = models.TextField()
    detail = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    # The idempotency key of the apply that used it: the same key may apply it again
    # (a retry after a lost answer), another may not.
    used_key = models.CharField(max_length=64, blank=True)

    class Meta:
        default_permissions = ()

    def __str__(self) -> str:
        return f"plan {self.action} {self.target}"


class ApiReplay(models.Model):
    """An applied action's answer under its client's idempotency key (per user): the
    same key again returns it and does nothing; the same key for another request is a
    422. ``request`` is the digest of what was asked (method, path, body)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    key = models.CharField(max_length=64)
    request = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField()
    body = models.JSONField()
    token_prefix = models.CharField(max_length=PREFIX_LEN, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        default_permissions = ()
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="api_replay_user_key"),
        ]

    def __str__(self) -> str:
        return f"replay {self.key} ({self.status})"

"""A saved view is a named Work-list filter (its canonical query string); a
Preference holds one user's choices, the Work list's hidden columns for now.

Both live in the console app's tables beside Django's users, not in the Conduit
store: they describe how people look at the Work, not the Work.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

NAME_MAX = 80
QUERY_MAX = 2000


class SavedView(models.Model):
    """A personal view (``team`` false) is listed and editable by its owner only; a
    team view is listed for everyone and editable by holders of
    ``console.manage_team_views``, its ``owner`` being who saved it last."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_views"
    )
    team = models.BooleanField(default=False)
    name = models.CharField(max_length=NAME_MAX)
    query = models.CharField(max_length=QUERY_MAX, blank=True)  # without the "?"
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name", "id")
        permissions = [
            ("manage_team_views", "Can save, rename and delete the team's saved views"),
        ]
        constraints = [
            # A name means one view to its reader: unique per owner among personal
            # views, and unique among team views.
            models.UniqueConstraint(
                fields=("owner", "name"), condition=Q(team=False), name="saved_view_personal_name"
            ),
            models.UniqueConstraint(
                fields=("name",), condition=Q(team=True), name="saved_view_team_name"
            ),
        ]

    def __str__(self) -> str:
        return f"{'team' if self.team else self.owner_id}: {self.name}"


class Preference(models.Model):
    """One row per user, created on their first choice."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="console_preference"
    )
    # Hidden rather than shown, so a column added later appears for everyone.
    hidden_work_columns = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"preferences of {self.user_id}"

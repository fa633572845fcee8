"""The console's own rows (never storage's): what an operator said when acting on a
routed run, and the permissions that authorise every operator action (Work and routed:
``console.access``).

``RoutedActionNote`` is the audit of ``console.actions.routed``: the routed-run
records keep the actor and the idempotency key, but a ``ControlRequest`` (verbatim
from the spec) has no reason, and a deployment status change has no actor; the note
keeps both, one row per form submission and workflow (its token is unique, which is also what
makes a resubmitted deployment or alias form a no-op).

Saved views and preferences (``console/saved/models.py``) and the API's tokens, plans
and replays (``console/api/models.py``) are defined by feature and imported here,
because Django looks for an app's models in ``<app>.models``.
"""

from __future__ import annotations

from django.db import models

from console.api.models import ApiPlan, ApiReplay, ApiToken
from console.saved.models import Preference, SavedView

__all__ = [
    "ApiPlan",
    "ApiReplay",
    "ApiToken",
    "Preference",
    "RoutedActionNote",
    "SavedView",
]


class RoutedActionNote(models.Model):
    token = models.CharField(max_length=200, unique=True)
    action = models.CharField(max_length=32)
    # A workflow, deployment or alias: whatever the action was about.
    target = models.CharField(max_length=200, db_index=True)
    actor = models.CharField(max_length=200)
    reason = models.TextField()
    detail = models.TextField()
    done = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The console's action permissions (console/access.py), on its one model of
        # actions; none of Django's defaults: a note is written by actions, never edited.
        default_permissions = ()
        permissions = [
            ("work_control", "Work actions: cancel and retry (one Work or in bulk)"),
            ("routed_control", "runs:control (pause, resume, cancel, restart, continue)"),
            ("routed_amend_limits", "runs:amend_limits (raise a workflow's ceilings)"),
        ]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.action} {self.target} by {self.actor}"

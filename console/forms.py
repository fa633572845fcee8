from __future__ import annotations

from django import forms
from django.core.validators import RegexValidator

from console.actions import REASON_MAX


class ActionForm(forms.Form):
    """The confirmation of an operator action: a reason, and the idempotency token the
    page was rendered with (a double submit carries the same token)."""

    reason = forms.CharField(
        max_length=REASON_MAX,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Why? Kept in the audit Event."}),
        error_messages={"required": "Give a reason: it is recorded with the action."},
    )
    token = forms.CharField(
        widget=forms.HiddenInput,
        validators=[RegexValidator(r"^[A-Za-z0-9_-]{16,64}$", "Reload the page and try again.")],
    )

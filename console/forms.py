from __future__ import annotations

from typing import Any

from django import forms
from django.core.validators import RegexValidator

from console.actions.common import REASON_MAX, TOKEN

# The reasons operators give most: one click in the compact confirmation, and the
# free text adds to (or replaces) it. Kept short so the choice reads at a glance.
PRESET_REASONS = (
    "Cause fixed upstream",
    "Transient failure (network, timeout, rate limit)",
    "Fix deployed",
    "No longer needed",
    "Duplicate",
)


class ActionForm(forms.Form):
    """The confirmation of an operator action: a reason (a preset, free text, or both:
    "<preset>: <text>"), and the idempotency token the page was rendered with (a
    double submit carries the same token)."""

    preset = forms.ChoiceField(
        choices=[("", "(none)")] + [(p, p) for p in PRESET_REASONS],
        required=False,
        widget=forms.RadioSelect,
        error_messages={"invalid_choice": "Pick one of the listed reasons."},
    )
    reason = forms.CharField(
        max_length=REASON_MAX,
        strip=True,
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Why? Kept in the audit Event."}),
    )
    token = forms.CharField(
        widget=forms.HiddenInput,
        # The token rule of console.actions.common, which the action checks again.
        validators=[RegexValidator(TOKEN, "Reload the page and try again.")],
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        preset, text = data.get("preset", ""), data.get("reason", "")
        if "reason" in self.errors or "preset" in self.errors:
            return data
        if not preset and not text:
            self.add_error("reason", "Give a reason: it is recorded with the action.")
            return data
        combined = f"{preset}: {text}" if preset and text else preset or text
        if len(combined) > REASON_MAX:
            self.add_error("reason", f"The reason is at most {REASON_MAX} characters.")
        data["reason"] = combined
        return data

"""The confirmation forms of routed-run actions: the Work actions' reason and token
(``console.forms.ActionForm``) plus the generation the page was rendered at, and what
restart (exact deployment or an alias) and limit amendments ask for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django import forms

from console.forms import ActionForm

# An alias name as the store accepts it (check_text) is bounded text; 200 keeps a
# hostile value out of the store call and the page.
REF_MAX = 200
EXACT = ""


class ControlForm(ActionForm):
    generation = forms.IntegerField(min_value=0, widget=forms.HiddenInput)


class RestartForm(ControlForm):
    target_ref = forms.ChoiceField(required=False, widget=forms.RadioSelect, label="Restart on")

    def __init__(self, *args: Any, aliases: Sequence[tuple[str, str]] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [(EXACT, "the exact deployment it ran on"), *aliases]
        cast(forms.ChoiceField, self.fields["target_ref"]).choices = choices


class AmendForm(ControlForm):
    """Absolute new ceilings, prefilled with the current ones: a field left at its
    current value is unchanged; the store refuses any decrease."""

    max_active_duration_ms = forms.IntegerField(min_value=1, label="Max active time (ms)")
    attempt_lease_ms = forms.IntegerField(min_value=1, label="Attempt lease (ms)")
    max_llm_spend = forms.DecimalField(
        min_value=0, max_digits=20, decimal_places=6, required=False, label="Max LLM spend"
    )


class AliasForm(ActionForm):
    generation = forms.IntegerField(min_value=0, widget=forms.HiddenInput)
    deployment_id = forms.ChoiceField(label="Point at")

    def __init__(
        self, *args: Any, deployments: Sequence[tuple[str, str]] = (), **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["deployment_id"]).choices = list(deployments)


class DeploymentForm(ActionForm):
    generation = forms.IntegerField(min_value=0, widget=forms.HiddenInput)

"""The buttons of the routed-run controls region (``console/routed/_controls.html``):
the actions the workflow map allows from the status, of those the request's user may
use (its authority scopes, read once per request and kept on it)."""

from __future__ import annotations

from typing import Any

from django import template

from console.routed.actions import RoutedAction
from console.routed.authority import scopes_of
from console.routed.previews import allowed_actions
from storage.routed.enums import WorkflowStatus

register = template.Library()


@register.simple_tag(takes_context=True)
def routed_buttons(
    context: template.Context, status: WorkflowStatus, cancel_desired: Any = False
) -> list[RoutedAction]:
    request = context.get("request")
    if request is None:
        return []
    scopes = getattr(request, "_routed_scopes", None)
    if scopes is None:
        scopes = scopes_of(request)
        request._routed_scopes = scopes  # a list page asks once per row
    return [
        act
        for act in allowed_actions(status, cancel_desired=bool(cancel_desired))
        if act.authority in scopes
    ]

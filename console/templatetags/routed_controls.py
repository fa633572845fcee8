"""The buttons of the routed-run controls region (``console/routed/_controls.html``):
the actions the workflow map allows from the status, of those the request's user may
use (its authority scopes, read once per request and kept on it)."""

from __future__ import annotations

from typing import Any

from django import template
from django.http import HttpRequest

from console.routed.actions import RoutedAction, notes_for
from console.routed.authority import scopes_of
from console.routed.previews import allowed_actions
from storage.routed.enums import AuthorityScope, WorkflowStatus

register = template.Library()


def _scopes(request: HttpRequest) -> frozenset[AuthorityScope]:
    scopes = getattr(request, "_routed_scopes", None)
    if scopes is None:
        scopes = scopes_of(request)
        request._routed_scopes = scopes  # type: ignore[attr-defined]  # once per request, not per row
    return frozenset(scopes)


@register.simple_tag(takes_context=True)
def routed_buttons(
    context: template.Context, status: WorkflowStatus, cancel_desired: Any = False
) -> list[RoutedAction]:
    request = context.get("request")
    if request is None:
        return []
    scopes = _scopes(request)
    return [
        act
        for act in allowed_actions(status, cancel_desired=bool(cancel_desired))
        if act.authority in scopes
    ]


@register.simple_tag(takes_context=True)
def routed_may(context: template.Context, scope: str) -> bool:
    """Whether the request may use ``scope`` ("runs:control", "runs:amend_limits")."""
    request = context.get("request")
    return request is not None and any(s.value == scope for s in _scopes(request))


@register.simple_tag
def routed_reasons(workflow_id: str) -> dict[str, str]:
    """The operators' reasons for a workflow's control requests, by idempotency key
    (the form token the request was keyed by): one query."""
    return {n.token.split("/", 1)[0]: n.reason for n in notes_for(workflow_id)}

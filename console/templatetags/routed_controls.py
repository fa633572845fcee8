"""The buttons of the routed-run controls region (``console/routed/_controls.html``):
the actions the workflow map allows from the status, of those the user may use."""

from __future__ import annotations

from collections.abc import Collection

from django import template

from console.routed.actions import RoutedAction
from console.routed.previews import allowed_actions
from storage.routed.enums import AuthorityScope, WorkflowStatus

register = template.Library()


@register.simple_tag
def routed_buttons(
    status: WorkflowStatus, scopes: Collection[AuthorityScope], cancel_desired: bool = False
) -> list[RoutedAction]:
    return [
        act
        for act in allowed_actions(status, cancel_desired=cancel_desired)
        if act.authority in scopes
    ]

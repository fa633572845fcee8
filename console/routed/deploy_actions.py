"""Deployment deactivate/activate and alias repoint, one route and one view each:
confirmation (GET) and action (POST), with the generation the page was read at
(compare-and-set: a stale form is the confirmation re-read, 409, "changed since you
loaded it"). They change what future invocations admit, so they need runs:control."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from console.access import ROUTED_CONTROL, action_view
from console.actions import routed as a
from console.actions.common import new_token
from console.http import HtmxHttpRequest, local_next
from storage.default import default_routed_store
from storage.routed.enums import DeploymentStatus
from storage.routed.ids import DeploymentID
from storage.routed.records import AliasRecord, DeploymentRecord, Stored
from storage.routed.rules import RoutedRules
from storage.routed.rules.base import check_text

from .forms import AliasForm, DeploymentForm

TEMPLATE = "console/routed/confirm_deploy.html"


@require_http_methods(["GET", "POST"])
@action_view(ROUTED_CONTROL)
def deactivate_deployment(request: HtmxHttpRequest, deployment_id: str) -> HttpResponse:
    """Admission refuses new invocations of the deployment; live runs go on."""
    return _deployment_status(request, a.RoutedAction.DEACTIVATE, deployment_id)


@require_http_methods(["GET", "POST"])
@action_view(ROUTED_CONTROL)
def activate_deployment(request: HtmxHttpRequest, deployment_id: str) -> HttpResponse:
    return _deployment_status(request, a.RoutedAction.ACTIVATE, deployment_id)


def _deployment_status(
    request: HtmxHttpRequest, act: a.RoutedAction, deployment_id: str
) -> HttpResponse:
    dep = default_routed_store().view(lambda r: r.get_deployment(DeploymentID.parse(deployment_id)))
    want = DeploymentStatus.ACTIVE if act is a.RoutedAction.ACTIVATE else DeploymentStatus.INACTIVE
    refusal_text = f"it is already {want.name.lower()}" if dep.record.status is want else ""
    if request.method != "POST":
        form = DeploymentForm(initial={"token": new_token(), "generation": dep.generation})
        return _page(request, act, form, deployment=dep, refusal=refusal_text)
    form = DeploymentForm(request.POST)
    if not form.is_valid():
        return _page(request, act, form, deployment=dep, status=400)
    do = a.do_activate_deployment if act is a.RoutedAction.ACTIVATE else a.do_deactivate_deployment
    try:
        result = do(
            default_routed_store(),
            username=request.user.get_username(),
            deployment_id=deployment_id,
            **_common(form),
        )
    except a.StaleForm as exc:
        fresh = default_routed_store().view(lambda r: r.get_deployment(dep.record.deployment_id))
        form = DeploymentForm(initial={"token": new_token(), "generation": fresh.generation})
        return _page(request, act, form, deployment=fresh, status=409, stale=str(exc))
    return _done(request, result)


@require_http_methods(["GET", "POST"])
@action_view(ROUTED_CONTROL)
def repoint_alias(request: HtmxHttpRequest, alias: str) -> HttpResponse:
    """Point an alias at another deployment (what it admits from now on)."""
    check_text("alias", alias)  # a NUL or a lone surrogate is a 400, not a driver error
    current, deployments = default_routed_store().view(lambda r: _alias_and_targets(r, alias))
    choices = [
        (d.deployment_id, f"{d.package_name} {d.package_version} ({d.deployment_id})")
        for d in deployments
        if d.deployment_id != current.record.target_deployment_id
    ]
    act = a.RoutedAction.REPOINT_ALIAS
    if request.method != "POST":
        initial = {"token": new_token(), "generation": current.generation}
        form = AliasForm(initial=initial, deployments=choices)
        return _page(request, act, form, alias=current)
    form = AliasForm(request.POST, deployments=choices)
    if not form.is_valid():
        return _page(request, act, form, alias=current, status=400)
    try:
        result = a.do_repoint_alias(
            default_routed_store(),
            username=request.user.get_username(),
            alias=current.record.alias,
            deployment_id=form.cleaned_data["deployment_id"],
            **_common(form),
        )
    except a.StaleForm as exc:
        fresh = default_routed_store().view(lambda r: r.resolve_alias(current.record.alias))
        initial = {"token": new_token(), "generation": fresh.generation}
        form = AliasForm(initial=initial, deployments=choices)
        return _page(request, act, form, alias=fresh, status=409, stale=str(exc))
    return _done(request, result)


def _alias_and_targets(
    r: RoutedRules, alias: str
) -> tuple[Stored[AliasRecord], list[DeploymentRecord]]:
    return r.resolve_alias(alias), [s.record for s in r.list_deployments()]


def _common(form: forms.Form) -> dict[str, Any]:
    data = form.cleaned_data
    return {"generation": data["generation"], "reason": data["reason"], "token": data["token"]}


def _done(request: HtmxHttpRequest, result: a.RoutedResult) -> HttpResponse:
    messages.add_message(
        request, messages.SUCCESS if result.done else messages.WARNING, result.message
    )
    return redirect(local_next(request) or request.path)


def _page(
    request: HtmxHttpRequest,
    act: a.RoutedAction,
    form: forms.Form,
    *,
    status: int = 200,
    stale: str = "",
    refusal: str = "",
    **context: Any,
) -> HttpResponse:
    context |= {
        "action": act,
        "form": form,
        "stale": stale,
        "refusal": refusal,
        "next": local_next(request),
    }
    return render(request, TEMPLATE, context, status=status)

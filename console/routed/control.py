"""The confirmation views of routed-run actions: GET shows what the action will do
(the compact form in place for htmx, the full page without JavaScript), POST does it
through ``console.routed.actions``.

Both refuse (403) a user without the action's authority and every user under
``CONSOLE_READ_ONLY``; a stale form is answered with the confirmation re-read and
"changed since you loaded it" (409), so the operator sees what changed before trying
again.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from console.access import SCOPE_PERMISSION, refusal
from console.actions import new_token
from console.errors import storage_errors
from console.http import HtmxHttpRequest, local_next, wants_fragment
from storage.default import default_routed_store

from . import actions as a
from .forms import EXACT, AmendForm, ControlForm, RestartForm
from .previews import Preview, read_preview

FULL = "console/routed/confirm.html"
INLINE = "console/routed/_confirm_inline.html"
_BY_SLUG = {act.value: act for act in a.WORKFLOW_ACTIONS}
_DO = {
    a.RoutedAction.PAUSE: a.do_pause_workflow,
    a.RoutedAction.RESUME: a.do_resume_workflow,
    a.RoutedAction.CANCEL: a.do_cancel_workflow,
    a.RoutedAction.CONTINUE: a.do_continue_workflow,
}


def workflow_url(workflow_id: str) -> str:
    """Where a workflow's actions return to: its page."""
    return reverse("routed_workflow", kwargs={"workflow_id": workflow_id})


@require_http_methods(["GET", "POST"])
@login_required
@storage_errors
def workflow_action(request: HtmxHttpRequest, action: str, workflow_id: str) -> HttpResponse:
    act = _BY_SLUG.get(action)
    if act is None:
        raise Http404(f"no routed-run action {action!r}")
    refused = refusal(request, SCOPE_PERMISSION[act.authority])
    if refused is not None:
        return refused
    back = local_next(request)
    routed = default_routed_store()
    if request.method != "POST":
        preview = read_preview(routed, act, workflow_id)
        return _confirmation(request, preview, _initial_form(preview), back)
    preview = read_preview(routed, act, workflow_id)
    form = _form(preview, request.POST)
    if not form.is_valid():
        return _confirmation(request, preview, form, back, status=400)
    try:
        result = _do(act, request.user.get_username(), workflow_id, form.cleaned_data)
    except a.StaleForm as exc:
        fresh = read_preview(routed, act, workflow_id)
        return _confirmation(request, fresh, _initial_form(fresh), back, status=409, stale=str(exc))
    messages.add_message(
        request, messages.SUCCESS if result.done else messages.WARNING, result.message
    )
    target = back or workflow_url(result.new_workflow_id or workflow_id)
    return HttpResponseClientRedirect(target) if request.htmx else redirect(target)


def _do(
    act: a.RoutedAction, username: str, workflow_id: str, data: dict[str, Any]
) -> a.RoutedResult:
    common: dict[str, Any] = {
        "username": username,
        "workflow_id": workflow_id,
        "reason": data["reason"],
        "token": data["token"],
    }
    if act is a.RoutedAction.AMEND_LIMITS:
        spend = data.get("max_llm_spend")
        return a.do_amend_limits(
            default_routed_store(),
            authority_generation=data["generation"],
            max_active_duration_ms=data["max_active_duration_ms"],
            attempt_lease_ms=data["attempt_lease_ms"],
            max_llm_spend="" if spend is None else str(spend),
            **common,
        )
    if act is a.RoutedAction.RESTART:
        return a.do_restart_workflow(
            default_routed_store(),
            generation=data["generation"],
            target_ref=data.get("target_ref") or EXACT,
            **common,
        )
    return _DO[act](default_routed_store(), generation=data["generation"], **common)


def _aliases(preview: Preview) -> list[tuple[str, str]]:
    return [
        (s.record.alias, f"alias {s.record.alias} (now {s.record.target_version})")
        for s in preview.aliases
    ]


def _form(preview: Preview, data: Any = None, initial: dict[str, Any] | None = None) -> forms.Form:
    act = preview.action
    if act is a.RoutedAction.AMEND_LIMITS:
        return AmendForm(data, initial=initial)
    if act is a.RoutedAction.RESTART:
        return RestartForm(data, initial=initial, aliases=_aliases(preview))
    return ControlForm(data, initial=initial)


def _initial_form(preview: Preview) -> forms.Form:
    wf = preview.workflow
    initial: dict[str, Any] = {"token": new_token(), "generation": wf.generation}
    if preview.action is a.RoutedAction.AMEND_LIMITS:
        # Amendments compare-and-set the authority generation, not the row's.
        spend = wf.record.max_llm_spend_decimal
        initial |= {
            "generation": wf.record.authority_generation,
            "max_active_duration_ms": wf.record.max_active_duration_ms,
            "attempt_lease_ms": wf.record.max_attempt_lease_ms,
            "max_llm_spend": spend or None,
        }
    if preview.action is a.RoutedAction.RESTART:
        initial["target_ref"] = EXACT
    return _form(preview, initial=initial)


def _confirmation(
    request: HtmxHttpRequest,
    preview: Preview,
    form: forms.Form,
    back: str,
    status: int = 200,
    stale: str = "",
) -> HttpResponse:
    wf_id = preview.workflow.record.workflow_id
    url = reverse("routed_action", kwargs={"action": preview.action.value, "workflow_id": wf_id})
    context = {
        "action": preview.action,
        "preview": preview,
        "wf": preview.workflow.record,
        "form": form,
        "next": back,
        "back": back or workflow_url(wf_id),
        "action_url": url,
        "page_url": f"{url}?next={quote(back)}" if back else url,
        "stale": stale,
    }
    template = INLINE if wants_fragment(request) else FULL
    return render(request, template, context, status=status)

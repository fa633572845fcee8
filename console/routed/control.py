"""The confirmation views of routed-run workflow actions, one route and one view per
action: GET shows what the action will do (the compact form in place for htmx, the
full page without JavaScript), POST does it through ``console.actions.routed``.

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
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from console.access import ROUTED_AMEND_LIMITS, ROUTED_CONTROL, action_view
from console.actions import routed as a
from console.actions.common import new_token
from console.http import HtmxHttpRequest, local_next, wants_fragment
from storage.default import default_routed_store

from .forms import EXACT, AmendForm, ControlForm, RestartForm
from .previews import Preview, read_preview

FULL = "console/routed/confirm.html"
INLINE = "console/routed/_confirm_inline.html"
_DO = {
    a.RoutedAction.PAUSE: a.do_pause_workflow,
    a.RoutedAction.RESUME: a.do_resume_workflow,
    a.RoutedAction.CANCEL: a.do_cancel_workflow,
    a.RoutedAction.CONTINUE: a.do_continue_workflow,
}


def workflow_url(workflow_id: str) -> str:
    """Where a workflow's actions return to: its page."""
    return reverse("routed_workflow", kwargs={"workflow_id": workflow_id})


# One route and one view per action (console/routed/urls.py); each is its confirmation
# on GET and the action on POST.


@require_http_methods(["GET", "POST"])
@action_view(ROUTED_CONTROL)
def pause_workflow(request: HtmxHttpRequest, workflow_id: str) -> HttpResponse:
    """Pause a running workflow at its next boundary."""
    return _workflow_action(request, a.RoutedAction.PAUSE, workflow_id)


@require_http_methods(["GET", "POST"])
@action_view(ROUTED_CONTROL)
def resume_workflow(request: HtmxHttpRequest, workflow_id: str) -> HttpResponse:
    return _workflow_action(request, a.RoutedAction.RESUME, workflow_id)


@require_http_methods(["GET", "POST"])
@action_view(ROUTED_CONTROL)
def cancel_workflow(request: HtmxHttpRequest, workflow_id: str) -> HttpResponse:
    return _workflow_action(request, a.RoutedAction.CANCEL, workflow_id)


@require_http_methods(["GET", "POST"])
@action_view(ROUTED_CONTROL)
def restart_workflow(request: HtmxHttpRequest, workflow_id: str) -> HttpResponse:
    """A new workflow from this one's receipt, on its deployment or an alias's."""
    return _workflow_action(request, a.RoutedAction.RESTART, workflow_id)


@require_http_methods(["GET", "POST"])
@action_view(ROUTED_CONTROL)
def continue_workflow(request: HtmxHttpRequest, workflow_id: str) -> HttpResponse:
    return _workflow_action(request, a.RoutedAction.CONTINUE, workflow_id)


@require_http_methods(["GET", "POST"])
@action_view(ROUTED_AMEND_LIMITS)
def amend_limits(request: HtmxHttpRequest, workflow_id: str) -> HttpResponse:
    """Raise a workflow's ceilings (runs:amend_limits)."""
    return _workflow_action(request, a.RoutedAction.AMEND_LIMITS, workflow_id)


def _workflow_action(
    request: HtmxHttpRequest, act: a.RoutedAction, workflow_id: str
) -> HttpResponse:
    back = local_next(request)
    routed = default_routed_store()
    preview = read_preview(routed, act, workflow_id)
    if request.method != "POST":
        return _confirmation(request, preview, _initial_form(preview), back)
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
    url = reverse(preview.action.url_name, kwargs={"workflow_id": wf_id})
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

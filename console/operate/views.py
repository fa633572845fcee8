"""Operator actions: one route and view per action (healthchecks' ``pause`` shape).

Cancel and retry each answer GET with the confirmation page and POST with the action
itself. The bulk action's confirmation (GET) and its POST are two views on one URL,
so the list's form and the confirmation's form keep their address.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.access import operator_required
from console.actions import (
    BULK_CAP,
    do_bulk,
    do_cancel_work,
    do_retry_work,
    message,
    new_token,
)
from console.actions import REQUEST_RECOVERY_SCAN as RECOVERY_SCAN
from console.errors import error_page, storage_errors
from console.forms import ActionForm
from console.http import HtmxHttpRequest, View
from console.operate.reads import BulkPlan, read_action_preview, read_bulk_plan
from console.urlstate import FilterError
from console.works.filters import parse_work_filter
from storage import StorageError
from storage.default import default_store
from storage.ops.manual import Action, ActionResult, apply_manual_events

log = logging.getLogger(__name__)

DoAction = Callable[..., ActionResult]


def operator_view(view: View) -> View:
    """Signed in (else the login page), an operator on a writable console (else 403),
    storage errors as status pages."""
    return login_required(operator_required(storage_errors(view)))


def _recover() -> None:
    """Apply manual Events a crashed request left unrouted (bounded; never blocks the
    action in hand)."""
    try:
        apply_manual_events(default_store(), max_scan=RECOVERY_SCAN)
    except StorageError:
        log.exception("recovery of unrouted manual Events failed; the action goes on")


@require_http_methods(["GET", "POST"])
@operator_view
def cancel_work(request: HtmxHttpRequest, work_id: str) -> HttpResponse:
    """Cancel one Work: its confirmation page, then the cancel."""
    return _one_work(request, Action.CANCEL, do_cancel_work, work_id)


@require_http_methods(["GET", "POST"])
@operator_view
def retry_work(request: HtmxHttpRequest, work_id: str) -> HttpResponse:
    """Retry one exhausted Work: its confirmation page, then the new attempt."""
    return _one_work(request, Action.RETRY, do_retry_work, work_id)


def _one_work(request: HtmxHttpRequest, act: Action, do: DoAction, work_id: str) -> HttpResponse:
    if request.method != "POST":
        return _confirmation(request, act, work_id, ActionForm(initial={"token": new_token()}))
    _recover()
    form = ActionForm(request.POST)
    if not form.is_valid():
        return _confirmation(request, act, work_id, form, status=400)
    result = do(
        default_store(),
        username=request.user.get_username(),
        work_id=work_id,
        reason=form.cleaned_data["reason"],
        token=form.cleaned_data["token"],
    )
    level = messages.SUCCESS if result.done else messages.WARNING
    messages.add_message(request, level, message(result))
    return redirect("work_detail", work_id=work_id)


def _confirmation(
    request: HtmxHttpRequest, act: Action, work_id: str, form: ActionForm, status: int = 200
) -> HttpResponse:
    preview = read_action_preview(work_id, act)
    context = {"action": act, "preview": preview, "work": preview.work, "form": form}
    return render(request, "console/action_confirm.html", context, status=status)


# ---------------------------------------------------------------- bulk


def _bulk_choice(data: QueryDict) -> tuple[Action, str] | None:
    """``do=<cancel|retry>-<selected|all>`` as (action, target), or None."""
    action_name, _, target = data.get("do", "").partition("-")
    if action_name not in Action.__members__.values() or target not in ("selected", "all"):
        return None
    return Action(action_name), target


@require_GET
@operator_view
def bulk_confirm(request: HtmxHttpRequest) -> HttpResponse:
    """Cancel or retry many Works: the selected rows, or (up to BULK_CAP) everything
    the list's filter matches. The confirmation resolves the set and shows it."""
    choice = _bulk_choice(request.GET)
    if choice is None:
        return error_page(request, 400, "Invalid request", "Choose cancel or retry.")
    act, target = choice
    form = ActionForm(initial={"token": new_token()})
    if target == "all":
        try:
            f = parse_work_filter(request.GET)
        except FilterError as exc:
            return error_page(request, 400, "Invalid filter", str(exc))
        back = reverse("home") + f.querystring()
        return _bulk_page(request, read_bulk_plan(act, f=f), form, target, back)
    ids = request.GET.getlist("work")
    if not ids:
        message = "Tick the Works to act on, or act on everything the filter matches."
        return error_page(request, 400, "Nothing selected", message)
    if len(ids) > BULK_CAP:
        message = f"A bulk action takes at most {BULK_CAP}."
        return error_page(request, 400, "Too many Works", message)
    return _bulk_page(request, read_bulk_plan(act, work_ids=ids), form, target)


@require_POST
@operator_view
def bulk_apply(request: HtmxHttpRequest) -> HttpResponse:
    """Act on exactly the Works the confirmation showed as eligible (its form lists
    them); an invalid form shows the confirmation again, as a 400."""
    choice = _bulk_choice(request.POST)
    if choice is None:
        return error_page(request, 400, "Invalid request", "Choose cancel or retry.")
    act, target = choice
    _recover()
    form = ActionForm(request.POST)
    ids = request.POST.getlist("work")
    if not (form.is_valid() and ids):
        plan = read_bulk_plan(act, work_ids=ids[:BULK_CAP])
        return _bulk_page(request, plan, form, target, status=400)
    summary = do_bulk(
        default_store(),
        username=request.user.get_username(),
        action=act,
        work_ids=ids,
        reason=form.cleaned_data["reason"],
        token=form.cleaned_data["token"],
    )
    return render(request, "console/bulk_result.html", {"summary": summary})


def _bulk_page(
    request: HtmxHttpRequest,
    plan: BulkPlan,
    form: ActionForm,
    target: str,
    back: str = "",
    status: int = 200,
) -> HttpResponse:
    context = {
        "plan": plan,
        "action": plan.action,
        "form": form,
        "target": target,
        "back": back or reverse("home"),
    }
    return render(request, "console/bulk_confirm.html", context, status=status)

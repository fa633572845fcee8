"""Operator actions: a confirmation page (GET) and the action itself (POST)."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from console.access import operator_required
from console.actions import (
    BULK_CAP,
    Action,
    apply_manual_events,
    do_bulk,
    do_cancel_work,
    do_retry_work,
    new_token,
)
from console.actions import REQUEST_RECOVERY_SCAN as RECOVERY_SCAN
from console.errors import error_page, storage_errors
from console.filters import FilterError, parse_work_filter
from console.forms import ActionForm
from console.http import HtmxHttpRequest
from console.reads import read_action_preview, read_bulk_plan
from console.stores import get_store
from storage import StorageError

log = logging.getLogger(__name__)


def _recover() -> None:
    """Apply manual Events a crashed request left unrouted (bounded; never blocks the
    action in hand)."""
    try:
        apply_manual_events(get_store(), max_scan=RECOVERY_SCAN)
    except StorageError:
        log.exception("recovery of unrouted manual Events failed; the action goes on")


@require_http_methods(["GET", "POST"])
@login_required
@operator_required
@storage_errors
def work_action(request: HtmxHttpRequest, action: str, work_id: str) -> HttpResponse:
    """Cancel or retry one Work."""
    act = Action(action)
    status = 200
    if request.method == "POST":
        _recover()
        form = ActionForm(request.POST)
        if form.is_valid():
            do = do_cancel_work if act is Action.CANCEL else do_retry_work
            result = do(
                get_store(),
                username=request.user.get_username(),
                work_id=work_id,
                reason=form.cleaned_data["reason"],
                token=form.cleaned_data["token"],
            )
            (messages.success if result.done else messages.warning)(request, result.message)
            return redirect("work_detail", work_id=work_id)
        status = 400
    else:
        form = ActionForm(initial={"token": new_token()})
    preview = read_action_preview(work_id, act)
    context = {"action": act, "preview": preview, "work": preview.work, "form": form}
    return render(request, "console/action_confirm.html", context, status=status)


@require_http_methods(["GET", "POST"])
@login_required
@operator_required
@storage_errors
def bulk_action(request: HtmxHttpRequest) -> HttpResponse:
    """Cancel or retry many Works: the selected rows, or (up to BULK_CAP) everything
    the list's filter matches. The confirmation resolves the set; the POST acts on
    exactly the Works it showed as eligible."""
    data = request.POST if request.method == "POST" else request.GET
    action_name, _, target = data.get("do", "").partition("-")
    if action_name not in Action.__members__.values() or target not in ("selected", "all"):
        return error_page(request, 400, "Invalid request", "Choose cancel or retry.")
    act = Action(action_name)
    back = reverse("home")
    if request.method == "POST":
        _recover()
        form = ActionForm(request.POST)
        ids = request.POST.getlist("work")
        if form.is_valid() and ids:
            summary = do_bulk(
                get_store(),
                username=request.user.get_username(),
                action=act,
                work_ids=ids,
                reason=form.cleaned_data["reason"],
                token=form.cleaned_data["token"],
            )
            return render(request, "console/bulk_result.html", {"summary": summary})
        plan = read_bulk_plan(act, work_ids=ids[:BULK_CAP])
        status = 400
    else:
        form = ActionForm(initial={"token": new_token()})
        status = 200
        if target == "selected":
            ids = request.GET.getlist("work")
            if not ids:
                return error_page(
                    request,
                    400,
                    "Nothing selected",
                    "Tick the Works to act on, or act on everything the filter matches.",
                )
            if len(ids) > BULK_CAP:
                return error_page(
                    request, 400, "Too many Works", f"A bulk action takes at most {BULK_CAP}."
                )
            plan = read_bulk_plan(act, work_ids=ids)
        else:
            try:
                f = parse_work_filter(request.GET)
            except FilterError as exc:
                return error_page(request, 400, "Invalid filter", str(exc))
            plan = read_bulk_plan(act, f=f)
            back += f.querystring()
    context = {
        "plan": plan,
        "action": act,
        "form": form,
        "target": target,
        "back": back,
    }
    return render(request, "console/bulk_confirm.html", context, status=status)

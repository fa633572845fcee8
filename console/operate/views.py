"""Operator actions: one route and view per action (healthchecks' ``pause`` shape).

Cancel and retry each answer GET with the confirmation page and POST with the action
itself. The bulk actions are in ``console.operate.bulk``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import quote

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from console.access import WORK_CONTROL, action_view
from console.actions.common import new_token
from console.actions.work import REQUEST_RECOVERY_SCAN as RECOVERY_SCAN
from console.actions.work import do_cancel_work, do_retry_work, message
from console.forms import ActionForm
from console.http import HtmxHttpRequest, local_next, wants_fragment
from console.operate.reads import read_action_preview
from storage import StorageError
from storage.default import default_store
from storage.ops.manual import Action, ActionResult, apply_manual_events

log = logging.getLogger(__name__)
FULL = "console/action_confirm.html"

DoAction = Callable[..., ActionResult]


# Signed in, holding the Work permission on a writable console, storage errors as pages.
work_action = action_view(WORK_CONTROL)


def recover() -> None:
    """Apply manual Events a crashed request left unrouted (bounded; never blocks the
    action in hand)."""
    try:
        apply_manual_events(default_store(), max_scan=RECOVERY_SCAN)
    except StorageError:
        log.exception("recovery of unrouted manual Events failed; the action goes on")


@require_http_methods(["GET", "POST"])
@work_action
def cancel_work(request: HtmxHttpRequest, work_id: str) -> HttpResponse:
    """Cancel one Work: its confirmation page, then the cancel."""
    return _one_work(request, Action.CANCEL, do_cancel_work, work_id)


@require_http_methods(["GET", "POST"])
@work_action
def retry_work(request: HtmxHttpRequest, work_id: str) -> HttpResponse:
    """Retry one exhausted Work: its confirmation page, then the new attempt."""
    return _one_work(request, Action.RETRY, do_retry_work, work_id)


def _one_work(request: HtmxHttpRequest, act: Action, do: DoAction, work_id: str) -> HttpResponse:
    back = local_next(request)
    if request.method != "POST":
        form = ActionForm(initial={"token": new_token()})
        return _confirmation(request, act, work_id, form, back)
    recover()
    form = ActionForm(request.POST)
    if not form.is_valid():
        return _confirmation(request, act, work_id, form, back, status=400)
    result = do(
        default_store(),
        username=request.user.get_username(),
        work_id=work_id,
        reason=form.cleaned_data["reason"],
        token=form.cleaned_data["token"],
    )
    level = messages.SUCCESS if result.done else messages.WARNING
    messages.add_message(request, level, message(result))
    # Back to the list the operator came from, else the Work; htmx reloads that page
    # whole, so the flash and every region are fresh.
    target = back or reverse("work_detail", kwargs={"work_id": work_id})
    return HttpResponseClientRedirect(target) if request.htmx else redirect(target)


def _confirmation(
    request: HtmxHttpRequest,
    act: Action,
    work_id: str,
    form: ActionForm,
    back: str,
    status: int = 200,
) -> HttpResponse:
    preview = read_action_preview(work_id, act)
    name = "cancel_work" if act is Action.CANCEL else "retry_work"
    url = reverse(name, kwargs={"work_id": work_id})
    context = {
        "action": act,
        "preview": preview,
        "work": preview.work,
        "form": form,
        "next": back,
        "action_url": url,
        "page_url": f"{url}?next={quote(back)}" if back else url,
    }
    # From a list row (htmx): the compact confirmation under the row; else the page.
    template = "console/_inline_confirm.html" if wants_fragment(request) else FULL
    return render(request, template, context, status=status)

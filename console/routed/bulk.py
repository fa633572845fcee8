"""The bulk confirmation of routed-run workflows over the Workflows list's filter:
GET restates the filter and what it matches by status, POST re-reads the filter and
acts (``console.actions.routed_bulk.do_bulk_control``) on what the map still allows,
and the summary says done / skipped (with reasons). As the Work list's bulk
(``console.operate.bulk``).
"""

from __future__ import annotations

import dataclasses

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from console.access import SCOPE_PERMISSION, refusal
from console.actions.common import new_token
from console.actions.routed import BULK_ACTIONS, RoutedAction
from console.actions.routed_bulk import BULK_CAP, do_bulk_control
from console.errors import storage_errors
from console.forms import ActionForm
from console.http import HtmxHttpRequest
from console.routed.filters import parse_workflow_filter
from console.routed.reads import alert_ids, search
from console.urlstate import FilterError
from storage import Invalid
from storage.default import default_routed_store
from storage.routed.enums import WorkflowStatus
from storage.routed.records import WorkflowRecord
from storage.routed.rules import RoutedRules
from storage.routed.rules.listing import MAX_PAGE

from .previews import allowed_actions

TEMPLATE = "console/routed/bulk.html"


# ---------------------------------------------------------------- the confirmation and the action


def matching(data: QueryDict, action: RoutedAction) -> tuple[list[str], dict[str, int]]:
    """The IDs of the workflows the Workflows list's filter matches (its own
    parameters: facets, ``q``, ``alert``) whose status lets ``action`` apply, newest
    first, at most BULK_CAP (acting again takes the next ones: the first are no longer
    eligible), and what the filter matches by status; one snapshot."""
    try:
        f = parse_workflow_filter(data)
    except FilterError as exc:
        raise Invalid("; ".join(f"{k}: {v}" for k, v in exc.errors.items())) from exc
    eligible = tuple(
        s.name
        for s in WorkflowStatus
        if action in allowed_actions(s) and (not f.status or s.name in f.status)
    )

    def read(r: RoutedRules) -> tuple[list[WorkflowRecord], dict[str, int]]:
        found = search(r, f.q)
        ids = found.workflow_ids if found else None
        if f.alert:
            flagged = set(alert_ids(r, f.alert, r.now))
            ids = tuple(flagged) if ids is None else tuple(i for i in ids if i in flagged)
        query = f.query(ids)
        if found and found.deployment:
            query = dataclasses.replace(query, deployment_ids=(found.deployment,))
        # The status facet counts without its own filter (as the list's count does).
        by_status = {
            k: n
            for k, n in r.workflow_facets(query)["status"].items()
            if not f.status or k in f.status
        }
        out: list[WorkflowRecord] = []
        after = None
        query = dataclasses.replace(query, statuses=eligible)
        while eligible and len(out) < BULK_CAP:
            page = r.page_workflows(query, after, min(MAX_PAGE, BULK_CAP - len(out)))
            out += [s.record for s in page.rows]
            if not page.next_after:
                break
            after = page.next_after
        return out, by_status

    found, by_status = default_routed_store().view(read)
    return [wf.workflow_id for wf in found], by_status


def _action(data: QueryDict) -> RoutedAction:
    act = next((a for a in BULK_ACTIONS if a.value == data.get("do", "")), None)
    if act is None:
        raise Invalid("choose pause, resume or cancel")
    return act


def _filter_params(data: QueryDict) -> list[tuple[str, str]]:
    return parse_workflow_filter(data).params()


def _context(filter_data: QueryDict, act: RoutedAction) -> tuple[list[str], dict[str, object]]:
    """The workflows the filter matches that ``act`` may apply to, and what the page
    restates: the counts by status, the filter, the cap."""
    ids, by_status = matching(filter_data, act)
    return ids, {
        "action": act,
        "by_status": sorted(by_status.items()),
        "matched": sum(by_status.values()),
        "eligible": len(ids),
        "params": _filter_params(filter_data),
        "filter_qs": parse_workflow_filter(filter_data).querystring().lstrip("?"),
        "cap": BULK_CAP,
    }


@require_GET
@login_required
@storage_errors
def bulk_confirm(request: HtmxHttpRequest) -> HttpResponse:
    """What the list's filter (the query string) matches and what the action will do
    to it, with a form that carries the filter as one field."""
    act = _action(request.GET)  # an unknown action is a 400 for anyone, before who may
    refused = refusal(request, SCOPE_PERMISSION[act.authority])
    if refused is not None:
        return refused
    _, context = _context(request.GET, act)
    form = ActionForm(initial={"token": new_token()})
    return render(request, TEMPLATE, context | {"form": form})


@require_POST
@login_required
@storage_errors
def bulk_apply(request: HtmxHttpRequest) -> HttpResponse:
    """Act on what the filter matches now (re-read), then the summary."""
    act = _action(request.POST)
    refused = refusal(request, SCOPE_PERMISSION[act.authority])
    if refused is not None:
        return refused
    # The confirmation carries the list's filter as one field: its facet ``reason``
    # (a failure reason) would otherwise meet the form's ``reason`` (the operator's).
    ids, context = _context(QueryDict(request.POST.get("filter", "")), act)
    form = ActionForm(request.POST)
    if not form.is_valid():
        return render(request, TEMPLATE, context | {"form": form}, status=400)
    summary = do_bulk_control(
        default_routed_store(),
        username=request.user.get_username(),
        action=act,
        workflow_ids=ids,
        reason=form.cleaned_data["reason"],
        token=form.cleaned_data["token"],
    )
    return render(request, TEMPLATE, context | {"summary": summary})

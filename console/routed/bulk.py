"""Bulk pause, resume and cancel of routed-run workflows: ``do_bulk_control`` (shared
by the view and the tests) and the confirmation over the workflows list's filter.

As the Work list's bulk (``console.operate.bulk``): the confirmation restates the
filter and what it matches by status, the POST re-reads the filter and acts on what
the map still allows, batched, and the summary says done / skipped (with reasons).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from console.access import SCOPE_PERMISSION, refusal
from console.actions import BULK_YIELD_MAX, new_token
from console.errors import storage_errors
from console.forms import ActionForm
from console.http import HtmxHttpRequest
from console.models import RoutedActionNote
from console.routed.filters import parse_workflow_filter
from console.routed.reads import alert_ids, search
from console.urlstate import FilterError
from storage import Invalid, StorageError
from storage.default import default_routed_store
from storage.routed.enums import WorkflowStatus
from storage.routed.errors import InvalidArgument, RoutedNotFound
from storage.routed.ids import ControlRequestID, WorkflowID
from storage.routed.records import ControlRequest, WorkflowRecord
from storage.routed.rules import RoutedRules
from storage.routed.rules.listing import MAX_PAGE
from storage.routed.store import RoutedStore

from .actions import RoutedAction, RoutedResult, actor_of, check_request, note, note_token
from .previews import allowed_actions

TEMPLATE = "console/routed/bulk.html"
# Workflows per transaction. Measured on SQLite under a load of 15 (2 cores shared):
# a pause costs about 33 ms per workflow (its runs, nodes, batches, envelope, desired
# state, request and result), so the Work bulk's 25 would hold the write lock for
# about 0.8 s; 5 keeps a transaction near 150 ms there (tens of ms when idle).
BATCH = 5
# Workflows per bulk request: at that cost 1,000 take 5-35 s in one request (the
# Work bulk's 10,000 would outlast the server's worker timeout); the confirmation
# says when there are more, and acting again takes the next ones.
CAP = 1000

# ---------------------------------------------------------------- bulk


BULK_ACTIONS = (RoutedAction.PAUSE, RoutedAction.RESUME, RoutedAction.CANCEL)


@dataclass(frozen=True, slots=True)
class BulkControlSummary:
    action: RoutedAction
    done: tuple[RoutedResult, ...]
    skipped: tuple[tuple[str, str], ...]  # (workflow ID, why)


def do_bulk_control(
    routed: RoutedStore,
    *,
    username: str,
    action: RoutedAction,
    workflow_ids: Sequence[str],
    reason: str,
    token: str,
) -> BulkControlSummary:
    """Pause, resume or cancel many workflows, each at its generation as read in the
    transaction that acts on it (a bulk form has no per-row generation: what the
    filter matched is re-checked against the map instead, and skipped with its
    status when the action no longer applies). One token for the run: each
    workflow's control request is keyed by it, so a resubmitted bulk form replays."""
    if action not in BULK_ACTIONS:
        raise Invalid(f"bulk {action.value} is not offered")
    reason = check_request(username, reason, token)
    ids = list(dict.fromkeys(workflow_ids))
    if len(ids) > CAP:
        raise Invalid(f"a bulk action takes at most {CAP} workflows, not {len(ids)}")
    command = action.command
    if command is None:
        raise Invalid(f"{action.value} is not a workflow control command")

    def one(r: RoutedRules, raw: str) -> RoutedResult | tuple[str, str]:
        try:
            wf = r.get_workflow(WorkflowID.parse(raw))
        except (RoutedNotFound, InvalidArgument) as exc:
            return (raw, str(exc))
        try:
            desired = r.get_desired_state(wf.record.workflow_id).record.cancel_precedence
        except RoutedNotFound:
            desired = False
        status = wf.record.status
        if action not in allowed_actions(status, cancel_desired=desired):
            return (raw, f"{status.name.lower()}: {action.value} does not apply")
        req = ControlRequest(
            control_request_id=ControlRequestID.new(),
            workflow_id=wf.record.workflow_id,
            command=command,
            expected_generation=wf.generation,
            actor_identity=actor_of(username),
            authority_scope=action.authority,
            idempotency_key=token,
        )
        outcome = r.request_control(req)
        res = outcome.result
        return RoutedResult(action, raw, res.applied, res.detail, duplicate=outcome.replay)

    results: list[RoutedResult | tuple[str, str]] = []
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        # A resubmitted bulk form: what it did is noted, and the store would replay it.
        noted = {
            n.target: n
            for n in RoutedActionNote.objects.filter(
                token__in=[note_token(token, i) for i in chunk]
            )
        }
        results += [
            RoutedResult(action, i, noted[i].done, noted[i].detail, duplicate=True)
            for i in chunk
            if i in noted
        ]
        chunk = [i for i in chunk if i not in noted]
        began = time.monotonic()
        try:
            results += routed.transact(partial(_each, one, chunk))
        except StorageError:
            # One workflow refused mid-batch (it moved under us): the batch rolled
            # back, so take its workflows one transaction each and skip the refused.
            for raw in chunk:
                try:
                    results += routed.transact(partial(_each, one, [raw]))
                except StorageError as exc:
                    results.append((raw, str(exc)))
        # As the Work bulk does: yield the write lock as long as this batch held it,
        # so a waiting writer (the supervisor, another operator) gets its turn.
        time.sleep(min(time.monotonic() - began, BULK_YIELD_MAX))
    done = tuple(x for x in results if isinstance(x, RoutedResult))
    for result in done:
        note(token, result.target, username, reason, result)
    skipped = tuple(x for x in results if not isinstance(x, RoutedResult))
    return BulkControlSummary(action, done, skipped)


Outcome = RoutedResult | tuple[str, str]


def _each(
    one: Callable[[RoutedRules, str], Outcome], ids: list[str], r: RoutedRules
) -> list[Outcome]:
    return [one(r, i) for i in ids]


# ---------------------------------------------------------------- the confirmation and the action


def matching(data: QueryDict, action: RoutedAction) -> tuple[list[str], dict[str, int]]:
    """The IDs of the workflows the Workflows list's filter matches (its own
    parameters: facets, ``q``, ``alert``) whose status lets ``action`` apply, newest
    first, at most CAP (acting again takes the next ones: the first are no longer
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
        while eligible and len(out) < CAP:
            page = r.page_workflows(query, after, min(MAX_PAGE, CAP - len(out)))
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


@require_http_methods(["GET", "POST"])
@login_required
@storage_errors
def bulk_control(request: HtmxHttpRequest) -> HttpResponse:
    """GET: what the filter matches and what the action will do to it; POST: act on
    what the filter matches now (re-read), then the summary."""
    data = request.POST if request.method == "POST" else request.GET
    act = _action(data)
    refused = refusal(request, SCOPE_PERMISSION[act.authority])
    if refused is not None:
        return refused
    # The confirmation carries the list's filter as one field: its facet ``reason``
    # (a failure reason) would otherwise meet the form's ``reason`` (the operator's).
    filter_data = QueryDict(data.get("filter", "")) if request.method == "POST" else data
    ids, by_status = matching(filter_data, act)
    context: dict[str, object] = {
        "action": act,
        "by_status": sorted(by_status.items()),
        "matched": sum(by_status.values()),
        "eligible": len(ids),
        "params": _filter_params(filter_data),
        "filter_qs": parse_workflow_filter(filter_data).querystring().lstrip("?"),
        "cap": CAP,
    }
    if request.method != "POST":
        form = ActionForm(initial={"token": new_token()})
        return render(request, TEMPLATE, context | {"form": form})
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

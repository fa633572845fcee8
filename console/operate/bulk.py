"""Bulk cancel and retry: the list's form, the confirmation and the action.

The list's form POSTs (one checkbox per row, bounded by the page size) to
``bulk_review``. "All matching" goes on as a short GET of the filter itself
(bookmarkable, and how "the rest" continues: ``from`` is the last run's stop);
"selected" is confirmed with the IDs in ONE compact field. The confirmation's POST
carries the filter and the run's range, or that one field: never one field per Work,
so neither Django's DATA_UPLOAD_MAX_NUMBER_FIELDS nor a request line limit is met.

What a run over the filter promised (its eligible Work, in one ``promised`` field
beside the time it was read, ``seen``) is accounted for in the result, Work by Work:
done, skipped with the reason, no longer matching the filter (someone or something
changed it after the confirmation: who and when), or left for the next run. Eligible
Work the confirmation did not show (it matched only since) is left alone and said so.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.actions.common import new_token
from console.actions.work import (
    BULK_CAP,
    BulkSummary,
    do_bulk,
    read_job,
    read_progress,
    stalled,
)
from console.errors import error_page
from console.forms import ActionForm
from console.http import HtmxHttpRequest
from console.operate.reads import Gone, read_bulk_plan, read_gone
from console.operate.sweep import Sweep, describe, narrowings, parse_range, read_sweep
from console.operate.views import recover, work_action
from console.polling import read
from console.urlstate import MAX_KEY_TIME, FilterError
from console.works.filters import WorkFilter, parse_work_filter
from storage.default import default_store
from storage.ops.manual import Action

CONFIRM = "console/bulk_confirm.html"
TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
DONE_SHOWN = 1000  # rows of the summary's "done" list; the rest are counted
NOTHING = "Tick the Works to act on, or act on everything the filter matches."
UNCONFIRMED = (
    "not in the confirmation (it matches the filter only since): left alone; run the "
    "action again to include it"
)


def _promise(data: QueryDict) -> tuple[list[str], int] | None:
    """The confirmed run's eligible Work IDs and the time they were read (``promised``
    and ``seen``), or None for a form without them (made before they were carried);
    FilterError when malformed."""
    raw = data.get("promised")
    if raw is None:
        return None
    try:
        ids = json.loads(raw)
    except ValueError:
        ids = None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise FilterError({"promised": "The confirmed Works are malformed."})
    if len(ids) > BULK_CAP:
        raise FilterError({"promised": f"A run confirms at most {BULK_CAP} Works."})
    return list(dict.fromkeys(ids)), _seen(data)


def _seen(data: QueryDict) -> int:
    """The confirmation's time (``seen``); FilterError when malformed or missing."""
    seen = data.get("seen", "")
    if not (seen.isascii() and seen.isdigit()) or int(seen) > MAX_KEY_TIME:
        raise FilterError({"seen": "The confirmation's time is malformed."})
    return int(seen)


def _gone(found: set[str], promise: tuple[list[str], int] | None) -> list[Gone]:
    """What the confirmation promised that the re-read before acting no longer found
    qualifying (``found``: the IDs it still found: for "all matching", eligible or
    refused inside the run's range; for "selected", eligible), each with its state now,
    when it changed and who changed it (``read_gone``). Both targets share it."""
    if promise is None:
        return []
    ids, seen = promise
    return read_gone([i for i in ids if i not in found], seen)


def _bulk_choice(data: QueryDict) -> tuple[Action, str] | None:
    """``do=<cancel|retry>-<selected|all>`` as (action, target), or None."""
    action_name, _, target = data.get("do", "").partition("-")
    if action_name not in Action.__members__.values() or target not in ("selected", "all"):
        return None
    return Action(action_name), target


def _selected_ids(data: QueryDict) -> list[str] | None:
    """The IDs of "selected": the list's checkboxes (``work``) and/or the
    confirmation's one ``works`` field (a JSON list); None when malformed."""
    ids = data.getlist("work")
    raw = data.get("works", "")
    if raw:
        try:
            parsed = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(parsed, list) or not all(isinstance(i, str) for i in parsed):
            return None
        ids += parsed
    return list(dict.fromkeys(i for i in ids if i))


def _asked(
    request: HtmxHttpRequest, data: QueryDict
) -> tuple[Action, str, WorkFilter] | HttpResponse:
    """(action, target, the list's filter) of a bulk request, or its 400 page."""
    choice = _bulk_choice(data)
    if choice is None:
        return error_page(request, 400, "Invalid request", "Choose cancel or retry.")
    try:
        return (*choice, parse_work_filter(data))
    except FilterError as exc:
        return error_page(request, 400, "Invalid filter", str(exc))


@require_POST
@work_action
def bulk_review(request: HtmxHttpRequest) -> HttpResponse:
    """The list's bulk form: "all matching" goes to its confirmation as the filter's
    URL; "selected" is confirmed here."""
    asked = _asked(request, request.POST)
    if isinstance(asked, HttpResponse):
        return asked
    act, target, f = asked
    if target == "all":
        return redirect(reverse("bulk_action") + f.querystring([("do", f"{act.value}-all")]))
    return _confirm_selected(request, act, _selected_ids(request.POST), f)


@require_GET
@work_action
def bulk_confirm(request: HtmxHttpRequest) -> HttpResponse:
    """The confirmation: one run over what the filter matches (from ``from``), or the
    selected rows (``work``, kept for links made before the list's form POSTed)."""
    asked = _asked(request, request.GET)
    if isinstance(asked, HttpResponse):
        return asked
    act, target, f = asked
    if target == "selected":
        return _confirm_selected(request, act, _selected_ids(request.GET), f)
    try:
        start, _ = parse_range(request.GET)
    except FilterError as exc:
        return error_page(request, 400, "Invalid position", str(exc))
    sweep = read_sweep(act, f, start)
    return _page(request, ActionForm(initial={"token": new_token()}), f, sweep=sweep)


@require_POST
@work_action
def bulk_apply(request: HtmxHttpRequest) -> HttpResponse:
    """Act on the eligible Work of the confirmed run (re-read from the filter and its
    range) or of the selected IDs; an invalid form shows the confirmation again (400)."""
    asked = _asked(request, request.POST)
    if isinstance(asked, HttpResponse):
        return asked
    act, target, f = asked
    form = ActionForm(request.POST)
    recover()
    if target == "all":
        try:
            start, through = parse_range(request.POST)
            promise = _promise(request.POST)
        except FilterError as exc:
            return error_page(request, 400, "Invalid position", str(exc))
        if through is None:
            return error_page(request, 400, "Invalid request", "Confirm the action first.")
        sweep = read_sweep(act, f, start, through, tries=not form.is_valid())
        if not form.is_valid():
            return _page(request, form, f, sweep=sweep, status=400)
        promised = set(promise[0]) if promise else None
        ids = [w.id for w in sweep.eligible if promised is None or w.id in promised]
        unconfirmed = [
            w.id for w in sweep.eligible if promised is not None and w.id not in promised
        ]
        # ``sweep.left`` was read before acting, on Work after this run's range: the
        # action does not touch it, so it is what is left.
        summary = _do(request, act, ids, form, progress=True)
        # Read after acting: what changed before this action's own Events.
        found = {w.id for w in sweep.eligible} | {work_id for work_id, _, _ in sweep.excluded}
        gone = _gone(found, promise)
        accounted = Accounted(promise[0] if promise else None, unconfirmed, gone)
        return _summary(request, summary, f, sweep=sweep, accounted=accounted)
    selected = _selected_ids(request.POST)
    if not selected or len(selected) > BULK_CAP:
        return _confirm_selected(request, act, selected, f)
    if not form.is_valid():
        return _page(request, form, f, plan=read_bulk_plan(act, selected), status=400)
    if "seen" not in request.POST:  # a form made before the selection carried its time
        return _summary(request, _do(request, act, selected, form, progress=True), f)
    try:
        promise = selected, _seen(request.POST)
    except FilterError as exc:
        return error_page(request, 400, "Invalid request", str(exc))
    # The selection's ``works`` are what the confirmation promised (its eligible
    # rows). Re-read as "all matching" re-reads its range: what no longer qualifies
    # is left alone and reported with who changed it and when, not skipped.
    eligible = [w.id for w in read_bulk_plan(act, selected).eligible]
    summary = _do(request, act, eligible, form, progress=True)
    gone = _gone(set(eligible), promise)  # read after acting, as for "all matching"
    return _summary(request, summary, f, accounted=Accounted(selected, [], gone))


def _do(
    request: HtmxHttpRequest,
    act: Action,
    ids: list[str],
    form: ActionForm,
    *,
    progress: bool = False,
) -> BulkSummary:
    return do_bulk(
        default_store(),
        username=request.user.get_username(),
        action=act,
        work_ids=ids,
        reason=form.cleaned_data["reason"],
        token=form.cleaned_data["token"],
        progress=progress,
    )


@require_GET
@work_action
def bulk_progress(request: HtmxHttpRequest) -> HttpResponse:
    """How far the bulk action submitted with ``token`` has got: the region the
    confirmation polls while its POST runs (the POST's answer replaces it)."""
    token = request.GET.get("token", "")
    if not TOKEN.match(token):
        return error_page(request, 400, "Invalid request", "The token is malformed.")

    def progress(tx: Any) -> dict[str, Any]:
        state = read_progress(tx, token)
        return {"progress": state, "stalled": state is not None and stalled(tx, state)}

    context = read(progress) | {"token": token}
    return render(request, "console/_bulk_progress.html", context)


@require_POST
@work_action
def bulk_resume(request: HtmxHttpRequest) -> HttpResponse:
    """Carry on the bulk action whose host stopped (its progress region offers this):
    the stored plan, from its start; what was done already is reported, not redone."""
    token = request.POST.get("token", "")
    if not TOKEN.match(token):
        return error_page(request, 400, "Invalid request", "The token is malformed.")
    job = read(lambda tx: read_job(tx, token))
    if job is None:
        message = "This bulk action is not running: it finished, or it never started."
        return error_page(request, 404, "Nothing to resume", message)
    recover()
    summary = do_bulk(
        default_store(),
        username=job.username,
        action=job.action,
        work_ids=job.work_ids,
        reason=job.reason,
        token=token,
        progress=True,
    )
    return _summary(request, summary, parse_work_filter(QueryDict()))


def _confirm_selected(
    request: HtmxHttpRequest, act: Action, ids: list[str] | None, f: WorkFilter
) -> HttpResponse:
    if ids is None:
        return error_page(request, 400, "Invalid request", "The list of Works is malformed.")
    if not ids:
        return error_page(request, 400, "Nothing selected", NOTHING)
    if len(ids) > BULK_CAP:
        message = f"A bulk action takes at most {BULK_CAP}; act on the filter instead."
        return error_page(request, 400, "Too many Works", message)
    plan = read_bulk_plan(act, ids)
    return _page(request, ActionForm(initial={"token": new_token()}), f, plan=plan)


def _page(
    request: HtmxHttpRequest,
    form: ActionForm,
    f: WorkFilter,
    *,
    sweep: Sweep | None = None,
    plan: Any = None,
    status: int = 200,
) -> HttpResponse:
    chosen = sweep or plan
    context = {
        "sweep": sweep,
        "plan": chosen,
        "action": chosen.action,
        "form": form,
        "target": "all" if sweep else "selected",
        "filter_params": f.params(),
        "words": describe(f),
        "chips": f.chips(),
        "works_json": json.dumps([w.id for w in plan.eligible]) if plan else "",
        "promised_json": json.dumps([w.id for w in sweep.eligible]) if sweep else "",
        "seen": chosen.now,
        "back": reverse("home") + f.querystring(),
        "narrower": narrowings(sweep) if sweep and sweep.over_cap else [],
    }
    return render(request, CONFIRM, context, status=status)


@dataclass(frozen=True, slots=True)
class Accounted:
    """A run's promise against what became of it (``_summary``)."""

    promised: list[str] | None  # the confirmation's eligible Work (None: not carried)
    unconfirmed: list[str]  # eligible now, not promised: left alone
    gone: list[Gone]  # promised, no longer matching the filter


def _summary(
    request: HtmxHttpRequest,
    summary: BulkSummary,
    f: WorkFilter,
    *,
    sweep: Sweep | None = None,
    accounted: Accounted | None = None,
) -> HttpResponse:
    rest_url = ""
    if sweep is not None and sweep.more:
        params = [("do", f"{sweep.action.value}-all"), ("from", sweep.stop_cursor)]
        rest_url = reverse("bulk_action") + f.querystring(params)
    # Refused inside the run's range when it was re-read, then refused while acting.
    # A resumed run's plan is the first run's: what that run did is now outside the
    # filter's eligible Work, and reported among those acted on, not twice.
    acted = {r.work_id for r in summary.done} | {s.work_id for s in summary.skipped}
    skipped = [(w, why) for w, _, why in sweep.excluded if w not in acted] if sweep else []
    skipped += [(s.work_id, s.reason) for s in summary.skipped]
    skipped += [(work_id, UNCONFIRMED) for work_id in (accounted.unconfirmed if accounted else [])]
    gone = [g for g in accounted.gone if g.work_id not in acted] if accounted else []
    context = {
        "promised": len(accounted.promised)
        if accounted and accounted.promised is not None
        else None,
        "gone": gone,
        "gone_label": "no longer matching" if sweep else "no longer eligible",
        "now": time.time_ns(),
        "summary": summary,
        "sweep": sweep,
        "skipped": skipped,
        "skipped_count": len(skipped),
        "skipped_by_reason": Counter(why for _, why in skipped).most_common(),
        "done_shown": summary.done[:DONE_SHOWN],
        "words": describe(f),
        "back": reverse("home") + f.querystring(),
        "rest_url": rest_url,
    }
    return render(request, "console/bulk_result.html", context)

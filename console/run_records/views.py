"""Run records: durable run records (one ``DurableRunRecord`` per graph run), listed and
inspected. Read only: the console never acquires a run, so it can never make a runtime Busy.
The section lived at ``/runs`` before issue 33 gave "run" one meaning; those URLs move
permanently here (``runs_moved``)."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.urls import get_script_prefix

from console.http import HtmxHttpRequest, page, render_region
from console.polling import seen_stamp, unchanged
from console.run_records.filters import (
    STATUSES,
    format_run_key,
    parse_run_cursor,
    parse_run_filter,
    typed_until,
)
from console.run_records.outcome import RunOutcome, run_outcome
from console.run_records.reads import read_run, read_run_list, read_unreadable_run
from console.run_records.tree import build_tree
from console.run_records.values import decoded_values, get_catalog
from console.urlstate import PAGE_SIZES, FilterError
from storage import Corrupt, RecordsNewer
from storage.default import default_run_store
from storage.run_records import RUN_FORMATS, StoredRun
from storage.run_records.validate import validate_run

TEMPLATE = "console/run_records/list.html"
CHOICES = {"formats": RUN_FORMATS, "sizes": PAGE_SIZES, "statuses": STATUSES}
# The most run records one page of a status filter reads (the status is derived from
# each record, so no index selects it).
STATUS_SCAN = 500


@dataclass(frozen=True, slots=True)
class RunItem:
    """A row of the Run records list: the stored record, whether a process owns it now, and
    its validator findings (None when the record does not decode)."""

    stored: StoredRun
    owned: bool
    findings: int | None
    outcome: RunOutcome | None  # None when the record does not decode


@page
def run_record_list(request: HtmxHttpRequest) -> HttpResponse:
    """Run records, most recently saved first: filters in the URL, keyset pages."""
    try:
        f = parse_run_filter(request.GET)
        after = parse_run_cursor(request.GET)
    except FilterError as exc:
        form = {**request.GET.dict(), "until": typed_until(request.GET)}
        invalid = {"errors": exc.errors, "form": form, **CHOICES}
        return render(request, TEMPLATE, invalid, status=400)
    # A status is derived from each record (outcome.py), not stored: a status filter
    # reads at most STATUS_SCAN records a page and keeps those that match.
    listing = read_run_list(f, after, seen_stamp(request), STATUS_SCAN if f.status else 0)
    if listing is None:
        return unchanged()
    ids = [row.record.run_id for row in listing.rows]
    # Ownership is the run store's (OS or advisory locks), asked without taking them.
    owned = default_run_store().owned(ids) if ids else set()
    rows = [_item(s, s.record.run_id in owned, listing.now) for s in listing.rows]
    next_key = listing.next_key
    if f.status:
        matched = [r for r in rows if r.outcome and r.outcome.status in f.status]
        rows = matched[: f.size]
        if len(matched) > f.size:
            next_key = (rows[-1].stored.updated_ns, rows[-1].stored.record.run_id)
    older = f.querystring([("after", format_run_key(next_key))]) if next_key else ""
    context: dict[str, object] = {
        "scanned": len(listing.rows) if f.status else 0,
        "status_scan": STATUS_SCAN,
        "filter": f,
        "form": f,
        "page": listing,
        "rows": rows,
        "chips": f.chips(),
        # Later pages shift as runs are saved: only the first one polls.
        "live": after is None,
        "older_url": older,
        "newest_url": f.querystring() if after else "",
        **CHOICES,
    }
    return render_region(request, TEMPLATE, "run_records", context)


def _item(stored: StoredRun, owned: bool, now: int) -> RunItem:
    if stored.error:
        return RunItem(stored, owned, None, None)
    findings = len(validate_run(stored.record))
    return RunItem(stored, owned, findings, run_outcome(stored, owned, now))


@page
def run_record_detail(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """One run record: its outcome and the graph first, then the validator's findings,
    the fingerprints and the streams."""
    try:
        detail = read_run(run_id, seen_stamp(request))
    except (Corrupt, RecordsNewer) as exc:
        return _unreadable(request, run_id, exc)
    if detail is None:
        return unchanged()
    record = detail.stored.record
    findings = validate_run(record)
    catalog, values_error = get_catalog()
    owned = run_id in default_run_store().owned([run_id])
    context = {
        "detail": detail,
        "record": record,
        "tree": build_tree(record, findings),
        "owned": owned,
        "outcome": run_outcome(detail.stored, owned, detail.now),
        # Each value restored with the host's codecs, by its row's element id.
        "decoded": decoded_values(record, catalog) if catalog else {},
        "values_error": values_error,
    }
    return render_region(request, "console/run_records/detail.html", "run", context)


def _unreadable(request: HtmxHttpRequest, run_id: str, exc: Corrupt | RecordsNewer) -> HttpResponse:
    """409: the record exists but this code cannot read it. Shown with what the store
    keeps beside it; nothing is repaired or guessed."""
    context = {
        "run_id": run_id,
        "newer": isinstance(exc, RecordsNewer),
        "message": str(exc),
        "stored": read_unreadable_run(run_id),
    }
    return render(request, "console/run_records/unreadable.html", context, status=409)


OLD_PREFIX = "/runs"


def runs_moved(request: HttpRequest, rest: str = "") -> HttpResponse:
    """``/runs[/<run ID>][?query]`` before the rename: 301 to the same path and query
    under ``/run-records`` (308 for a method other than GET/HEAD, which keeps the method
    and then meets the page's own 405). Built from the escaped path as received, so an ID
    with ``/``, ``%`` or dot segments lands on the same record."""
    moved = request.get_full_path_info()[len(OLD_PREFIX) :]
    response = HttpResponsePermanentRedirect(f"{get_script_prefix()}run-records{moved}")
    if request.method not in ("GET", "HEAD"):
        response.status_code = 308
    return response

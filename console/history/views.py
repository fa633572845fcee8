"""The store in the past (``console.history.reads``): the Work page as of a moment
(``/works/<id>?as_of=``, which ``works.views.work_detail`` hands here), and what
changed between two moments in one Work (``/changes/<id>?from=&to=``) or in the
whole store (``/changes?from=&to=``)."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpResponse
from django.shortcuts import render

from console.history.counts import SINCE_MAX, read_counts_then
from console.history.moments import SEQ_MAX, Moment, parse_moment
from console.history.reads import (
    Changes,
    read_store_changes,
    read_work_changes,
    read_work_then,
)
from console.http import HtmxHttpRequest, page
from console.urlstate import FilterError
from storage import wall_clock

THEN = "console/work_then.html"
COUNTS = "console/dashboard_then.html"
CHANGES = "console/changes.html"


def dashboard_then(request: HtmxHttpRequest, scope_id: str) -> HttpResponse:
    """A dashboard's Work counts at ``?as_of=`` beside now; a bad moment is the 400
    page, an unknown Scope counts nothing (as its dashboard does)."""
    context: dict[str, object] = {
        "scope_id": scope_id,
        "as_of": request.GET["as_of"],
        "since_max": SINCE_MAX,
    }
    try:
        moment = parse_moment(request.GET["as_of"], "as_of", wall_clock())
        counts = read_counts_then(scope_id, moment)
    except FilterError as exc:
        return render(request, COUNTS, {**context, "errors": exc.errors}, status=400)
    return render(request, COUNTS, {**context, "page": counts})


def work_then(request: HtmxHttpRequest, work_id: str) -> HttpResponse:
    """The Work as it was at ``?as_of=``: read-only, no actions, no polling (the
    past does not change); a bad moment is the 400 page."""
    try:
        moment = parse_moment(request.GET.get("as_of", ""), "as_of", wall_clock())
        then = read_work_then(work_id, moment)
    except FilterError as exc:
        context = {"errors": exc.errors, "work_id": work_id, "as_of": request.GET["as_of"]}
        return render(request, THEN, context, status=400)
    return render(request, THEN, {"page": then, "work": then.work_now, "work_id": work_id})


@dataclass(frozen=True, slots=True)
class Span:
    """A changes page's query: ``from`` (required), ``to`` (None: now), ``after``
    (a log position: the page's cursor), and each as typed, for the links."""

    start: Moment
    end: Moment | None
    after: int
    raw: dict[str, str]


def parse_span(request: HtmxHttpRequest) -> Span:
    """The span a changes page asks for; ``FilterError`` naming each bad part."""
    now = wall_clock()
    raw = {name: request.GET.get(name, "").strip() for name in ("from", "to", "after")}
    errors: dict[str, str] = {}
    start = end = None
    try:
        start = parse_moment(raw["from"], "from", now)
    except FilterError as exc:
        errors |= exc.errors
    if raw["to"]:
        try:
            end = parse_moment(raw["to"], "to", now)
        except FilterError as exc:
            errors |= exc.errors
    after = 0
    if raw["after"]:
        digits = raw["after"].isascii() and raw["after"].isdigit()
        if not digits or int(raw["after"]) > SEQ_MAX:
            errors["after"] = "after is a position in the version log."
        else:
            after = int(raw["after"])
    if errors or start is None:
        raise FilterError(errors)
    return Span(start, end, after, raw)


def _answer(request: HtmxHttpRequest, changes: Changes, span: Span, work_id: str) -> HttpResponse:
    if changes.start.version > changes.end.version:
        errors = {"to": "The end of the span comes before its start."}
        refused = {"errors": errors, "work_id": work_id, "raw": span.raw}
        return render(request, CHANGES, refused, status=400)
    context: dict[str, object] = {
        "page": changes,
        "work": changes.work,
        "raw": span.raw,
        "work_id": work_id,
    }
    return render(request, CHANGES, context)


@page
def work_changes(request: HtmxHttpRequest, work_id: str) -> HttpResponse:
    """The transactions that changed a Work from ``?from=`` to ``?to=`` (default now),
    a page at a time (``?after=<log position>``); bad input is the 400 page."""
    try:
        span = parse_span(request)
        changes = read_work_changes(work_id, span.start, span.end, span.after)
    except FilterError as exc:
        context = {"errors": exc.errors, "work_id": work_id, "raw": {}}
        return render(request, CHANGES, context, status=400)
    return _answer(request, changes, span, work_id)


@page
def store_changes(request: HtmxHttpRequest) -> HttpResponse:
    """Every record's changes from ``?from=`` to ``?to=``: Work, attempts, Waits,
    Timers, Scopes and KV entries, a page at a time; bad input is the 400 page."""
    try:
        span = parse_span(request)
        changes = read_store_changes(span.start, span.end, span.after)
    except FilterError as exc:
        return render(request, CHANGES, {"errors": exc.errors, "work_id": ""}, status=400)
    return _answer(request, changes, span, "")

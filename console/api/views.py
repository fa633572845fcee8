"""The API's read endpoints: each parses its page's URL filter (the same parser as the
page), makes the page's one read and answers its serialisation (console.api.serialise).

Pages are keyset pages: an answer's ``next`` is the cursor of the following page
(``after`` for Work and workflows, ``before`` for Events, newest first), ``next_url``
the whole URL; null at the end.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import reverse
from django.views.decorators.http import require_GET

from console.api import serialise
from console.api.http import ApiError, api_view, ok
from console.api.openapi import document
from console.events.filters import parse_event_filter
from console.events.reads import read_events
from console.routed.detail import read_workflow
from console.routed.filters import parse_workflow_cursor, parse_workflow_filter
from console.routed.reads import read_workflow_list
from console.urlstate import FilterError, parse_size
from console.works.filters import forward_key, parse_cursor, parse_work_filter
from console.works.reads import read_work_count_page, read_work_detail

# An Event cursor is a sequence number: a signed 64-bit column on every backend.
SEQUENCE_MAX = 2**63 - 1


def read[T](found: T | None) -> T:
    """A page's read: asked with no stamp it always reads (None is "unchanged since the
    stamp", for a poll)."""
    if found is None:
        raise RuntimeError("a read without a stamp answered 'unchanged'")
    return found


def _next_url(request: HttpRequest, name: str, cursor: str | None) -> str | None:
    if cursor is None:
        return None
    query = request.GET.copy()
    for key in ("after", "before"):
        query.pop(key, None)
    query[name] = cursor
    return f"{request.path}?{query.urlencode()}"


def _work_list_query(data: QueryDict) -> QueryDict:
    if "q" in data:
        raise ApiError(
            400, "The API takes the Work list's filters, not its search box.", {"q": "not accepted"}
        )
    if "before" in data:
        raise ApiError(
            400, "The API pages forward only: use after=<next>.", {"before": "not accepted"}
        )
    return data


@api_view()
def work_list(request: HttpRequest) -> HttpResponse:
    """The Work list: the page's filters (``state``, ``kind``, ``scope``, ...), ``size``,
    ``after=<next>``."""
    data = _work_list_query(request.GET)
    f = parse_work_filter(data)
    body = serialise.work_list(read_work_count_page(f, forward_key(parse_cursor(data))))
    return ok({**body, "next_url": _next_url(request, "after", body["next"])})


@api_view()
def work_detail(request: HttpRequest, work_id: str) -> HttpResponse:
    detail = read(read_work_detail(work_id))
    return ok(serialise.work_detail(detail))


@api_view()
def event_list(request: HttpRequest) -> HttpResponse:
    """The Event stream, newest first: the page's filters, ``size``, ``before=<next>``."""
    f, cursor = parse_event_filter(request.GET)
    if max(cursor.before, cursor.after) > SEQUENCE_MAX:
        raise FilterError({"before": "A sequence number is at most 2**63 - 1."})
    errors: dict[str, str] = {}
    size = parse_size(request.GET, errors)
    if errors:
        raise FilterError(errors)
    actors = f.actors(request.user.get_username())
    page = read(read_events(f, cursor, size, "", actors))
    body = serialise.event_list(page)
    return ok({**body, "next_url": _next_url(request, "before", body["next"])})


@api_view()
def workflow_list(request: HttpRequest) -> HttpResponse:
    """Routed workflows: the page's filters (``status``, ``kind``, ...), ``after``."""
    f = parse_workflow_filter(request.GET)
    page = read(read_workflow_list(f, parse_workflow_cursor(request.GET)))
    body = serialise.workflow_list(page)
    return ok({**body, "next_url": _next_url(request, "after", body["next"])})


@api_view()
def workflow_detail(request: HttpRequest, workflow_id: str) -> HttpResponse:
    detail = read(read_workflow(workflow_id))
    return ok(serialise.workflow_detail(detail))


@require_GET
def openapi(request: HttpRequest) -> HttpResponse:
    """This API's OpenAPI 3.1 document. Public: it describes the routes, never data,
    and tools that generate clients fetch it before they hold a token."""
    base = request.build_absolute_uri(reverse("api_openapi")).rsplit("/", 1)[0]
    return ok(document(base))

"""Routed runs (issue 18), the read side: Workflows (list and page), Deployments and
aliases, Invocations. Each page reads in one View and polls like the others; the
operator actions are ``console.routed``'s action views (the controls region each
page leaves for them)."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import Http404, HttpResponse
from django.shortcuts import render

from console.http import HtmxHttpRequest, page, render_region
from console.polling import seen_stamp, unchanged
from console.routed.artifacts import previews
from console.routed.detail import read_workflow
from console.routed.filters import (
    ALERTS,
    FACET_PARAMS,
    STATUSES,
    WorkflowFilter,
    parse_workflow_cursor,
    parse_workflow_filter,
)
from console.routed.graph import node_graph
from console.routed.reads import (
    WorkflowListPage,
    read_dashboard_tiles,
    read_deployments,
    read_invocations,
    read_workflow_list,
)
from console.urlstate import DEFAULT_PAGE_SIZE, PAGE_SIZES, FilterError, parse_size, querystring
from storage.routed.ids import InvocationID, WorkflowID

LIST_TEMPLATE = "console/routed/workflow_list.html"
FACET_LABELS = {
    "status": "Status",
    "kind": "Kind",
    "deployment": "Deployment",
    "reason": "Failure reason",
}


@dataclass(frozen=True, slots=True)
class FacetEntry:
    value: str
    label: str
    count: int
    url: str
    active: bool


@dataclass(frozen=True, slots=True)
class Facet:
    name: str
    label: str
    entries: list[FacetEntry]


def _facets(f: WorkflowFilter, listing: WorkflowListPage) -> list[Facet]:
    out = []
    for name in FACET_PARAMS:
        counts = listing.facets[name]
        chosen: tuple[str, ...] = getattr(f, name)
        values = list(counts)
        values += [v for v in chosen if v not in counts]  # a chosen value with no rows
        if name == "status":
            values.sort(key=lambda v: STATUSES.index(v) if v in STATUSES else len(STATUSES))
        else:
            values.sort(key=lambda v: (-counts.get(v, 0), v))
        entries = []
        for value in values:
            label = value
            if name == "deployment" and value in listing.deployments:
                d = listing.deployments[value]
                label = f"{d.package_name}@{d.package_version}"
            entries.append(
                FacetEntry(
                    value,
                    label,
                    counts.get(value, 0),
                    f.toggled(name, value).querystring(),
                    value in chosen,
                )
            )
        out.append(Facet(name, FACET_LABELS[name], entries))
    return out


@page
def workflow_list(request: HtmxHttpRequest) -> HttpResponse:
    """Workflows newest first: facets, ID search, filters in the URL, keyset pages."""
    try:
        f = parse_workflow_filter(request.GET)
        after = parse_workflow_cursor(request.GET)
    except FilterError as exc:
        invalid = {"errors": exc.errors, "form": request.GET, "sizes": PAGE_SIZES}
        return render(request, LIST_TEMPLATE, invalid, status=400)
    listing = read_workflow_list(f, after, seen_stamp(request))
    if listing is None:
        return unchanged()
    older = f.querystring([("after", listing.next_after)]) if listing.next_after else ""
    context: dict[str, object] = {
        "filter": f,
        "form": f,
        "page": listing,
        "rows": listing.rows,
        "facets": _facets(f, listing),
        "chips": f.chips(),
        "alerts": ALERTS,
        # Later pages shift as workflows are admitted: only the first one polls.
        "live": after is None,
        "older_url": older,
        "newest_url": f.querystring() if after else "",
        "sizes": PAGE_SIZES,
    }
    return render_region(request, LIST_TEMPLATE, "workflows", context)


@page
def workflow_detail(request: HtmxHttpRequest, workflow_id: str) -> HttpResponse:
    """One workflow: state, envelope, nodes, attempts, services, batches, control."""
    if not WorkflowID.valid(workflow_id):
        raise Http404(f"{workflow_id!r} is not a workflow ID")
    detail = read_workflow(workflow_id, seen_stamp(request))
    if detail is None:
        return unchanged()
    newest_first = [(v.record, v.artifacts) for v in detail.attempts]
    context = {
        "d": detail,
        "wf": detail.workflow.record,
        "graph": node_graph(detail.nodes, detail.handoffs),
        "previews": previews(newest_first),
    }
    return render_region(request, "console/routed/workflow_detail.html", "workflow", context)


@page
def deployments(request: HtmxHttpRequest) -> HttpResponse:
    """Every deployment with its live runs against its limit, and every alias."""
    listing = read_deployments(seen_stamp(request))
    if listing is None:
        return unchanged()
    return render_region(
        request, "console/routed/deployments.html", "deployments", {"page": listing}
    )


@page
def invocations(request: HtmxHttpRequest) -> HttpResponse:
    """Invocation receipts newest first, keyset pages (``after``: an invocation ID)."""
    errors: dict[str, str] = {}
    size = parse_size(request.GET, errors)
    after = request.GET.get("after", "") or None
    if after is not None and not InvocationID.valid(after):
        errors["after"] = f"{after!r} is not a page position (an invocation ID)."
    if errors:
        return render(request, "console/routed/invocations.html", {"errors": errors}, status=400)
    listing = read_invocations(after, size, seen_stamp(request))
    if listing is None:
        return unchanged()
    params = [("size", str(size))] if size != DEFAULT_PAGE_SIZE else []
    context = {
        "page": listing,
        "live": after is None,
        "older_url": querystring([*params, ("after", listing.next_after)])
        if listing.next_after
        else "",
    }
    return render_region(request, "console/routed/invocations.html", "invocations", context)


@page
def dashboard_tiles(request: HtmxHttpRequest) -> HttpResponse:
    """The all-scopes dashboard's routed tiles, a region loaded (and polling) on its
    own: each tile links to the Workflows list it counts."""
    tiles = read_dashboard_tiles(seen_stamp(request))
    if tiles is None:
        return unchanged()
    return render(request, "console/routed/_dashboard_tiles.html", {"tiles": tiles})

"""Saved views and the column chooser over HTTP: plain form POSTs that redirect back
(no script needed), a page to rename and delete, and the Work list's menu context."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.http import local_next
from console.polling import seen_stamp
from console.saved import rules
from console.saved.columns import (
    COLUMN_KEYS,
    choose_work_columns,
    column_choices,
    shown_work_columns,
)
from console.saved.presets import PRESETS
from console.works.filters import WorkFilter

TEMPLATE = "console/saved/views.html"


def _work_list(query: str) -> str:
    return reverse("home") + (f"?{query}" if query else "")


def work_list_context(request: HttpRequest, f: WorkFilter | None) -> dict[str, Any]:
    """What the Work list adds for saved views and columns: the shown columns (every
    render, polls too: one query), and the menu (not on polls, which do not draw it:
    one more query)."""
    context: dict[str, Any] = {"columns": shown_work_columns(request.user)}
    if seen_stamp(request):
        return context
    query = f.querystring().lstrip("?") if f is not None else ""
    here = _work_list(query)
    views = list(rules.listed(request.user))  # type: ignore[arg-type]
    context["saved"] = {
        "presets": [(p, p.url()) for p in PRESETS],
        "team": [(v, _work_list(v.query)) for v in views if v.team],
        "mine": [(v, _work_list(v.query)) for v in views if not v.team],
        "query": query,
        "here": here,
        "can_team": rules.may_manage_team(request.user),
        "columns": column_choices(context["columns"]),
    }
    return context


def _page(request: HttpRequest, status: int = 200, **extra: Any) -> HttpResponse:
    views = list(rules.listed(request.user))  # type: ignore[arg-type]
    context = {
        "presets": [(p, p.url()) for p in PRESETS],
        "team": [v for v in views if v.team],
        "mine": [v for v in views if not v.team],
        "can_team": rules.may_manage_team(request.user),
        "query": request.GET.get("query", ""),
        **extra,
    }
    return render(request, TEMPLATE, context, status=status)


@require_GET
@login_required
def saved_views(request: HttpRequest) -> HttpResponse:
    """Every view this user sees, the presets, and forms to rename and delete."""
    return _page(request)


@require_POST
@login_required
def save_view(request: HttpRequest) -> HttpResponse:
    """Save the submitted Work-list filter under a name, then open it."""
    raw_query = request.POST.get("query", "")
    team = request.POST.get("team", "") == "1"
    try:
        name = rules.clean_name(request.POST.get("name", ""))
        query = rules.canonical_query(raw_query)
        view, created = rules.save(request.user, name, query, team)  # type: ignore[arg-type]
    except rules.Refused as exc:
        form = {"name": request.POST.get("name", ""), "team": team}
        return _page(request, exc.status, error=exc.message, form=form, query=raw_query)
    verb = "Saved" if created else "Updated"
    whose = "team view" if view.team else "view"
    messages.success(request, f"{verb} {whose} “{view.name}”.")
    return redirect(_work_list(view.query))


@require_POST
@login_required
def rename_view(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        view = rules.rename(request.user, pk, request.POST.get("name", ""))  # type: ignore[arg-type]
    except IntegrityError:
        # Another request took the name between the check and the write.
        return _page(request, 409, error="There is already a view with that name.")
    except rules.Refused as exc:
        return _page(request, exc.status, error=exc.message)
    messages.success(request, f"Renamed the view to “{view.name}”.")
    return redirect(local_next(request) or reverse("saved_views"))


@require_POST
@login_required
def delete_view(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        view = rules.editable(request.user, pk)  # type: ignore[arg-type]
    except rules.Refused as exc:
        return _page(request, exc.status, error=exc.message)
    view.delete()
    messages.success(request, f"Deleted the view “{view.name}”.")
    return redirect(local_next(request) or reverse("saved_views"))


@require_POST
@login_required
def work_columns(request: HttpRequest) -> HttpResponse:
    """The column chooser: the ticked columns are shown, the others hidden."""
    shown = request.POST.getlist("show")
    unknown = sorted(set(shown) - COLUMN_KEYS)
    if unknown:
        message = f"No such column: {', '.join(unknown)[:200]}."
        context = {"status": 400, "title": "Invalid request", "message": message}
        return render(request, "console/error.html", context, status=400)
    choose_work_columns(request.user, shown)  # type: ignore[arg-type]
    return redirect(local_next(request) or reverse("home"))

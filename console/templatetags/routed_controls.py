"""The routed-run controls region (``{% routed_controls %}``): the buttons of the actions
the workflow map allows from the status, of those the request's user may use (its
authority scopes, read once per request and kept on it)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django import template
from django.http import HttpRequest
from django.utils.safestring import SafeString, mark_safe

from console.access import SCOPE_PERMISSION, may
from console.actions.routed import RoutedAction, notes_for
from console.paths import id_url
from console.routed.previews import allowed_actions
from console.templatetags.console import esc, visible, when
from console.templatetags.ids import short_id
from console.templatetags.routed import routed_badge, workflow_url
from storage.routed.enums import AuthorityScope, WorkflowStatus

register = template.Library()


def _scopes(request: HttpRequest) -> frozenset[AuthorityScope]:
    scopes = getattr(request, "_routed_scopes", None)
    if scopes is None:
        scopes = frozenset(s for s, perm in SCOPE_PERMISSION.items() if may(request, perm))
        request._routed_scopes = scopes  # type: ignore[attr-defined]  # once per request, not per row
    return frozenset(scopes)


@register.simple_tag(takes_context=True)
def routed_buttons(
    context: template.Context,
    status: WorkflowStatus,
    cancel_desired: Any = False,
    live_attempt: Any = False,
) -> list[RoutedAction]:
    request = context.get("request")
    if request is None:
        return []
    scopes = _scopes(request)
    allowed = allowed_actions(
        status, cancel_desired=bool(cancel_desired), live_attempt=bool(live_attempt)
    )
    return [act for act in allowed if act.authority in scopes]


@register.simple_tag(takes_context=True)
def routed_controls(
    context: template.Context,
    wf: Any,
    back: str = "",
    cancel_desired: Any = False,
    live_attempt: Any = False,
) -> SafeString:
    """The controls region of one workflow (a WorkflowRecord) on its page: a button per
    action ``routed_buttons`` leaves, each opening its confirmation in place (the slot
    after the buttons) with htmx and the full page without; ``back`` is where the
    confirmation returns to, ``cancel_desired`` the desired state's cancel precedence,
    ``live_attempt`` whether an attempt has not ended (no Continue then)."""
    e = esc(wf.workflow_id)
    query = f"?next={quote(back, safe='/')}" if back else ""
    buttons = []
    for act in routed_buttons(context, wf.status, cancel_desired, live_attempt):
        url = esc(id_url(act.url_name, wf.workflow_id) + query)
        danger = " danger" if act.value == "cancel" else ""
        buttons.append(
            f'<a class="button small{danger}" href="{url}" hx-get="{url}" '
            f'hx-target="#confirm-{e}" hx-swap="innerHTML" hx-push-url="false" '
            f'data-routed-action="{esc(act.value)}">{esc(visible(act.verb))}…</a> '
        )
    # Escaped above: the ID, the URLs and the verbs went through esc().
    return mark_safe(  # noqa: S308
        f'<div class="routed-buttons" data-routed-controls="{e}">{"".join(buttons)}'
        f'<div class="routed-confirm-slot" id="confirm-{e}"></div></div>'
    )


# The list row's short verbs (the page's buttons say "Amend limits…").
_ROW_VERB = {RoutedAction.AMEND_LIMITS: "Amend"}
# The list's columns, the actions cell included: a confirmation row spans them all.
WORKFLOW_COLUMNS = 7


def row_actions(context: template.Context, wf: Any, back: str, live_attempt: bool) -> str:
    """A Workflows list row's actions, as the Work list draws its own (``row_actions``
    in ``templatetags/works.py``): short links on one line, each opening its
    confirmation in place with htmx (in the row's confirmation row, below it) or as
    its own page without; the same actions the workflow's page offers, Continue only
    where no attempt is live (``page.live_attempts``). In a disclosure that a wide
    screen shows open without its summary (``console.css``, ``details.row-menu``) and
    a phone shows as one "Actions" button pinned at the row's end."""
    e = esc(wf.workflow_id)
    query = f"?next={quote(back, safe='/')}" if back else ""
    links = []
    for act in routed_buttons(context, wf.status, False, live_attempt):
        url = esc(id_url(act.url_name, wf.workflow_id) + query)
        danger = ' class="danger"' if act.value == "cancel" else ""
        verb = esc(visible(_ROW_VERB.get(act, act.verb)))
        links.append(
            f'<a{danger} href="{url}" hx-get="{url}" hx-target="#confirm-{e}" '
            f'hx-swap="innerHTML" hx-push-url="false" data-routed-action="{esc(act.value)}" '
            f'data-inline-open aria-label="{esc(visible(act.verb))} {e}">{verb}…</a>'
        )
    if not links:
        return ""
    return (
        f'<details class="row-menu"><summary>Actions<span class="visually-hidden"> of {e}'
        f'</span></summary><span class="row-menu-items">{"".join(links)}</span></details>'
    )


@register.simple_tag(takes_context=True)
def workflow_rows(context: template.Context, rows: Any, page: Any, back: str) -> SafeString:
    """The Workflows list's ``<tr>`` per row (``console.routed.reads``: ``s.record`` the
    WorkflowRecord; ``page.deployments`` by ID, ``page.now``, ``page.live_attempts``),
    each on one line with its actions returning to ``back``, and after it the row a
    confirmation opens in (hidden while empty, ``console.css``). One tag, not a
    template loop: the loop's variable lookups and an include per row were most of
    the page (issue 22, benchmark 9)."""
    out = []
    for s in rows:
        wf = s.record
        e = esc(wf.workflow_id)
        d = page.deployments.get(wf.deployment_id)
        if d:
            deployment = f"{esc(visible(d.package_name))}@{esc(visible(d.package_version))}"
        else:
            deployment = esc(visible(wf.deployment_id))
        reason = getattr(wf.terminal_reason, "name", "") or "—"
        live = wf.workflow_id in page.live_attempts
        link = short_id(wf.workflow_id, workflow_url(wf.workflow_id), "workflow ID")
        cells = (
            f'<td class="id">{link}</td>',
            f"<td>{routed_badge(wf.status)}</td>",
            f'<td class="mono">{esc(visible(wf.workflow_kind))}</td>',
            f'<td><span class="mono wf-deployment" title="{deployment}">{deployment}</span></td>',
            f'<td class="mono">{esc(visible(reason))}</td>',
            f'<td class="time">{when(wf.updated_at, page.now)}</td>',
            f'<td class="row-actions">{row_actions(context, wf, back, live)}</td>',
        )
        out.append(f'<tr id="row-{e}">\n' + "\n".join(cells) + "\n</tr>\n")
        out.append(
            f'<tr class="routed-confirm-row"><td colspan="{WORKFLOW_COLUMNS}">'
            f'<div class="routed-confirm-slot" id="confirm-{e}"></div></td></tr>\n'
        )
    # Escaped above: every value went through esc() or a tag that escapes.
    return mark_safe("".join(out))  # noqa: S308


@register.simple_tag(takes_context=True)
def routed_may(context: template.Context, scope: str) -> bool:
    """Whether the request may use ``scope`` ("runs:control", "runs:amend_limits")."""
    request = context.get("request")
    return request is not None and any(s.value == scope for s in _scopes(request))


@register.simple_tag
def routed_reasons(workflow_id: str) -> dict[str, str]:
    """The operators' reasons for a workflow's control requests, by idempotency key
    (the form token the request was keyed by): one query."""
    return {n.token.split("/", 1)[0]: n.reason for n in notes_for(workflow_id)}

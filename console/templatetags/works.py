"""A Work row's cells as tags: its state, its last try and its row actions.

These were includes (``_work_state.html``, ``_last_try.html``, ``_row_actions.html``).
An include costs a template lookup, a context push and a node walk each time; the Work
list draws three per row, which was a third of its render (issue 22). The markup is
the same; every value goes through ``visible`` and is escaped as the template did
(``tests/console/test_work_tags.py``, ``test_last_attempt.py``, ``test_odd_ids.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from console.paths import id_url, url_maker
from console.templatetags.console import badge, countdown, esc, visible, when
from console.templatetags.ids import short_id

register = template.Library()

_EXHAUSTED_BADGE = mark_safe(
    '<span class="badge badge-exhausted" title="ready, but its retries are used up: '
    'nothing runs it until an operator retries it">exhausted</span>'
)
_EXHAUSTED_NEXT = mark_safe(
    '<span class="next exhausted" title="Ready, but nothing will run it again: its '
    "automatic retries are used up. It needs an operator's Retry.\">exhausted: retries "
    "used up, needs an operator</span>"
)
_NEVER = mark_safe('<span class="muted small">not attempted yet</span>')
_NO_RETRY = mark_safe('<span class="next muted">no retry scheduled</span>')


@register.simple_tag
def work_state(w: Any, t: Any) -> SafeString:
    """A Work's state badge, "exhausted" for ready Work nothing will run again (``t`` its
    ``console.attempts.LastTry``, or "" when there is none)."""
    if getattr(t, "exhausted", False):
        return _EXHAUSTED_BADGE
    return badge(w.state)


@register.simple_tag
def last_try(t: Any, now: int) -> SafeString:
    """A Work's latest attempt and what comes next (``t`` a LastTry, "" for none; ``now``
    the page's time): the failure where the retry decision is made. The whole outcome
    text is in the title and, when cut, in a <details> (no script)."""
    if not getattr(t, "attempt", 0):
        return _NEVER
    parts = [
        f'<span class="attempt-n">attempt {esc(visible(t.attempt))}</span>',
        f'<span class="badge badge-{esc(t.tone)}">{esc(visible(t.label))}</span>',
    ]
    if t.message:
        title = esc(t.message)
        if t.truncated:
            parts.append(
                f'<details class="outcome-text"><summary title="{title}">'
                f'{esc(visible(t.short))}</summary><p class="whole">'
                f"{esc(visible(t.message))}</p></details>"
            )
        else:
            parts.append(
                f'<span class="outcome-text" title="{title}">{esc(visible(t.message))}</span>'
            )
    if t.next == "exhausted":
        parts.append(_EXHAUSTED_NEXT)
    elif t.next == "timer":
        purpose = (
            "retry" if t.retry_purpose == "retry" else esc(visible(t.retry_purpose or "timer"))
        )
        parts.append(f'<span class="next">{purpose} at {countdown(t.retry_at, now)} (timer)</span>')
    elif t.next == "none":
        parts.append(_NO_RETRY)
    # Escaped above: every value went through esc(), the rest is our markup.
    return mark_safe('<div class="last-try">\n  ' + "\n  ".join(parts) + "\n</div>")  # noqa: S308


@register.simple_tag
def row_actions(w: Any, t: Any, back: str) -> SafeString:
    """Retry and Cancel on a list row (``back`` the page to return to, already
    urlencoded): with htmx each opens the compact confirmation under the row; without,
    the full confirmation page, which returns to ``back`` too."""
    return _row_actions(w, t, back, url_maker("retry_work"), url_maker("cancel_work"))


def _row_actions(
    w: Any, t: Any, back: str, retry: Callable[[str], str], cancel: Callable[[str], str]
) -> SafeString:
    links = []
    e = esc(w.id)
    if getattr(t, "next", ""):
        links.append(_inline_action(esc(f"{retry(w.id)}?next={back}"), "Retry", "", e))
    if not w.terminal:
        url = esc(f"{cancel(w.id)}?next={back}")
        links.append(_inline_action(url, "Cancel", ' class="danger"', e))
    # Escaped above: the URLs and the ID went through esc().
    return mark_safe('<td class="row-actions">' + "".join(links) + "</td>")  # noqa: S308


def _inline_action(url: str, verb: str, css: str, e: str) -> str:
    """One row action's link (``url`` and the ID ``e`` escaped): its confirmation
    opens under the row with htmx, or as its own page without."""
    return (
        f'<a{css} href="{url}" hx-get="{url}" hx-target="closest tr" hx-swap="afterend" '
        f'hx-push-url="false" data-inline-open aria-label="{verb} {e}">{verb}…</a>'
    )


@register.filter
def work_url(work_id: str) -> str:
    """The Work page's URL: ``{% url 'work_detail' work_id=... %}`` without a reverse()."""
    return id_url("work_detail", work_id)


# ---------------------------------------------------------------- the Work list's rows
# One tag for the whole table body: a template loop spent most of the page's render
# resolving variables and walking ``{% if %}`` nodes (about 30 per row, 50 rows). The
# markup is the loop's, cell for cell, built by the same tags.

_TEXT_CELLS = (
    ("kind", "kind", False),
    ("scope", "scope_id", True),
    ("source", "source", False),
    ("executor", "latest_executor", True),
)


@register.simple_tag
def work_rows(rows: Any, columns: Any, act: bool, now: int, back: str) -> SafeString:
    """The ``<tr>`` of each (Work, LastTry) in ``rows``: the select box and the row
    actions when ``act``, the ID, and the ``columns`` the user chose
    (``console/saved/columns.py``), in their fixed order."""
    out = []
    page, retry, cancel = (
        url_maker("work_detail"),
        url_maker("retry_work"),
        url_maker("cancel_work"),
    )
    for w, t in rows:
        e = esc(w.id)
        cells = []
        if act:
            cells.append(
                f'<td class="select"><input type="checkbox" name="work" value="{e}" '
                f'aria-label="Select {e}"></td>'
            )
        cells.append(f'<td class="id">{short_id(w.id, page(w.id), "Work ID")}</td>')
        if "state" in columns:
            cells.append(f"<td>{work_state(w, t)}</td>")
        if "last" in columns:
            cells.append(f'<td class="last">{last_try(t, now)}</td>')
        for column, field, dashed in _TEXT_CELLS:
            if column in columns:
                value = getattr(w, field)
                shown = esc(visible(value)) if value or not dashed else "—"
                cells.append(f'<td class="mono">{shown}</td>')
        if "created" in columns:
            cells.append(f'<td class="time">{when(w.created_at, now)}</td>')
        if "updated" in columns:
            cells.append(f'<td class="time">{when(w.updated_at, now)}</td>')
        if act:
            cells.append(_row_actions(w, t, back, retry, cancel))
        out.append("<tr>\n" + "\n".join(cells) + "\n</tr>\n")
    # Escaped above: each cell is esc()'d text or a tag's safe markup.
    return mark_safe("".join(out))  # noqa: S308


@register.simple_tag
def facet_items(dim: Any, entries: Any) -> SafeString:
    """The ``<li>`` of each facet entry (``console.works.filters.facet_entries``): a
    link adding the value to the filter, the value shown (a badge for a state, "(none)"
    for no value) and its count; the value in the filter is marked current."""
    out = []
    for e in entries:
        if dim["name"] == "state":
            shown = esc(visible(badge(e["value"])))
        elif e["value"]:
            shown = f'<span class="mono">{esc(visible(e["value"]))}</span>'
        else:
            shown = '<span class="muted">(none)</span>'
        count = f'<span class="n">{esc(visible(e["count"]))}</span>'
        if e["active"]:
            out.append(
                f'<li><span class="facet-value active" aria-current="true">{shown}</span>'
                f"{count}</li>"
            )
        elif e["url"]:
            url = esc(e["url"])
            out.append(
                f'<li><a class="facet-value" href="{url}" hx-get="{url}" '
                f'title="Add this filter">{shown}</a>{count}</li>'
            )
        else:
            out.append(f'<li><span class="facet-value">{shown}</span>{count}</li>')
    # Escaped above, as in row cells.
    return mark_safe("\n".join(out))  # noqa: S308

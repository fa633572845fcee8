"""Readable IDs: an ID shown shortened, the whole of it in a tooltip, and a copy button.

``{% short_id value %}`` renders the ID as text, ``{% short_id value href %}`` as a
link. The element holds the *whole* ID as its text (drawn through ``visible``, so a
bidi override or control character is shown, not obeyed); the stylesheet clips it to
about eight characters and an ellipsis. So without JavaScript, and for find-in-page,
selecting or a screen reader, the ID is all there; only the picture is short. The
full ID is also in ``title`` (the tooltip) and in the copy button's accessible label.

The copy button is inert markup (``data-copy``): one delegated listener in
``static/js/console.js`` copies it and says "Copied" in a live region, and the
button is hidden until that script has run (``html.js``), so a page without
JavaScript shows no button that does nothing.
"""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from console.templatetags.console import esc, visible

register = template.Library()

_DASH = mark_safe('<span class="muted">—</span>')

# Two overlapping sheets, drawn in the text colour: no font has to carry a copy glyph
# (Chromium on Debian showed "⧉" as a missing-glyph box). Markup, not a style: the CSP
# allows it.
_ICON = mark_safe(
    '<svg aria-hidden="true" focusable="false" width="12" height="12" viewBox="0 0 16 16">'
    '<rect x="5" y="5" width="9" height="9" rx="1.5" fill="none" stroke="currentColor" '
    'stroke-width="1.5"/><path d="M11 2.5H3.5a1 1 0 0 0-1 1V11" fill="none" '
    'stroke="currentColor" stroke-width="1.5"/></svg>'
)


@register.simple_tag
def short_id(value: object, href: str = "", noun: str = "ID") -> SafeString:
    """An ID shortened for a table cell, with its copy button; "" shows a dash.

    ``noun`` names what is copied in the button's label ("Work ID", "Execution ID").
    Every attribute and the text are escaped (``esc``, as ``format_html`` would): an ID
    may hold any character the storage identifier rule accepts (quotes, "<", "&")."""
    full = "" if value is None else str(value)
    if not full:
        return _DASH
    e = esc(full)
    clipped = f'<span title="{e}" data-sid>{esc(visible(full))}</span>'
    # No wrapper element: a linked cell keeps the ``<a class="mono" href="...">`` it has
    # always had (lists' tests and browser journeys find rows by it).
    if href:
        shown = f'<a class="mono" href="{esc(href)}">{clipped}</a>'
    else:
        shown = f'<span class="mono">{clipped}</span>'
    return mark_safe(shown + _copy(e, esc(noun)))  # noqa: S308 - every part escaped


@register.simple_tag
def copy_button(value: object, noun: str = "ID") -> SafeString:
    """The copy button alone, beside an ID shown whole (a page's heading)."""
    full = "" if value is None else str(value)
    if not full:
        return mark_safe("")
    return mark_safe(_copy(esc(full), esc(noun)))  # noqa: S308 - escaped


def _copy(full: str, noun: str) -> str:
    """The copy button's markup from its parts, already escaped."""
    return (
        f'<button type="button" class="copy-id" data-copy="{full}" aria-label="Copy {noun} '
        f'{full}" title="Copy the whole {noun}">{_ICON}</button>'
    )

"""Template helpers: times (relative with the absolute in a title), lease countdowns,
state badges, pretty JSON payloads and the attributes of a polling region."""

from __future__ import annotations

import html
import json
import re
import unicodedata
from typing import Any
from urllib.parse import urlencode

from django import template
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeData, SafeString, mark_safe

from console.polling import poll_seconds
from storage import Payload, from_ns

register = template.Library()

NS = 1_000_000_000


def esc(value: Any) -> str:
    """What ``format_html`` makes of one argument (``conditional_escape``), without its
    lazy-string wrapper and SafeString per call: the Work list's rows call it a few
    hundred times a page. Already-safe HTML stays as it is."""
    if isinstance(value, SafeData):
        return str(value)
    return html.escape(str(value))


def absolute(ns: int) -> str:
    """UTC to the second, e.g. 2025-11-30 14:03:07Z."""
    return from_ns(ns).strftime("%Y-%m-%d %H:%M:%SZ")


def span(seconds: float) -> str:
    """A duration in at most two units: 45s, 3m 12s, 5h 3m, 2d 4h."""
    s = int(abs(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def relative(ns: int, now: int) -> str:
    delta = (now - ns) / NS
    if abs(delta) < 1:
        return "just now"
    return f"{span(delta)} ago" if delta > 0 else f"in {span(delta)}"


@register.filter
def abstime(ns: int) -> str:
    return absolute(ns) if ns else "—"


@register.simple_tag
def when(ns: int, now: int) -> SafeString:
    """A relative time that console.js keeps fresh, the exact instant in its title."""
    if not ns:
        return mark_safe('<span class="muted">—</span>')
    dt = from_ns(ns)
    iso = dt.isoformat()  # "2025-11-30T14:03:07.123456+00:00" (no fraction at .000000)
    # The title, 2025-11-30 14:03:07.123456Z, cut from it: strftime took half the tag.
    title = f"{iso[:10]} {iso[11:19]}.{dt.microsecond:06d}Z"
    # Every part is digits, "-", ":", "+", "." and the words of relative(): nothing
    # to escape (format_html's escaping was a third of this tag's cost).
    return mark_safe(  # noqa: S308
        f'<time datetime="{iso}" title="{title}" data-age="{(now - ns) // NS}">'
        f"{relative(ns, now)}</time>"
    )


@register.simple_tag
def countdown(ns: int, now: int) -> SafeString:
    """A deadline (lease expiry, timer fire time): the absolute time and the seconds
    left at render; console.js counts down every second and marks it expired. Expiry
    is exclusive: at ``now == ns`` it has already expired."""
    if not ns:
        return mark_safe('<span class="muted">—</span>')
    remaining = (ns - now) / NS
    expired = remaining <= 0
    text = f"expired {span(remaining)} ago" if expired else f"in {span(remaining)}"
    return format_html(
        '<time class="countdown{}" datetime="{}" title="{}" data-remaining="{}">'
        '<span class="abs">{}</span> · <span class="left">{}</span></time>',
        " expired" if expired else "",
        from_ns(ns).isoformat(),
        absolute(ns),
        f"{remaining:.3f}",
        absolute(ns)[11:],
        text,
    )


@register.simple_tag
def age(ns: int, now: int) -> str:
    return span((now - ns) / NS) if ns else "—"


@register.filter
def badge(state: Any) -> SafeString:
    value = esc(getattr(state, "value", state))
    return mark_safe(f'<span class="badge badge-{value}">{value}</span>')  # noqa: S308 - escaped


@register.filter
def pretty(payload: Payload | None) -> str:
    """A payload's JSON indented for reading (the template escapes it)."""
    if payload is None:
        return ""
    try:
        return json.dumps(json.loads(payload.data), indent=2, ensure_ascii=False, sort_keys=True)
    except ValueError:
        return payload.data.decode("utf-8", "replace")


@register.filter
def reason_of(payload: Payload | None) -> str:
    """The operator's reason in a core.manual payload, else ""."""
    if payload is None:
        return ""
    try:
        data = json.loads(payload.data)
    except ValueError:
        return ""
    return str(data.get("reason", "")) if isinstance(data, dict) else ""


@register.simple_tag
def actor_link(actor: str) -> SafeString:
    """Who caused an Event: an operator's actor links to their page (what they did),
    any other actor is plain text, none a dash."""
    if not actor:
        return mark_safe('<span class="muted">—</span>')
    kind, _, name = actor.partition(":")
    if kind != "operator" or not name:
        return format_html('<span class="mono">{}</span>', visible(actor))
    url = reverse("operator", kwargs={"name": name})
    return format_html('<a class="mono" href="{}">{}</a>', url, visible(actor))


@register.simple_tag
def key_link(key: Any) -> SafeString:
    """A correlation key as a chip linking to everything about it (``/keys``)."""
    query = urlencode([("source", key.source), ("id", key.external_id)])
    return format_html(
        '<a class="key mono" href="{}?{}">{}/{}</a>',
        reverse("key"),
        query,
        visible(key.source),
        visible(key.external_id),
    )


@register.filter
def grouped(n: int) -> str:
    """A count with thousands separated (1,000), as the bulk pages state them."""
    return f"{n:,}"


@register.filter
def filesize(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


@register.filter
def get(mapping: dict[str, Any], key: str) -> Any:
    return mapping.get(key, "")


@register.simple_tag(takes_context=True)
def poll_attrs(context: template.Context, stamp: str, calm: bool = False) -> SafeString:
    """The attributes that make a region poll its own URL with the last stamp it saw.
    No polling when the interval picker says "off". ``calm``: a list newest first,
    which console.js keeps still when new rows arrive above ("N new, show")."""
    request: HttpRequest = context["request"]
    seconds = poll_seconds(request)
    if not seconds:
        return format_html('data-stamp="{}"', stamp)
    params = [(k, v) for k, vs in request.GET.lists() if k != "stamp" for v in vs]
    params.append(("stamp", stamp))
    url = f"{request.path}?{urlencode(params)}"
    return format_html(
        'data-poll{} data-stamp="{}" hx-get="{}" hx-trigger="every {}s, consolewake" '
        'hx-swap="outerHTML"',
        " data-calm" if calm else "",
        stamp,
        url,
        seconds,
    )


@register.simple_tag(takes_context=True)
def here(context: template.Context) -> str:
    """This page's URL without the poll's ``stamp``: where an action returns to."""
    request: HttpRequest = context["request"]
    params = [(k, v) for k, vs in request.GET.lists() if k != "stamp" for v in vs]
    return request.path + (f"?{urlencode(params)}" if params else "")


@register.simple_tag(takes_context=True)
def poll_choice(context: template.Context) -> int:
    return poll_seconds(context["request"])


@register.simple_tag(takes_context=True)
def may_act(context: template.Context) -> bool:
    """Whether to show the Work actions: the Work permission, the console not read-only."""
    from console.access import WORK_CONTROL, may

    return may(context["request"], WORK_CONTROL)


@register.simple_tag(takes_context=True)
def role(context: template.Context) -> str:
    from django.conf import settings

    from console.access import WORK_CONTROL, holds

    request = context["request"]
    if not holds(request.user, WORK_CONTROL):
        return "viewer"
    return "operator, read-only" if settings.CONSOLE_READ_ONLY else "operator"


@register.simple_tag
def read_only() -> bool:
    from django.conf import settings

    return bool(settings.CONSOLE_READ_ONLY)


_SECTIONS = {
    "home": "work",
    "work_detail": "work",
    "cancel_work": "work",
    "retry_work": "work",
    "bulk_action": "work",
    "errors": "errors",
    "events": "events",
    "event_detail": "events",
    "executions": "executions",
    "artifact": "executions",
    "waits": "waits",
    "timers": "timers",
    "kv": "kv",
    "scopes": "scopes",
    "run_records": "run_records",
    "run_record": "run_records",
    "dashboard": "dashboard",
    "dashboard_scope": "dashboard",
    # Routed runs (console/routed/).
    "routed_workflows": "routed",
    "routed_workflow": "routed",
    "routed_deployments": "routed",
    "routed_invocations": "routed",
}


@register.simple_tag(takes_context=True)
def nav_section(context: template.Context) -> str:
    match = getattr(context.get("request"), "resolver_match", None)
    return _SECTIONS.get(getattr(match, "url_name", "") or "", "")


@register.filter
def cap(value: int, most: int) -> int:
    return min(int(value), int(most))


# Control (Cc), format (Cf: bidi overrides and isolates, zero-width), line and paragraph
# separators, private-use and unpaired surrogates: shown as their code point.
_INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs"})
# Printable ASCII with line breaks and tabs (multi-line text, pretty JSON): as it is.
_PLAIN = re.compile(r"[\x20-\x7e\n\t]*")
_LAYOUT = frozenset("\n\t")
# Bidi classes that can reorder the text around them: right-to-left letters, Arabic
# digits and the explicit embeddings, overrides and isolates.
_REORDERS = frozenset(
    {"R", "AL", "AN", "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}
)


def _mark(char: str) -> str:
    """A control or format character as its code point, named in the title."""
    name = unicodedata.name(char, "control character")
    return format_html('<span class="ctl" title="{}">{}</span>', name, f"U+{ord(char):04X}")


@register.filter
def visible(value: Any) -> Any:
    """User text (IDs, names, reasons) for a text node: isolated in ``<bdi>`` so
    right-to-left text or a bidi override cannot reorder what stands beside it, with
    each control or format character shown as ``U+XXXX`` rather than obeyed (a Work ID
    ``rtl\u202egnp.exe`` would read "...exe.png"). Plain ASCII, non-strings and
    already-safe HTML pass through unchanged."""
    if not isinstance(value, str) or isinstance(value, SafeData):
        return value
    if _PLAIN.fullmatch(value):
        return value
    # Decided per distinct character, not per character: an inline log is 256 KiB of
    # a few dozen distinct characters (one loop over every character took seconds).
    distinct = set(value)
    isolate = any(unicodedata.bidirectional(c) in _REORDERS for c in distinct)
    hidden = {c for c in distinct if unicodedata.category(c) in _INVISIBLE and c not in _LAYOUT}
    # escape() maps each character on its own and leaves the hidden ones as they are,
    # so they can be replaced after it by our markup.
    shown: str = escape(value)
    if hidden:
        isolate = True
        marks = {c: _mark(c) for c in hidden}
        pattern = re.compile("[" + "".join(re.escape(c) for c in sorted(hidden)) + "]")
        shown = pattern.sub(lambda m: marks[m.group()], shown)
    # Escaped above: every character, or our own markup around a code point.
    return mark_safe(f"<bdi>{shown}</bdi>" if isolate else shown)  # noqa: S308


@register.simple_tag(takes_context=True)
def theme_choice(context: template.Context) -> dict[str, str]:
    """The theme the page renders in and what the toggle switches to. A page rendered
    without a request (the 500 page) follows the system."""
    from console.theme import DEFAULT, LABELS, next_theme, theme_of

    request = context.get("request")
    current = theme_of(request) if request is not None else DEFAULT
    following = next_theme(current)
    return {"current": current, "next": following, "label": LABELS[current]}

"""Template filters of the routed-run pages (``console.routed``)."""

from __future__ import annotations

from enum import Enum
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from console.paths import id_url

register = template.Library()


@register.filter
def workflow_url(workflow_id: str) -> str:
    """A workflow page's URL without a reverse() per row (``console.paths``)."""
    return id_url("routed_workflow", workflow_id)


@register.filter
def routed_badge(status: Any) -> SafeString:
    """A status enum (or its name) as a badge: ``badge-<name in lower case>``, so the
    routed statuses get their own colours beside the contract's states."""
    name = status.name if isinstance(status, Enum) else str(status)
    return format_html(
        '<span class="badge rbadge-{}">{}</span>', name.lower(), name.lower().replace("_", " ")
    )


@register.filter
def ms(value: int | None) -> str:
    """A duration in milliseconds, as the largest two units: "1h 05m", "2m 30s", "850ms"."""
    if value is None:
        return "—"
    n = int(value)
    if n < 1000:
        return f"{n}ms"
    seconds = n // 1000
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h"


@register.filter
def enum_name(value: Any) -> str:
    """An enum member's name in lower case with spaces ("—" for None)."""
    if value is None:
        return "—"
    name = value.name if isinstance(value, Enum) else str(value)
    return name.lower().replace("_", " ")

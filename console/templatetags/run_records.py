"""Template helpers of the run page: anchors into the tree and previews of opaque bytes."""

from __future__ import annotations

import json
from collections.abc import Mapping

from django import template

from console.run_records.tree import FindingLike, RunTree, anchor
from console.run_records.values import DecodedValue

register = template.Library()

# A preview, not a dump: Data is opaque to the console and may be large.
PREVIEW_BYTES = 2048


@register.filter
def anchor_for(key: str, kind: str) -> str:
    """The element id of a record part by its map key: ``attempt_id|anchor_for:'attempt'``."""
    return anchor(kind, key)


@register.filter
def finding_link(tree: RunTree, finding: FindingLike) -> str:
    return tree.link_of(finding)


@register.filter
def decoded_for(decoded: object, slot: str) -> DecodedValue | None:
    """The restored value of a value row: ``decoded|decoded_for:v.slot``."""
    return decoded.get(slot) if isinstance(decoded, Mapping) else None


@register.filter
def bytes_preview(data: bytes) -> str:
    """Encoded bytes as text for reading: indented JSON when they are JSON, else the
    UTF-8 text (undecodable bytes replaced), cut at PREVIEW_BYTES."""
    head = data[:PREVIEW_BYTES]
    more = f"\n… {len(data) - PREVIEW_BYTES} more bytes" if len(data) > PREVIEW_BYTES else ""
    if not more:
        try:
            return json.dumps(json.loads(head), indent=2, ensure_ascii=False, sort_keys=True)
        except ValueError:
            pass
    return head.decode("utf-8", "replace") + more


@register.filter
def duration(ns: int) -> str:
    """Nanoseconds as a span in at most two units (45s, 3m 12s), as ages are shown."""
    from console.templatetags.console import span

    return span(ns / 1_000_000_000)


GENERIC_ERRORS = "in the runtime's own logs"


@register.simple_tag
def error_location(run_id: str, node_id: str, attempt: str) -> str:
    """Where a failed attempt's error can be found (``settings.CONSOLE_RUN_ERRORS``, with
    ``{run}``, ``{node}`` and ``{attempt}`` filled in); a setting that does not format
    (another placeholder, a stray brace) falls back to the runtime's logs. Text, escaped
    by the template like any value."""
    from django.conf import settings

    where = getattr(settings, "CONSOLE_RUN_ERRORS", "") or GENERIC_ERRORS
    try:
        return where.format(run=run_id, node=node_id, attempt=attempt)
    except (KeyError, IndexError, ValueError, AttributeError):
        return GENERIC_ERRORS

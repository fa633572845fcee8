"""Field validation shared by every backend, so the double and SQLite cannot drift."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from ..errors import Invalid
from ..records import CorrelationKey, Payload

# Resolution 1 of the checklist: lowercase segments joined by dots, at least two.
_DOTTED = re.compile(r"^[a-z0-9_-]+(\.[a-z0-9_-]+)+$")
_ACTOR = re.compile(r"^[a-z0-9_.-]+:\S+$")
DOTTED_MAX = 200
ACTOR_SOURCES = frozenset({"core.manual", "core.action"})


def require_id(value: str, what: str) -> None:
    if not isinstance(value, str) or not value:
        raise Invalid(f"{what} must be a nonempty string")


def require_dotted(value: str, what: str) -> None:
    if not isinstance(value, str) or len(value) > DOTTED_MAX or not _DOTTED.match(value):
        raise Invalid(f"{what} {value!r} is not a dotted namespace identifier")


def require_payload(payload: Payload | None, what: str = "payload") -> None:
    if payload is None:
        return
    require_dotted(payload.schema, f"{what} schema")
    if not isinstance(payload.data, bytes):
        raise Invalid(f"{what} data must be bytes")
    try:
        json.loads(payload.data)
    except ValueError as exc:
        raise Invalid(f"{what} data is not valid JSON: {exc}") from None


def require_keys(keys: Iterable[CorrelationKey], what: str = "correlation key") -> None:
    for key in keys:
        if not isinstance(key, CorrelationKey) or not key.source or not key.external_id:
            raise Invalid(f"{what} {key!r} needs a nonempty source and external_id")


def actor_for(source: str, actor: str) -> str:
    """The actor kept for an Event of ``source``: checked on core.manual/core.action,
    dropped from any other source (spec: acceptance drops it)."""
    if source not in ACTOR_SOURCES:
        return ""
    if actor and not _ACTOR.match(actor):
        raise Invalid(f"actor {actor!r} is not of the form kind:id")
    return actor


def require_limit(limit: int) -> None:
    if limit < 0:
        raise Invalid(f"limit must be 0 (no limit) or positive, not {limit}")

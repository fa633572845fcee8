"""The Events stream's filter and its acceptance-sequence cursor, read from URLs.

``source``, ``type``, ``scope``, ``within`` (a Scope and its descendants), ``work`` and
``actor`` (who caused it: ``operator:alice``, or a bare ``alice`` for that operator)
narrow the stream, ``mine=1`` keeps the signed-in operator's own actions,
``unrouted=1`` keeps the Events no route has taken yet, ``since``
and ``until`` bound the acceptance time, and ``before`` / ``after`` (a sequence number,
not a time) page through it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from django.http import QueryDict

from console.urlstate import (
    TIME_FILTERS,
    FilterError,
    cleared,
    parse_times,
    querystring,
    storable,
    text,
)
from storage import CorrelationKey

EVENT_PAGE_SIZE = 50


EVENT_TEXTS = ("source", "type", "scope", "within", "work", "actor")
KEY_PARTS = ("key_source", "key_id")
KEY_BYTES = 255  # a key part's limit in UTF-8 (the storage identifier rule)
# The actor an operator's console actions record (``storage.ops.manual.record``).
OPERATOR = "operator:"


def actor_of(value: str) -> str:
    """The actor a typed ``actor`` filter means: ``kind:id`` as typed, a bare name the
    operator of that name (what an operator types is a colleague's username)."""
    return value if ":" in value else OPERATOR + value


@dataclass(frozen=True, slots=True)
class EventFilter:
    """The Events stream's filter, answered by one indexed ``find_events`` read.
    ``within`` is a Scope and its descendants; ``since``/``until`` bound the
    acceptance time, typed as on the Work list."""

    source: str = ""
    type: str = ""
    scope: str = ""
    within: str = ""
    work: str = ""
    actor: str = ""
    # A correlation key (both parts, or neither): the Events carrying it.
    key_source: str = ""
    key_id: str = ""
    mine: bool = False
    unrouted: bool = False
    since: str = ""
    since_ns: int | None = None
    until: str = ""
    until_ns: int | None = None

    def params(self) -> list[tuple[str, str]]:
        out = [(n, getattr(self, n)) for n in (*EVENT_TEXTS, *KEY_PARTS, *TIME_FILTERS)]
        out = [(n, v) for n, v in out if v]
        if self.mine:
            out.append(("mine", "1"))
        if self.unrouted:
            out.append(("unrouted", "1"))
        return out

    @property
    def key(self) -> CorrelationKey | None:
        return CorrelationKey(self.key_source, self.key_id) if self.key_source else None

    def actors(self, username: str) -> list[str]:
        """The actors selected: the typed one, or the signed-in operator's (mine)."""
        if self.mine:
            return [OPERATOR + username]
        return [actor_of(self.actor)] if self.actor else []

    def querystring(self, extra: Iterable[tuple[str, str]] = ()) -> str:
        return querystring([*self.params(), *extra])

    @property
    def narrowed(self) -> bool:
        return bool(self.params())

    def without(self, name: str) -> EventFilter:
        if name == "unrouted":
            return replace(self, unrouted=False)
        if name == "mine":
            return replace(self, mine=False)
        if name in TIME_FILTERS:
            return replace(self, **cleared(name, timed=True))
        return replace(self, **cleared(name))

    def chips(self) -> list[tuple[str, str, str]]:
        return [
            (name, FLAGS.get(name, value), self.without(name).querystring())
            for name, value in self.params()
        ]


# The flags' chip text.
FLAGS = {"unrouted": "only", "mine": "my actions"}


def _flag(name: str, data: QueryDict, errors: dict[str, str], help: str) -> bool:
    raw = data.get(name, "")
    if raw not in ("", "0", "off", "false", "1", "on", "true"):
        errors[name] = f"{name} is 1 or 0 (on or off): {help}"
    return raw in ("1", "on", "true")


@dataclass(frozen=True, slots=True)
class SeqCursor:
    """An acceptance-sequence position: Events older than ``before`` or newer than
    ``after`` (both exclusive)."""

    before: int = 0
    after: int = 0


def parse_event_filter(data: QueryDict, now_ns: int | None = None) -> tuple[EventFilter, SeqCursor]:
    errors: dict[str, str] = {}
    texts: dict[str, Any] = {n: text(n, data.get(n, ""), errors) for n in EVENT_TEXTS}
    texts |= {n: key_part(n, data.get(n, ""), errors) for n in KEY_PARTS}
    times = parse_times({n: data.get(n, "") for n in TIME_FILTERS}, now_ns, errors)
    unrouted = _flag("unrouted", data, errors, "only Events no Work took, or all.")
    mine = _flag("mine", data, errors, "only your own actions, or everyone's.")
    if mine and texts["actor"]:
        errors["mine"] = "Give actor or mine (your own actions), not both."
    if bool(texts["key_source"]) != bool(texts["key_id"]):
        errors["key_id"] = "A key is its source and its ID: give key_source and key_id both."
    cursor = _cursor(data, errors)
    if errors:
        raise FilterError(errors)
    return EventFilter(unrouted=unrouted, mine=mine, **texts, **times), SeqCursor(**cursor)


def key_part(name: str, raw: str, errors: dict[str, str]) -> str:
    """A correlation key's source or ID exactly as given (not stripped: a key may start
    or end with a space), within what the store accepts: no NUL, at most 255 bytes."""
    return storable(name, raw, errors, KEY_BYTES)


def _cursor(data: QueryDict, errors: dict[str, str]) -> dict[str, int]:
    cursor = {}
    for name in ("before", "after"):
        raw = data.get(name, "")
        if raw and not (raw.isascii() and raw.isdigit()):
            errors[name] = f"{name} is an acceptance sequence number."
        elif raw:
            cursor[name] = int(raw)
    if len(cursor) > 1:
        errors["after"] = "Give either after or before, not both."
    return cursor


def parse_cursor(data: QueryDict) -> SeqCursor:
    """An acceptance-sequence cursor alone (pages other than the stream that page it)."""
    errors: dict[str, str] = {}
    cursor = _cursor(data, errors)
    if errors:
        raise FilterError(errors)
    return SeqCursor(**cursor)

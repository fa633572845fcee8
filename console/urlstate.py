"""The state every list page keeps in its URL, parsed and written in one place.

Filters live in the query string so any view can be bookmarked and shared. This
module holds what the lists share: ``querystring`` (the one way a link is written),
keyset keys (``<time ns>.<ID>``), the ``since``/``until`` time bounds (a UTC time, an
ISO 8601 instant, or a duration back from now; ``since`` inclusive, ``until``
exclusive), the page size, short text fields, names taken as given (``storable``),
and ``FilterError``, which names each
bad parameter for the form. Each page's own filter sits beside its views.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from storage import WorkKey, to_ns

PAGE_SIZES = (25, 50, 100, 200)
DEFAULT_PAGE_SIZE = 50
TIME_FILTERS = ("since", "until")
MAX_TEXT = 255
MAX_ID_BYTES = 255  # an ID's limit in UTF-8 (storage.tx.fields.ID_MAX_BYTES)
_DURATION = re.compile(r"^(\d{1,6})([smhd])$")
_LOST_PLUS = re.compile(r"^(.+[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) (\d{2}:?\d{2})$")
_UNIT_NS = {"s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}
SINCE_HELP = (
    "Enter a UTC time like 2025-11-30 14:00, an ISO 8601 instant like "
    "2025-11-30T14:00:00+01:00, or a duration back from now like 15m, 2h or 1d."
)
UNTIL_AFTER_SINCE = "Updated before must be later than updated since."


class FilterError(ValueError):
    """Bad filter input; ``errors`` maps a field name to a message for the form."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = dict(errors)


def querystring(params: Iterable[tuple[str, str]]) -> str:
    """``?a=1&b=2``, or a bare ``?`` (a link that clears every filter)."""
    params = list(params)
    return "?" + urlencode(params) if params else "?"


def cleared(name: str, *, timed: bool = False) -> dict[str, Any]:
    """The ``replace`` changes that drop one single-valued filter (a time bound also
    drops its instant)."""
    return {name: "", f"{name}_ns": None} if timed else {name: ""}


# A keyset column holds a 64-bit time, so a larger one is no position on a page whose
# cursor reaches a column as it is (the Work list and run records bound theirs first).
MAX_KEY_TIME = 2**63 - 1


def format_key(key: WorkKey) -> str:
    return f"{key.time}.{key.id}"


def parse_key(raw: str) -> WorkKey | None:
    """A keyset position ``<time ns>.<ID>``, or None when ``raw`` is not one."""
    # IDs may contain dots, the time never does: split at the first one.
    time_part, dot, key_id = raw.partition(".")
    # isascii: "²".isdigit() is True, but int("²") raises.
    if not dot or not (time_part.isascii() and time_part.isdigit()) or not key_id:
        return None
    return WorkKey(int(time_part), key_id)


def parse_since(raw: str, now_ns: int) -> int:
    """An instant typed as a UTC time, an ISO 8601 instant or a duration back from
    ``now_ns``; FilterError (on ``since``) otherwise."""
    match = _DURATION.match(raw)
    if match:
        return now_ns - int(match.group(1)) * _UNIT_NS[match.group(2)]
    # A "+01:00" offset typed into a URL arrives as " 01:00": put the plus back.
    raw = _LOST_PLUS.sub(r"\1+\2", raw)
    try:
        value = datetime.fromisoformat(raw.replace(" ", "T", 1))
    except ValueError:
        raise FilterError({"since": SINCE_HELP}) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # the console shows and takes times in UTC
    return to_ns(value)


def text(name: str, raw: str, errors: dict[str, str]) -> str:
    """A single-line text filter, stripped; too long is noted in ``errors``."""
    value = raw.strip()
    if len(value) > MAX_TEXT:
        errors[name] = f"At most {MAX_TEXT} characters."
        return ""
    return value


def parse_bound(name: str, value: str, now_ns: int, errors: dict[str, str]) -> int | None:
    """The instant of one time bound typed as ``value`` (None when empty); a bad one is
    noted in ``errors`` under ``name``."""
    if not value:
        return None
    try:
        return parse_since(value, now_ns)
    except FilterError:
        errors[name] = SINCE_HELP
        return None


def parse_times(
    raw: Mapping[str, str], now_ns: int | None, errors: dict[str, str]
) -> dict[str, Any]:
    """``since`` and ``until`` as typed (so "15m" stays relative in a bookmark) and as
    instants (``since_ns``, ``until_ns``); ``errors`` names each bad one."""
    now = time.time_ns() if now_ns is None else now_ns
    out: dict[str, Any] = {}
    for name in TIME_FILTERS:
        value = text(name, raw.get(name, ""), errors)
        out[name], out[f"{name}_ns"] = value, parse_bound(name, value, now, errors)
    since_ns, until_ns = out["since_ns"], out["until_ns"]
    if since_ns is not None and until_ns is not None and until_ns <= since_ns:
        errors["until"] = UNTIL_AFTER_SINCE
    return out


def storable(name: str, raw: str, errors: dict[str, str], most: int = MAX_ID_BYTES) -> str:
    """A name exactly as given (an ID, a kind, a KV key: a space at either end is part
    of it), within what the storage rules take: valid Unicode, no NUL, at most
    ``most`` bytes of UTF-8; else "" and the reason in ``errors``."""
    try:
        size = len(raw.encode("utf-8"))
    except UnicodeEncodeError:  # an unpaired surrogate
        size = most + 1
    if "\x00" in raw or size > most:
        errors[name] = f"{name} is at most {most} bytes of UTF-8, without NUL."
        return ""
    return raw


def parse_size(data: Mapping[str, str], errors: dict[str, str]) -> int:
    """The ``size`` parameter (one of PAGE_SIZES), or the default; a bad one is noted in
    ``errors``."""
    raw = data.get("size", "")
    if not raw:
        return DEFAULT_PAGE_SIZE
    if raw.isascii() and raw.isdigit() and int(raw) in PAGE_SIZES:
        return int(raw)
    errors["size"] = f"Page size is one of {', '.join(map(str, PAGE_SIZES))}."
    return DEFAULT_PAGE_SIZE

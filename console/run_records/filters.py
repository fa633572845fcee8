"""The Runs list's filter and keyset cursor, read from and written to URLs.

``q`` searches run IDs (a substring), ``format`` picks the stored format (1 or 2),
``status`` (repeats) keeps runs whose derived status (``outcome.py``) is one of these,
``since`` and ``until`` bound the updated time (``console.urlstate``'s syntax;
``since`` inclusive, ``until`` exclusive), ``size`` is the page size and ``after`` the
keyset position ``<updated ns>.<run ID>`` of the last row of the previous page. The
upper bound was once called ``before``: that name is still read, so old bookmarks
keep working, and links are written with ``until``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from console.run_records.outcome import RunRecordStatus
from console.urlstate import (
    DEFAULT_PAGE_SIZE,
    MAX_TEXT,
    FilterError,
    parse_bound,
    parse_key,
    parse_size,
    querystring,
)
from storage.run_records import RUN_FORMATS, RunQuery

STATUSES = tuple(s.value for s in RunRecordStatus)

RunKey = tuple[int, str]  # (updated_ns, run_id): the list's order, newest first
LEGACY_UNTIL = "before"


@dataclass(frozen=True, slots=True)
class RunFilter:
    q: str = ""
    format: int | None = None
    since: str = ""  # as typed, so "15m" stays relative in a bookmark
    since_ns: int | None = None
    until: str = ""
    until_ns: int | None = None
    status: tuple[str, ...] = ()  # derived statuses (RunRecordStatus values)
    size: int = DEFAULT_PAGE_SIZE

    def query(self, *, after: RunKey | None = None, limit: int = 0) -> RunQuery:
        return RunQuery(
            search=self.q,
            format=self.format,
            updated_since=self.since_ns,
            updated_before=self.until_ns,
            after=after,
            limit=limit,
        )

    @property
    def narrowed(self) -> bool:
        return bool(self.q or self.format is not None or self.since or self.until or self.status)

    def params(self) -> list[tuple[str, str]]:
        """Canonical query parameters, defaults left out."""
        out = [("q", self.q)] if self.q else []
        if self.format is not None:
            out.append(("format", str(self.format)))
        out += [(n, getattr(self, n)) for n in ("since", "until") if getattr(self, n)]
        out += [("status", v) for v in self.status]
        if self.size != DEFAULT_PAGE_SIZE:
            out.append(("size", str(self.size)))
        return out

    def querystring(self, extra: Iterable[tuple[str, str]] = ()) -> str:
        return querystring([*self.params(), *extra])

    def without(self, name: str, value: str = "") -> RunFilter:
        if name == "status":
            return replace(self, status=tuple(v for v in self.status if v != value))
        if name == "format":
            return replace(self, format=None)
        if name == "since":
            return replace(self, since="", since_ns=None)
        if name == "until":
            return replace(self, until="", until_ns=None)
        return replace(self, q="")

    def chips(self) -> list[tuple[str, str, str]]:
        """(label, value, querystring without it) for each active filter."""
        return [
            (name, value, self.without(name, value).querystring())
            for name, value in self.params()
            if name != "size"
        ]


def format_run_key(key: RunKey) -> str:
    return f"{key[0]}.{key[1]}"


def parse_run_cursor(data: Mapping[str, str]) -> RunKey | None:
    raw = data.get("after", "")
    if not raw:
        return None
    key = parse_key(raw)  # run IDs may contain dots; the time never does
    if key is None:
        raise FilterError({"after": f"{raw!r} is not a page position (<time>.<run ID>)."})
    return (key.time, key.id)


def typed_until(data: Mapping[str, str]) -> str:
    """The upper bound as typed: ``until``, or an old bookmark's ``before``."""
    return (data.get("until", "") or data.get(LEGACY_UNTIL, "")).strip()


def parse_run_filter(data: Mapping[str, str], now_ns: int | None = None) -> RunFilter:
    """Read a RunFilter from query parameters; raise FilterError naming each bad one."""
    errors: dict[str, str] = {}
    q = data.get("q", "").strip()
    if len(q) > MAX_TEXT:
        errors["q"] = f"At most {MAX_TEXT} characters."
    fmt = None
    raw_format = data.get("format", "")
    if raw_format:
        if raw_format.isascii() and raw_format.isdigit() and int(raw_format) in RUN_FORMATS:
            fmt = int(raw_format)
        else:
            errors["format"] = f"Format is one of {', '.join(map(str, RUN_FORMATS))}."
    now = time.time_ns() if now_ns is None else now_ns
    since, until = data.get("since", "").strip(), typed_until(data)
    since_ns = parse_bound("since", since, now, errors)
    until_ns = parse_bound("until", until, now, errors)
    status = tuple(dict.fromkeys(v for v in _getlist(data, "status") if v))
    bad = [v for v in status if v not in STATUSES]
    if bad:
        errors["status"] = f"status is one of {', '.join(STATUSES)}, not {bad[0]!r}."
    size = parse_size(data, errors)
    if errors:
        raise FilterError(errors)
    return RunFilter(
        q=q,
        format=fmt,
        since=since,
        since_ns=since_ns,
        until=until,
        until_ns=until_ns,
        status=status,
        size=size,
    )


def _getlist(data: Mapping[str, str], name: str) -> list[str]:
    getlist = getattr(data, "getlist", None)
    if getlist is not None:
        return list(getlist(name))
    value = data.get(name, "")
    return [value] if value else []

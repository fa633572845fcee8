"""The Runs list's filter and keyset cursor, read from and written to URLs.

``q`` searches run IDs (a substring), ``format`` picks the stored format (1 or 2),
``since`` and ``before`` bound the updated time (the Work list's syntax: a UTC time,
an ISO 8601 instant, or a duration back from now; ``since`` inclusive, ``before``
exclusive), ``size`` is the page size and ``after`` the keyset position
``<updated ns>.<run ID>`` of the last row of the previous page.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from console.filters import (
    DEFAULT_PAGE_SIZE,
    MAX_TEXT,
    FilterError,
    parse_key,
    parse_since,
    parse_size,
    querystring,
)
from storage.runs import RUN_FORMATS, RunQuery

RunKey = tuple[int, str]  # (updated_ns, run_id): the list's order, newest first


@dataclass(frozen=True, slots=True)
class RunFilter:
    q: str = ""
    format: int | None = None
    since: str = ""  # as typed, so "15m" stays relative in a bookmark
    since_ns: int | None = None
    before: str = ""
    before_ns: int | None = None
    size: int = DEFAULT_PAGE_SIZE

    def query(self, *, after: RunKey | None = None, limit: int = 0) -> RunQuery:
        return RunQuery(
            search=self.q,
            format=self.format,
            updated_since=self.since_ns,
            updated_before=self.before_ns,
            after=after,
            limit=limit,
        )

    @property
    def narrowed(self) -> bool:
        return bool(self.q or self.format is not None or self.since or self.before)

    def params(self) -> list[tuple[str, str]]:
        """Canonical query parameters, defaults left out."""
        out = [("q", self.q)] if self.q else []
        if self.format is not None:
            out.append(("format", str(self.format)))
        out += [(n, getattr(self, n)) for n in ("since", "before") if getattr(self, n)]
        if self.size != DEFAULT_PAGE_SIZE:
            out.append(("size", str(self.size)))
        return out

    def querystring(self, extra: Iterable[tuple[str, str]] = ()) -> str:
        return querystring(self.params() + list(extra))

    def without(self, name: str) -> RunFilter:
        if name == "format":
            return replace(self, format=None)
        if name == "since":
            return replace(self, since="", since_ns=None)
        if name == "before":
            return replace(self, before="", before_ns=None)
        return replace(self, q="")

    def chips(self) -> list[tuple[str, str, str]]:
        """(label, value, querystring without it) for each active filter."""
        return [
            (name, value, self.without(name).querystring())
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


def parse_run_filter(data: Mapping[str, str], now_ns: int | None = None) -> RunFilter:
    """Read a RunFilter from query parameters; raise FilterError naming each bad one."""
    errors: dict[str, str] = {}
    q = data.get("q", "").strip()
    if len(q) > MAX_TEXT:
        errors["q"] = f"At most {MAX_TEXT} characters."
    fmt = None
    raw_format = data.get("format", "")
    if raw_format:
        if raw_format.isdigit() and int(raw_format) in RUN_FORMATS:
            fmt = int(raw_format)
        else:
            errors["format"] = f"Format is one of {', '.join(map(str, RUN_FORMATS))}."
    now = time.time_ns() if now_ns is None else now_ns
    bounds: dict[str, int | None] = {}
    for name in ("since", "before"):
        raw = data.get(name, "").strip()
        bounds[name] = None
        if raw:
            try:
                bounds[name] = parse_since(raw, now)
            except FilterError as exc:
                errors[name] = exc.errors["since"]
    size = parse_size(data, errors)
    if errors:
        raise FilterError(errors)
    return RunFilter(
        q=q,
        format=fmt,
        since=data.get("since", "").strip(),
        since_ns=bounds["since"],
        before=data.get("before", "").strip(),
        before_ns=bounds["before"],
        size=size,
    )

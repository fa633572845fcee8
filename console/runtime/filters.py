"""The Executions page's history filter: attempts first claimed in a time range."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.http import QueryDict

from console.urlstate import SINCE_HELP, TIME_FILTERS, FilterError, parse_times, querystring, text


@dataclass(frozen=True, slots=True)
class StartedFilter:
    """The Executions page's history: attempts first claimed in [since, until) (until
    empty: now), of Work within a Scope tree. What an attempts chart bucket counts."""

    since: str
    since_ns: int
    until: str = ""
    until_ns: int | None = None
    within: str = ""

    def params(self) -> list[tuple[str, str]]:
        out = [(n, getattr(self, n)) for n in ("within", *TIME_FILTERS)]
        return [(n, v) for n, v in out if v]

    def querystring(self) -> str:
        return querystring(self.params())

    def chips(self) -> list[tuple[str, str, str]]:
        """Removing ``since`` leaves the history: back to the live attempts."""
        out = []
        for name, value in self.params():
            rest = [(n, v) for n, v in self.params() if n != name]
            keep = any(n == "since" for n, _ in rest)
            out.append((name, value, querystring(rest) if keep else "?"))
        return out


def parse_started_filter(data: QueryDict, now_ns: int | None = None) -> StartedFilter | None:
    """None when the query names no time (the attempts list, ``ExecutionFilter``);
    ``since`` is needed for a history, so the range is always bounded."""
    # ``within`` alone narrows the attempts list (ExecutionFilter); with a time it is
    # the history's Scope tree.
    if not any(data.get(n, "") for n in TIME_FILTERS):
        return None
    errors: dict[str, str] = {}
    within = text("within", data.get("within", ""), errors)
    times = parse_times({n: data.get(n, "") for n in TIME_FILTERS}, now_ns, errors)
    if times["since_ns"] is None and "since" not in errors:
        errors["since"] = "Attempts started since when? " + SINCE_HELP
    if errors:
        raise FilterError(errors)
    return StartedFilter(within=within, **times)


_AGE = re.compile(r"^(\d{1,6})([smhd])$")
_AGE_NS = {"s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}


def parse_older(raw: str) -> int:
    """The Waits page's ``older`` (``30m``, ``1h``, ``2d``) in ns; 0 when empty.
    An age, never an instant: a bookmark of "older than an hour" keeps meaning it."""
    raw = raw.strip()
    if not raw:
        return 0
    match = _AGE.match(raw)
    if match is None:
        raise FilterError({"older": f"older is an age like 30m, 1h or 2d, not {raw!r}."})
    return int(match.group(1)) * _AGE_NS[match.group(2)]

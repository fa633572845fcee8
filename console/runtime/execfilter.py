"""The Executions page's filter and keyset cursor, read from and written to URLs.

``state`` repeats: an Execution state, ``live`` (pending, running or parked: the
default, what the page showed before it had filters) or ``any``; ``kind`` is the
Work's kind, ``within`` a Scope and its descendants, ``work`` a prefix of the Work's
ID, ``expired=1`` keeps live attempts whose lease has expired, ``expiring=30s`` (a
span: s, m, h or d) the running attempts whose lease is live and expires within it,
``sort=lease`` lists running attempts the soonest lease expiry first (an expired one
first of all), ``size`` is the page size and ``after`` the keyset position
``<started ns>.<Execution ID>`` of the last row of the previous page
(``storage.ExecutionQuery``'s order: the latest first claim first, never-claimed
attempts last), ``<lease expiry ns>.<Execution ID>`` in the lease order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from django.http import QueryDict

from console.runtime.filters import parse_older
from console.urlstate import (
    DEFAULT_PAGE_SIZE,
    MAX_KEY_TIME,
    FilterError,
    cleared,
    format_key,
    parse_key,
    parse_size,
    querystring,
    text,
)
from storage import (
    LIVE_EXECUTION_STATES,
    ExecutionKey,
    ExecutionQuery,
    ExecutionState,
    LeaseKey,
    WorkKey,
)

LIVE = "live"
ANY = "any"
STATE_CHOICES = (LIVE, ANY, *(s.value for s in ExecutionState))
LEASE = "lease"  # sort=lease: the soonest lease expiry first
Cursor = ExecutionKey | LeaseKey


@dataclass(frozen=True, slots=True)
class ExecutionFilter:
    states: tuple[str, ...] = (LIVE,)  # as in the URL: live, any or Execution states
    kind: str = ""
    within: str = ""
    work: str = ""  # a prefix of the Work ID
    expired: bool = False
    expiring: str = ""  # a span as typed (30s): a bookmark keeps meaning "from now"
    expiring_ns: int = 0
    sort: str = ""  # "" (the latest first claim first) or LEASE
    size: int = DEFAULT_PAGE_SIZE

    def query(
        self, scope_ids: frozenset[str] | None, after: Cursor | None, limit: int, now: int = 0
    ) -> ExecutionQuery:
        """``scope_ids`` is ``within``'s subtree, which the caller reads (one Scopes read);
        ``now`` the View's time, from which ``expiring`` counts."""
        chosen: set[ExecutionState] = set()
        for value in self.states:
            if value == ANY:
                chosen = set()
                break
            chosen |= LIVE_EXECUTION_STATES if value == LIVE else {ExecutionState(value)}
        return ExecutionQuery(
            states=frozenset(chosen),
            kinds=frozenset({self.kind}) if self.kind else frozenset(),
            scope_ids=scope_ids,
            work_id_prefix=self.work,
            expired=self.expired,
            expiring_by=now + self.expiring_ns if self.expiring else None,
            by_lease=self.sort == LEASE,
            after=after if isinstance(after, ExecutionKey) else None,
            after_lease=after if isinstance(after, LeaseKey) else None,
            limit=limit,
        )

    @property
    def narrowed(self) -> bool:
        return self.states != (LIVE,) or bool(
            self.kind or self.within or self.work or self.expired or self.expiring
        )

    def params(self) -> list[tuple[str, str]]:
        """Canonical query parameters, defaults left out."""
        out = [("state", v) for v in self.states] if self.states != (LIVE,) else []
        out += [(n, getattr(self, n)) for n in ("kind", "within", "work") if getattr(self, n)]
        if self.expired:
            out.append(("expired", "1"))
        if self.expiring:
            out.append(("expiring", self.expiring))
        if self.sort:
            out.append(("sort", self.sort))
        if self.size != DEFAULT_PAGE_SIZE:
            out.append(("size", str(self.size)))
        return out

    def querystring(self, extra: Iterable[tuple[str, str]] = ()) -> str:
        return querystring([*self.params(), *extra])

    def without(self, name: str, value: str = "") -> ExecutionFilter:
        if name == "state":
            rest = tuple(v for v in self.states if v != value)
            return replace(self, states=rest or (LIVE,))
        if name == "expired":
            return replace(self, expired=False)
        if name == "expiring":
            return replace(self, expiring="", expiring_ns=0)
        return replace(self, **cleared(name))

    def chips(self) -> list[tuple[str, str, str]]:
        """(label, value, querystring without it) for each active filter."""
        return [
            (name, value, self.without(name, value).querystring())
            for name, value in self.params()
            if name not in ("size", "sort")
        ]


def parse_execution_filter(data: QueryDict) -> ExecutionFilter:
    """Read an ExecutionFilter; raise FilterError naming each bad parameter."""
    errors: dict[str, str] = {}
    states = tuple(dict.fromkeys(v for v in data.getlist("state") if v))
    bad = [v for v in states if v not in STATE_CHOICES]
    if bad:
        errors["state"] = f"state is one of {', '.join(STATE_CHOICES)}, not {bad[0]!r}."
    fields = {n: text(n, data.get(n, "").strip(), errors) for n in ("kind", "within", "work")}
    expired = data.get("expired", "")
    if expired not in ("", "0", "1"):
        errors["expired"] = f"expired is 1 (expired leases only) or 0, not {expired!r}."
    expiring = data.get("expiring", "").strip()
    expiring_ns = 0
    try:
        expiring_ns = parse_older(expiring, "expiring")
    except FilterError as exc:
        errors |= exc.errors
    sort = data.get("sort", "")
    if sort not in ("", LEASE):
        errors["sort"] = f"sort is lease (the soonest lease expiry first) or empty, not {sort!r}."
    size = parse_size(data, errors)
    if errors:
        raise FilterError(errors)
    return ExecutionFilter(
        states=states or (LIVE,),
        expired=expired == "1",
        expiring=expiring,
        expiring_ns=expiring_ns,
        sort=sort,
        size=size,
        **fields,
    )


def format_execution_key(key: Cursor) -> str:
    if isinstance(key, LeaseKey):
        return format_key(WorkKey(key.lease_expires_at, key.id))
    return format_key(WorkKey(key.started_at, key.id))


def parse_execution_cursor(data: QueryDict, f: ExecutionFilter | None = None) -> Cursor | None:
    """The page position; in the lease order (``f.sort``) a lease expiry's."""
    raw = data.get("after", "")
    if not raw:
        return None
    key = parse_key(raw)  # Execution IDs may contain dots; the time never does
    if key is None or key.time > MAX_KEY_TIME:
        raise FilterError({"after": f"{raw!r} is not a page position (<time>.<ID>)."})
    if f is not None and f.sort == LEASE:
        return LeaseKey(key.time, key.id)
    return ExecutionKey(key.time, key.id)

"""The Workflows list's filter, read from and written to its URL.

``status``, ``kind``, ``deployment`` and ``reason`` each repeat (any of the values;
a status or reason in either case);
``q`` is a routed-run ID or prefix of any kind (workflow, run, attempt, node,
invocation, service, handoff, child batch, deployment: ``storage.routed`` finds the
workflows it belongs to); ``size`` is the page size and ``after`` the workflow ID the
previous page ended with (the keyset position: the list is newest first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from django.http import QueryDict

from console.urlstate import DEFAULT_PAGE_SIZE, MAX_TEXT, FilterError, parse_size, querystring
from storage.routed.enums import FailureReason, WorkflowStatus
from storage.routed.ids import WorkflowID
from storage.routed.rules import WorkflowQuery

STATUSES = tuple(s.name for s in WorkflowStatus)
REASONS = tuple(r.name for r in FailureReason)
# At most this many values per facet in one URL: each is a bound parameter.
MAX_VALUES = 20
FACET_PARAMS = ("status", "kind", "deployment", "reason")
# The dashboard's routed tiles, each a list of its own (``alert=<name>``).
ALERTS = {
    "near_ceiling": "near their active-time ceiling",
    "lease_expired": "with an expired lease",
    "paused_long": "paused for more than an hour",
}


@dataclass(frozen=True, slots=True)
class WorkflowFilter:
    status: tuple[str, ...] = ()
    kind: tuple[str, ...] = ()
    deployment: tuple[str, ...] = ()
    reason: tuple[str, ...] = ()
    q: str = ""
    alert: str = ""
    size: int = DEFAULT_PAGE_SIZE

    def query(self, workflow_ids: tuple[str, ...] | None = None) -> WorkflowQuery:
        return WorkflowQuery(
            statuses=self.status,
            kinds=self.kind,
            deployment_ids=self.deployment,
            reasons=self.reason,
            workflow_ids=workflow_ids,
        )

    @property
    def narrowed(self) -> bool:
        return bool(
            self.status or self.kind or self.deployment or self.reason or self.q or self.alert
        )

    def params(self) -> list[tuple[str, str]]:
        """Canonical query parameters, defaults left out."""
        out = [(name, v) for name in FACET_PARAMS for v in getattr(self, name)]
        if self.q:
            out.append(("q", self.q))
        if self.alert:
            out.append(("alert", self.alert))
        if self.size != DEFAULT_PAGE_SIZE:
            out.append(("size", str(self.size)))
        return out

    def querystring(self, extra: Iterable[tuple[str, str]] = ()) -> str:
        return querystring([*self.params(), *extra])

    def toggled(self, name: str, value: str) -> WorkflowFilter:
        """This filter with ``value`` added to facet ``name``, or removed if present."""
        values: tuple[str, ...] = getattr(self, name)
        changed = tuple(v for v in values if v != value) if value in values else (*values, value)
        if name == "status":
            return replace(self, status=changed)
        if name == "kind":
            return replace(self, kind=changed)
        if name == "deployment":
            return replace(self, deployment=changed)
        return replace(self, reason=changed)

    def chips(self) -> list[tuple[str, str, str]]:
        """(label, value, querystring without it) for each active filter."""
        chips = [
            (name, v, self.toggled(name, v).querystring())
            for name in FACET_PARAMS
            for v in getattr(self, name)
        ]
        if self.q:
            chips.append(("search", self.q, replace(self, q="").querystring()))
        if self.alert:
            chips.append(("alert", ALERTS[self.alert], replace(self, alert="").querystring()))
        return chips


def _values(data: QueryDict, name: str, errors: dict[str, str]) -> tuple[str, ...]:
    values = tuple(dict.fromkeys(v.strip() for v in data.getlist(name) if v.strip()))
    if len(values) > MAX_VALUES:
        errors[name] = f"At most {MAX_VALUES} values."
    elif any(len(v) > MAX_TEXT for v in values):
        errors[name] = f"Each value is at most {MAX_TEXT} characters."
    return values


def parse_workflow_filter(data: QueryDict) -> WorkflowFilter:
    """A WorkflowFilter from query parameters; FilterError naming each bad one."""
    errors: dict[str, str] = {}
    found = {name: _values(data, name, errors) for name in FACET_PARAMS}
    # A status or reason is a name of its enum; the facets show statuses lower case
    # ("running"), so either case is the same filter, kept upper case in the URL.
    for name in ("status", "reason"):
        found[name] = tuple(dict.fromkeys(v.upper() for v in found[name]))
    bad = [s for s in found["status"] if s not in STATUSES]
    if bad and "status" not in errors:
        errors["status"] = f"Unknown status {bad[0]!r}; one of {', '.join(STATUSES)}."
    bad = [r for r in found["reason"] if r not in REASONS]
    if bad and "reason" not in errors:
        errors["reason"] = f"Unknown failure reason {bad[0]!r}."
    q = data.get("q", "").strip()
    if len(q) > MAX_TEXT:
        errors["q"] = f"At most {MAX_TEXT} characters."
    alert = data.get("alert", "")
    if alert and alert not in ALERTS:
        errors["alert"] = f"alert is one of {', '.join(ALERTS)}."
    size = parse_size(data, errors)
    if errors:
        raise FilterError(errors)
    return WorkflowFilter(q=q, alert=alert, size=size, **found)


def parse_workflow_cursor(data: Mapping[str, str]) -> WorkflowID | None:
    raw = data.get("after", "")
    if not raw:
        return None
    if not WorkflowID.valid(raw):
        raise FilterError({"after": f"{raw!r} is not a page position (a workflow ID)."})
    return WorkflowID(raw)

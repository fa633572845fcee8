"""The routed-run pages' reads: each page's routed records in ONE View, the same View
that reads the poll stamp (``console.polling``), so a page never mixes two snapshots.

Routed writes are contract transactions (``storage.routed.store``), so they move the
store version the stamp carries: a routed page polls like every other page.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from console.polling import polled_view
from console.routed.filters import WorkflowFilter
from storage import Tx
from storage.default import default_routed_store
from storage.routed.enums import DeploymentStatus, WorkflowStatus
from storage.routed.ids import WorkflowID
from storage.routed.records import (
    AliasRecord,
    DeploymentRecord,
    DurableIdempotencyRecord,
    InvocationReceipt,
    Stored,
    WorkflowRecord,
)
from storage.routed.rules import IdHit, RoutedRules, WorkflowQuery
from storage.routed.transitions import is_terminal

# A ceiling counts as near at this fraction of it consumed (the workflow page's bar
# says "near" at the same point).
NEAR_CEILING = 0.8
# How many IDs a search may resolve to (per kind of ID); the page says when it is more.
SEARCH_HITS = 50


def routed_rules() -> Callable[[Tx], RoutedRules]:
    """The rules for a View, from the routed store opened BEFORE the View: opening it
    checks the schema stamp in a View of its own (it writes nothing), which cannot
    nest inside the page's."""
    return default_routed_store().rules_in


@dataclass(frozen=True, slots=True)
class Search:
    text: str
    hits: list[IdHit]
    # A deployment's ID selects that deployment's workflows rather than a set of IDs.
    deployment: str = ""

    @property
    def workflow_ids(self) -> tuple[str, ...] | None:
        if self.deployment:
            return None
        return tuple(dict.fromkeys(h.workflow_id for h in self.hits if h.workflow_id))


def search(r: RoutedRules, text: str) -> Search | None:
    if not text:
        return None
    hits = r.find_ids(text, SEARCH_HITS)
    deployments = [h.id for h in hits if h.kind == "deployment"]
    if len(deployments) == 1 and len(hits) == 1:
        return Search(text, hits, deployment=deployments[0])
    return Search(text, hits)


@dataclass(frozen=True, slots=True)
class WorkflowListPage:
    now: int
    stamp: str
    rows: list[Stored[WorkflowRecord]]
    count: int
    facets: dict[str, dict[str, int]]
    next_after: WorkflowID | None
    search: Search | None
    deployments: dict[str, DeploymentRecord]  # of the rows and the deployment facet
    # The rows' workflows with an attempt not yet ended: no Continue on those rows.
    live_attempts: frozenset[str] = frozenset()


def read_workflow_list(
    f: WorkflowFilter, after: WorkflowID | None, seen: str = ""
) -> WorkflowListPage | None:
    """A keyset page of workflows, the facets' tallies and the deployments they name.
    Queries: the stamp (none: the View's snapshot read it), the search (one per kind of
    ID when ``q``), the page (1), the facets (1, from the workflow tally; 4 over the
    rows when ``q`` or ``alert`` restricts to IDs), the deployments (1), which rows have
    a live attempt (2: their runs, those runs' live attempts counted; the rows' Continue
    depends on it)."""

    rules = routed_rules()

    def build(tx: Tx, stamp: str) -> WorkflowListPage:
        r = rules(tx)
        found = search(r, f.q)
        ids = found.workflow_ids if found else None
        if f.alert:
            flagged = alert_ids(r, f.alert, tx.now)
            ids = tuple(flagged) if ids is None else tuple(i for i in ids if i in set(flagged))
        query = f.query(ids)
        if found and found.deployment:
            query = dataclasses.replace(query, deployment_ids=(found.deployment,))
        page = r.page_workflows(query, after, f.size)
        facets = r.workflow_facets(query)
        count = sum(n for value, n in facets["status"].items() if not f.status or value in f.status)
        deployments: dict[str, DeploymentRecord] = {
            d.record.deployment_id: d.record for d in r.list_deployments()
        }
        return WorkflowListPage(
            now=tx.now,
            stamp=stamp,
            rows=page.rows,
            count=count,
            facets=facets,
            next_after=page.next_after,
            search=found,
            deployments=deployments,
            live_attempts=frozenset(
                r.with_live_attempts([s.record.workflow_id for s in page.rows])
            ),
        )

    return polled_view(seen, build)


@dataclass(frozen=True, slots=True)
class DeploymentRow:
    stored: Stored[DeploymentRecord]
    live: int  # nonterminal workflows against it (what max_concurrent_runs counts)
    aliases: list[AliasRecord]

    @property
    def at_limit(self) -> bool:
        limit = self.stored.record.max_concurrent_runs
        return limit > 0 and self.live >= limit


@dataclass(frozen=True, slots=True)
class DeploymentsPage:
    now: int
    stamp: str
    rows: list[DeploymentRow]
    aliases: list[Stored[AliasRecord]]
    by_id: dict[str, DeploymentRecord]


def read_deployments(seen: str = "") -> DeploymentsPage | None:
    """Every deployment with its live runs, and every alias. Queries: the stamp (1),
    deployments (1), aliases (1), the live workflows per deployment (1, a sum over the
    workflow tally)."""

    rules = routed_rules()

    def build(tx: Tx, stamp: str) -> DeploymentsPage:
        r = rules(tx)
        deployments = r.list_deployments()
        aliases = r.list_aliases()
        live = r.live_workflows_by_deployment()
        by_target: dict[str, list[AliasRecord]] = {}
        for a in aliases:
            by_target.setdefault(a.record.target_deployment_id, []).append(a.record)
        rows = [
            DeploymentRow(
                d, live.get(d.record.deployment_id, 0), by_target.get(d.record.deployment_id, [])
            )
            for d in reversed(deployments)
        ]
        return DeploymentsPage(
            tx.now, stamp, rows, aliases, {d.record.deployment_id: d.record for d in deployments}
        )

    return polled_view(seen, build)


@dataclass(frozen=True, slots=True)
class InvocationsPage:
    now: int
    stamp: str
    rows: list[InvocationReceipt]
    outcomes: dict[str, DurableIdempotencyRecord]  # by invocation ID
    next_after: str | None
    workflows: dict[str, WorkflowRecord]  # each receipt's workflow, for its status


def read_invocations(after: str | None, size: int, seen: str = "") -> InvocationsPage | None:
    """A keyset page of invocation receipts, newest first, with the idempotency record
    and the workflow of each. Queries: the stamp (none: the View's snapshot read it),
    receipts (1), their idempotency records (1), their workflows (1)."""

    rules = routed_rules()

    def build(tx: Tx, stamp: str) -> InvocationsPage:
        r = rules(tx)
        receipts, outcomes, next_after = r.page_invocations(after, size)
        ids = tuple(x.workflow_id for x in receipts)
        page = r.page_workflows(WorkflowQuery(workflow_ids=ids), None, max(1, len(ids)))
        workflows: dict[str, WorkflowRecord] = {s.record.workflow_id: s.record for s in page.rows}
        return InvocationsPage(tx.now, stamp, receipts, outcomes, next_after, workflows)

    return polled_view(seen, build)


# Paused for longer than this is a dashboard tile.
PAUSED_LONG_NS = 3600 * 10**9


def alert_ids(r: RoutedRules, alert: str, now: int) -> list[WorkflowID]:
    """The workflows a dashboard tile counts (``filters.ALERTS``)."""
    if alert == "near_ceiling":
        return r.near_ceiling(NEAR_CEILING)
    if alert == "lease_expired":
        return r.expired_leases()
    return r.paused_before(now - PAUSED_LONG_NS)


@dataclass(frozen=True, slots=True)
class RoutedTiles:
    stamp: str
    near_ceiling: int
    lease_expired: int
    needs_replan: int
    paused_long: int


def read_tiles(r: RoutedRules, now: int, stamp: str = "") -> RoutedTiles:
    """The dashboard's routed tiles, in the dashboard's own View. Statements: the
    running workflows and their envelopes (2), running attempts (1), the needs-replan
    count (1, a sum over the workflow tally), paused workflows (1)."""
    replan = r.count_workflows(WorkflowQuery(statuses=(WorkflowStatus.NEEDS_REPLAN.name,)))
    return RoutedTiles(
        stamp=stamp,
        near_ceiling=len(alert_ids(r, "near_ceiling", now)),
        lease_expired=len(alert_ids(r, "lease_expired", now)),
        needs_replan=replan,
        paused_long=len(alert_ids(r, "paused_long", now)),
    )


def read_dashboard_tiles(seen: str = "", now: int | None = None) -> RoutedTiles | None:
    """The routed tiles in a View of their own, for the all-scopes dashboard (routed
    runs belong to no Scope). The stamp turns every minute: leases expire and time is
    consumed without a write."""
    rules = routed_rules()
    return polled_view(
        seen, lambda tx, stamp: read_tiles(rules(tx), tx.now, stamp), now=now, period=60 * 10**9
    )


def deployment_is_active(dep: DeploymentRecord) -> bool:
    return dep.status is DeploymentStatus.ACTIVE


def live(wf: WorkflowRecord) -> bool:
    return not is_terminal(wf.status)

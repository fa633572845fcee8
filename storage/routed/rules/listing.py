"""Paged, filtered reads of workflows for the console (issue 18): a keyset page over
the indexed facet columns, the facets' tallies, and "which workflow does this ID or
prefix belong to" for any routed-run ID.

``list_workflows`` returns every workflow; a list page must not: ``page_workflows``
reads at most ``limit`` rows, newest first, after the key of the last row of the
previous page, selected by deployment (``parent``), status, kind and terminal reason
(``reason``) in the database. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from .. import tally
from ..enums import AttemptStatus, WorkflowStatus
from ..envelope import consumed_ms
from ..errors import InvalidArgument
from ..ids import (
    AttemptID,
    ChildBatchID,
    DeploymentID,
    HandoffID,
    InvocationID,
    NodeID,
    RoutedID,
    RunID,
    ServiceID,
    WorkflowID,
)
from ..records import (
    ArtifactMetadata,
    AttemptProgress,
    AttemptRecord,
    ChildResult,
    DurableIdempotencyRecord,
    InvocationReceipt,
    Stored,
    WorkflowRecord,
)
from ..rows import RowFilter
from ..transitions import is_terminal
from .base import RulesBase, Spec
from .progress import ARTIFACT, PROGRESS
from .specs import (
    ATTEMPT,
    CHILD_BATCH,
    CHILD_RESULT,
    DEPLOYMENT,
    ENVELOPE,
    HANDOFF,
    IDEMPOTENCY,
    INVOCATION,
    NODE,
    RESTART,
    RUN,
    SERVICE,
    WORKFLOW,
)

LIVE_WORKFLOW = tuple(s.name for s in WorkflowStatus if not is_terminal(s))
# The most child rows (attempts, artifacts...) one workflow page reads per table.
MAX_CHILDREN = 10_000
# The alerts below look at no more than this many candidate rows (newest first); the
# console says so when a tile reaches it.
ALERT_SCAN = 2_000

# A page is at most this many workflows (the console's largest page size is 200).
MAX_PAGE = 500
# The facets a workflow list tallies, by their column.
FACETS: dict[str, str] = {
    "status": "status",
    "kind": "kind",
    "deployment": "parent",
    "reason": "reason",
}


@dataclass(frozen=True)
class WorkflowQuery:
    """A workflow list's selection: each tuple empty for any, else the values one of
    which the workflow must have; ``workflow_ids`` restricts to those IDs (a search's
    hits), ``id_prefix`` to workflow IDs starting with it."""

    statuses: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    deployment_ids: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    workflow_ids: tuple[str, ...] | None = None
    id_prefix: str = ""

    def where(self, *, without: str = "") -> RowFilter:
        """The rows this selects, ``without`` one facet's own condition (a facet's
        counts are those of its values under the other conditions)."""

        def facet(name: str, values: tuple[str, ...]) -> tuple[str, ...] | None:
            return None if name == without or not values else values

        return RowFilter(
            parents=facet("deployment", self.deployment_ids),
            statuses=facet("status", self.statuses),
            kinds=facet("kind", self.kinds),
            reasons=facet("reason", self.reasons),
            keys=self.workflow_ids,
            key_prefix=self.id_prefix,
        )


@dataclass(frozen=True)
class WorkflowPage:
    rows: list[Stored[WorkflowRecord]]
    # The key to pass as ``after`` for the next page; None on the last page.
    next_after: WorkflowID | None


@dataclass(frozen=True)
class IdHit:
    """A routed-run ID a search found: its kind ("workflow", "run", ...), the ID, and
    the workflow it belongs to ("" for a deployment, which has many)."""

    kind: str
    id: str
    workflow_id: str


# Searchable IDs by prefix: the table, and how a row names its workflow.
_SEARCHABLE: tuple[tuple[type[RoutedID], str, Spec[Any]], ...] = (
    (WorkflowID, "workflow", WORKFLOW),
    (RunID, "run", RUN),
    (AttemptID, "attempt", ATTEMPT),
    (NodeID, "node", NODE),
    (InvocationID, "invocation", INVOCATION),
    (ServiceID, "service", SERVICE),
    (HandoffID, "handoff", HANDOFF),
    (ChildBatchID, "child batch", CHILD_BATCH),
    (DeploymentID, "deployment", DEPLOYMENT),
)


class ListingRules(RulesBase):
    def page_workflows(
        self, query: WorkflowQuery, after: WorkflowID | None = None, limit: int = 50
    ) -> WorkflowPage:
        """Up to ``limit`` workflows ``query`` selects, newest first, after ``after``
        (the last key of the previous page). Reads limit + 1 rows to know whether
        another page follows."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidArgument(f"a workflow page is 1..{MAX_PAGE} rows, not {limit}")
        rows = self.rows.page(WORKFLOW.table, query.where(), after, limit + 1)
        page = [self._decode(WORKFLOW, row) for row in rows[:limit]]
        more = len(rows) > limit
        return WorkflowPage(page, page[-1].record.workflow_id if more and page else None)

    def workflow_facets(self, query: WorkflowQuery) -> dict[str, dict[str, int]]:
        """Per facet (``FACETS``), how many workflows have each value under the
        query's other conditions. A selection by the facets only (the list's common
        ones) is one statement of sums over the workflow tally, whose cost follows the
        combinations in use (``storage.routed.tally``); one by IDs (a search's hits, an
        ID prefix), one grouped count over the rows per facet."""
        if tally.answers(query.where()):
            asks = [(column, query.where(without=name)) for name, column in FACETS.items()]
            return dict(zip(FACETS, self.rows.counted(WORKFLOW.table, asks), strict=True))
        return {
            name: self.rows.tally(WORKFLOW.table, column, query.where(without=name))
            for name, column in FACETS.items()
        }

    def count_workflows(self, query: WorkflowQuery) -> int:
        """How many workflows ``query`` selects: one statement, over the tally when it
        answers the query (as ``workflow_facets``)."""
        where = query.where()
        if tally.answers(where):
            [by_status] = self.rows.counted(WORKFLOW.table, [("status", where)])
        else:
            by_status = self.rows.tally(WORKFLOW.table, "status", where)
        return sum(by_status.values())

    def live_workflows_by_deployment(self) -> dict[str, int]:
        """Nonterminal workflows per deployment (what ``max_concurrent_runs`` counts):
        one sum over the workflow tally, exact in any transaction or View (the tally
        moves with every workflow row write, in its transaction)."""
        live = RowFilter(statuses=LIVE_WORKFLOW)
        [by_deployment] = self.rows.counted(WORKFLOW.table, [("parent", live)])
        return by_deployment

    def page_invocations(
        self, after: str | None = None, limit: int = 50
    ) -> tuple[list[InvocationReceipt], dict[str, DurableIdempotencyRecord], str | None]:
        """Up to ``limit`` receipts, newest first, after the receipt ``after``, with
        their idempotency records by invocation ID, and the next page's position.
        Two statements."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidArgument(f"an invocation page is 1..{MAX_PAGE} rows, not {limit}")
        rows = self.rows.page(INVOCATION.table, RowFilter(), after, limit + 1)
        receipts = [self._decode(INVOCATION, row).record for row in rows[:limit]]
        ids = [r.invocation_id for r in receipts]
        records = self.rows.page(IDEMPOTENCY.table, RowFilter(parents=ids), None, len(ids) or 1)
        by_invocation: dict[str, DurableIdempotencyRecord] = {}
        for row in records if ids else []:
            record = self._decode(IDEMPOTENCY, row).record
            by_invocation[record.invocation_id] = record
        more = len(rows) > limit
        last = str(receipts[-1].invocation_id) if more and receipts else None
        return receipts, by_invocation, last

    # -- alerts (the dashboard's routed tiles) ----------------------------------------------
    def _newest(self, spec: Spec[Any], statuses: tuple[str, ...]) -> list[Any]:
        rows = self.rows.page(spec.table, RowFilter(statuses=statuses), None, ALERT_SCAN)
        return [self._decode(spec, row).record for row in rows]

    def near_ceiling(self, fraction: float) -> list[WorkflowID]:
        """Running workflows whose active time consumed (now) is at least ``fraction``
        of their envelope's ceiling. Two statements: the running workflows, their
        envelopes."""
        running = self._newest(WORKFLOW, (WorkflowStatus.RUNNING.name,))
        ids = [wf.workflow_id for wf in running]
        if not ids:
            return []
        envelopes = self.rows.page(ENVELOPE.table, RowFilter(keys=ids), None, len(ids))
        hot: set[str] = set()
        for row in envelopes:
            env = self._decode(ENVELOPE, row).record
            ceiling = env.envelope.current_max_active_duration_ms
            if ceiling > 0 and consumed_ms(env.envelope, self.now_ms) >= fraction * ceiling:
                hot.add(env.workflow_id)
        return [i for i in ids if i in hot]

    def expired_leases(self) -> list[WorkflowID]:
        """Workflows with a running attempt whose lease has expired (``now >=
        expires_at``, as everywhere): one statement over the attempts' status index."""
        attempts = self._newest(ATTEMPT, (AttemptStatus.RUNNING.name,))
        found = [
            a.workflow_id
            for a in attempts
            if a.lease is not None and self.now >= a.lease.expires_at
        ]
        return list(dict.fromkeys(found))

    def paused_before(self, before: int) -> list[WorkflowID]:
        """Paused workflows last changed before ``before`` (ns): one statement."""
        paused = self._newest(WORKFLOW, (WorkflowStatus.PAUSED.name,))
        return [wf.workflow_id for wf in paused if wf.updated_at < before]

    # -- a workflow page's records, one statement per table ---------------------------------
    def _children(self, spec: Spec[Any], parents: Collection[str]) -> list[Any]:
        # Asked even for no parents ("WHERE 1 = 0"): a page's statement count is then
        # the same for every workflow.
        rows = self.rows.page(spec.table, RowFilter(parents=parents), None, MAX_CHILDREN)
        return [self._decode(spec, row) for row in reversed(rows)]  # insertion order

    def attempts_of_runs(self, run_ids: Collection[str]) -> list[Stored[AttemptRecord]]:
        return self._children(ATTEMPT, run_ids)

    def artifacts_of_runs(self, run_ids: Collection[str]) -> list[ArtifactMetadata]:
        return [s.record for s in self._children(ARTIFACT, run_ids)]

    def progress_of_runs(self, run_ids: Collection[str]) -> dict[str, AttemptProgress]:
        """Attempt ID -> its progress, for every attempt of ``run_ids``."""
        return {s.record.attempt_id: s.record for s in self._children(PROGRESS, run_ids)}

    def child_results_of(self, batch_ids: Collection[str]) -> list[ChildResult]:
        return [s.record for s in self._children(CHILD_RESULT, batch_ids)]

    def with_live_attempts(self, workflow_ids: Collection[str]) -> set[str]:
        """Which of ``workflow_ids`` (a list page's) have an attempt that is not
        terminal in any of their runs: the attempt's half of whether a continue can
        apply (``_continue`` refuses a run with a live attempt). Two statements, the
        same for any number of workflows: their runs, then those runs' live attempts
        counted per run (no attempt row decoded)."""
        runs = self.rows.page(RUN.table, RowFilter(parents=workflow_ids), None, MAX_CHILDREN)
        workflow_of = {row.key: row.parent for row in runs}
        live = tuple(s.name for s in AttemptStatus if not is_terminal(s))
        where = RowFilter(parents=tuple(workflow_of), statuses=live)
        counts = self.rows.tally(ATTEMPT.table, "parent", where)
        return {workflow_of[run] for run, n in counts.items() if n and run in workflow_of}

    def restarted_from(self, workflow_id: WorkflowID) -> list[str]:
        """The workflows restarted from ``workflow_id`` (their provenance names it)."""
        return [row.key for row in self.rows.scan(RESTART.table, workflow_id)]

    def find_ids(self, text: str, limit: int = 20) -> list[IdHit]:
        """Routed-run IDs equal to or starting with ``text``, each with its workflow.
        ``text`` without a known prefix is tried after every prefix (an alert may give
        the ID's body only). Point and prefix index reads, at most ``limit`` per kind."""
        if not text or len(text) > 255:
            return []
        kinds = [k for k in _SEARCHABLE if text.startswith(k[0].prefix)]
        candidates = (
            [(k, text) for k in kinds] if kinds else [(k, k[0].prefix + text) for k in _SEARCHABLE]
        )
        hits: list[IdHit] = []
        for (_, kind, spec), prefix in candidates:
            for row in self.rows.with_key_prefix(spec.table, prefix, limit):
                hits.append(IdHit(kind, row.key, self._workflow_of(spec, row)))
        return hits

    def _workflow_of(self, spec: Spec[Any], row: Any) -> str:
        if spec is WORKFLOW:
            return str(row.key)
        if spec is DEPLOYMENT:
            return ""
        if spec in (RUN, NODE, SERVICE, HANDOFF, CHILD_BATCH):
            return str(row.parent)  # their parent column is the workflow
        record = self._decode(spec, row).record
        return str(record.workflow_id)

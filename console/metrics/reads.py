"""What /metrics reports about the store, read in ONE ``storage.view`` at scrape time.

Every figure comes from a read the console's pages already make, through the tallies
and indexes behind them, so a scrape costs what is live (the Work tally's rows, running
attempts, due Timers, active Waits, the workflow tally's rows), never the retained
history: the same at 10,000 and at 1,000,000 Work. Statements (pinned by
tests/console/test_metrics.py on both engines): Work by state (1, the tally's margins),
live Work by kind and Scope (1, the tally), exhausted Work (1, as the dashboard), the
oldest ready Work (1, the (state, updated) index), overdue Timers (1, as the
dashboard, with its grace), expired and running attempts (1 each, the running-lease
index), active Waits per age (``WAIT_AGES``: 1 each, the active-Wait index), workflows
by status (1, the workflow tally).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings

from console.overdue import grace_seconds, overdue_by
from console.routed.reads import routed_rules
from storage import (
    LIVE_WORK_STATES,
    ActiveWaitQuery,
    Tx,
    WorkOrder,
    WorkQuery,
    WorkState,
    seconds,
    view,
)
from storage.default import default_store
from storage.routed.rules import WorkflowQuery

# The active Waits are counted by how long they have waited: more than each of these
# many seconds (0: every active Wait). Cumulative, as a histogram's buckets are.
WAIT_AGES = (0, 60, 600, 3600, 86_400, 604_800)
# A lease never expires after this instant: counting running attempts "expired by" it
# counts every running attempt, through the same index as the expired ones.
END_OF_TIME = 2**63 - 1
OTHER = "(other)"  # the label of everything past the top N
NO_SCOPE = "(none)"  # the label of Work without a Scope


@dataclass(frozen=True, slots=True)
class Figures:
    now: int  # the View's time, ns
    work_by_state: Mapping[str, int]  # every Work state, 0 included
    live_by_kind: Mapping[str, int]  # live Work: the top N kinds, then OTHER
    live_by_scope: Mapping[str, int]  # live Work: the top N Scopes, then OTHER
    exhausted: int
    oldest_ready_seconds: float  # how long the longest-ready Work has been ready (0: none)
    overdue_timers: int
    grace_seconds: int
    expired_leases: int
    running_executions: int
    waits_older_than: Mapping[int, int]  # seconds -> active Waits older than that
    workflows_by_status: Mapping[str, int]


def top(
    counts: Mapping[str, int], n: int, rename: Mapping[str, str] | None = None
) -> dict[str, int]:
    """The ``n`` largest counts by name (ties by name), the rest summed under OTHER
    (present only when something was left out), so a label's values stay at most
    ``n + 1`` whatever the data holds."""
    rename = rename or {}
    ranked = sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: (-kv[1], kv[0]))
    out = {rename.get(k, k): v for k, v in ranked[:n]}
    rest = sum(v for _, v in ranked[n:])
    if rest:
        out[OTHER] = out.get(OTHER, 0) + rest
    return out


def read_figures(now: int | None = None) -> Figures:
    """The figures of one snapshot; ``now`` fixes the View's time (tests)."""
    rules = routed_rules()  # opened before the View (it reads a stamp of its own)
    n = int(settings.METRICS_TOP_N)

    def build(tx: Tx) -> Figures:
        at = tx.now
        every = tx.work_facets(WorkQuery())
        live = tx.work_facets(WorkQuery(states=LIVE_WORK_STATES))
        ready = tx.query_works(
            WorkQuery(states=frozenset({WorkState.READY}), order=WorkOrder.UPDATED_ASC, limit=1)
        )
        waits = {
            age: tx.count_active_waits(
                ActiveWaitQuery(created_by=at - seconds(age) if age else None)
            )
            for age in WAIT_AGES
        }
        status = rules(tx).workflow_facets(WorkflowQuery())["status"]
        return Figures(
            now=at,
            work_by_state={s.value: every.state.get(s.value, 0) for s in WorkState},
            live_by_kind=top(live.kind, n),
            live_by_scope=top(live.scope, n, {"": NO_SCOPE}),
            exhausted=tx.count_exhausted(WorkQuery()),
            oldest_ready_seconds=max(0, at - ready[0].updated_at) / 1e9 if ready else 0.0,
            overdue_timers=tx.count_overdue_timers(overdue_by(at)),
            grace_seconds=grace_seconds(),
            expired_leases=tx.count_expired_executions(at),
            running_executions=tx.count_expired_executions(END_OF_TIME),
            waits_older_than=waits,
            workflows_by_status=dict(sorted(status.items())),
        )

    return view(default_store(), now, build)

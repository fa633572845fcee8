"""The workflow tally (``storage.routed.tally``) on every backend: after every kind of
workflow write the rules make (admission, claims, pause and its boundary, resume,
cancel, restart, a failure with a reason, recovery, amendments, a direct update), the
kept counts equal a full count of the workflow rows, and the facets, counts and live
workflows the tally answers equal the GROUP BY over the rows; inside the writing
transaction too, where admission's concurrency limit reads it; a rolled-back
transaction leaves it as it was; random operations keep it (hypothesis). On the ORM:
the facets read the tally alone, and migration 0016's backfill equals the rebuild."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import itertools
from typing import Any

import pytest
from django.apps import apps
from django.db import connections
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.routed import tally
from storage.routed.enums import (
    AttemptStatus,
    AuthorityScope,
    ControlCommand,
    FailureReason,
    WorkflowStatus,
)
from storage.routed.errors import AlreadyRunning, RoutedError
from storage.routed.ids import AttemptID, ControlRequestID, LimitAmendmentID, WorkflowID
from storage.routed.records import (
    AttemptRecord,
    ControlRequest,
    DeploymentRecord,
    LimitAmendment,
    Stored,
)
from storage.routed.rows import RowFilter
from storage.routed.rules import RoutedRules, TransitionCommand, WorkflowQuery
from storage.routed.rules.listing import FACETS, LIVE_WORKFLOW
from storage.routed.rules.specs import WORKFLOW
from storage.routed.store import RoutedStore

from .support import LEASE_MS, control, deployment, probe, request, send

C = ControlCommand
W = WorkflowStatus
STANDALONE: dict[str, str] = {}
PARENT = {"stage:0": "sha256:s0", "child:child.pkg@1.0": "sha256:child"}
PIPELINE = {"stage:0": "sha256:s0", "stage:1:pkg.next@1.0": "sha256:s1"}


def queries(r: RoutedRules) -> list[WorkflowQuery]:
    """Selections the tally answers: each facet alone, several together, none."""
    parents = sorted({row.parent for row in rows_of(r)})
    some = tuple(parents[:1])
    return [
        WorkflowQuery(),
        WorkflowQuery(statuses=("RUNNING", "PAUSED", "PAUSE_REQUESTED")),
        WorkflowQuery(statuses=("FAILED", "CANCELLED"), reasons=("PAUSE_BOUNDARY_UNAVAILABLE",)),
        WorkflowQuery(reasons=("",)),
        WorkflowQuery(kinds=("standalone",)),
        WorkflowQuery(kinds=("pipeline", "parent_child"), statuses=("PENDING",)),
        WorkflowQuery(deployment_ids=some),
        WorkflowQuery(deployment_ids=some, statuses=("CANCELLED", "RUNNING")),
        WorkflowQuery(deployment_ids=("dep-none",)),
    ]


def grouped(r: RoutedRules, query: WorkflowQuery) -> dict[str, dict[str, int]]:
    """The facets counted from the workflow rows (the GROUP BY the tally replaces)."""
    return {
        name: r.rows.tally(WORKFLOW.table, column, query.where(without=name))
        for name, column in FACETS.items()
    }


def rows_of(r: RoutedRules) -> list[Any]:
    """Every workflow row with its four facet columns."""
    return r.rows.page(WORKFLOW.table, RowFilter(), None, 1_000_000)


def kept(r: RoutedRules) -> dict[tally.FacetKey, int]:
    return {key: n for key, n in r.rows.kept(WORKFLOW.table).items() if n}


def agree(r: RoutedRules) -> None:
    """The tally is a full count of the rows, and every read it answers equals the
    same read counted from the rows."""
    counts = r.rows.kept(WORKFLOW.table)
    assert all(n >= 0 for n in counts.values()), counts
    assert kept(r) == tally.count(rows_of(r))
    for query in queries(r):
        assert tally.answers(query.where()), query
        assert r.workflow_facets(query) == grouped(r, query), query
        counted = sum(r.rows.tally(WORKFLOW.table, "status", query.where()).values())
        assert r.count_workflows(query) == counted, query
    live = r.rows.tally(WORKFLOW.table, "parent", RowFilter(statuses=LIVE_WORKFLOW))
    assert r.live_workflows_by_deployment() == live


def check(routed: RoutedStore) -> None:
    routed.view(agree)


def _dep(routed: RoutedStore, nested: dict[str, str], max_runs: int = 0) -> DeploymentRecord:
    """A deployment whose workflows are of the kind its packages make (topology)."""
    dep = dataclasses.replace(deployment(max_runs=max_runs), nested_package_digests=dict(nested))
    return routed.transact(lambda r: r.create_deployment(dep)).record


_keys = itertools.count()


def _admit(routed: RoutedStore, dep: DeploymentRecord) -> WorkflowID:
    current = routed.view(lambda r: r.get_deployment(dep.deployment_id))
    req = request(dep.deployment_id, key=f"t-{next(_keys)}")
    return routed.transact(
        lambda r: r.admit_invocation(req, current.generation)
    ).receipt.workflow_id


def _run_of(routed: RoutedStore, wf_id: WorkflowID) -> Any:
    """The workflow's first run (admission's, the first stage's in a pipeline)."""
    return routed.view(lambda r: r.list_runs(wf_id))[0].record.run_id


def _claim(routed: RoutedStore, wf_id: WorkflowID) -> Stored[AttemptRecord]:
    run_id = _run_of(routed, wf_id)
    number = len(routed.view(lambda r: r.list_attempts(run_id))) + 1
    created = routed.transact(
        lambda r: r.create_attempt(AttemptRecord(AttemptID.new(), run_id, wf_id, number))
    )
    return routed.transact(
        lambda r: r.claim_attempt(created.record.attempt_id, created.generation, LEASE_MS)
    )


def _control(routed: RoutedStore, wf_id: WorkflowID, command: ControlCommand) -> Any:
    return send(routed, control(routed, wf_id, command, key=f"c-{next(_keys)}"))


def _amend(routed: RoutedStore, wf_id: WorkflowID) -> None:
    env = routed.view(lambda r: r.get_time_envelope(wf_id)).record
    generation = env.lifecycle_authority_generation
    amendment = LimitAmendment(
        amendment_id=LimitAmendmentID.new(),
        workflow_id=wf_id,
        expected_authority_generation=generation,
        reason="more time",
        actor_identity="admin",
        idempotency_key=f"a-{next(_keys)}",
        new_max_active_duration_ms=env.current_max_active_duration_ms + 60_000,
    )
    routed.transact(
        lambda r: r.append_limit_amendment(
            wf_id, generation, amendment, AuthorityScope.AMEND_LIMITS
        )
    )


def _fail(routed: RoutedStore, wf_id: WorkflowID, reason: FailureReason) -> None:
    wf = routed.view(lambda r: r.get_workflow(wf_id))
    failed = dataclasses.replace(wf.record, status=W.FAILED, terminal_reason=reason)
    routed.transact(lambda r: r.update_workflow(failed, wf.generation))


def test_it_equals_a_full_count_after_every_kind_of_workflow_write(routed: RoutedStore) -> None:
    parent = _dep(routed, PARENT)
    single = _dep(routed, STANDALONE, max_runs=5)
    staged = _dep(routed, PIPELINE)
    a1, a2, b1, c1 = (_admit(routed, d) for d in (parent, parent, single, staged))
    check(routed)

    _claim(routed, a1)  # running
    check(routed)
    _control(routed, a1, C.PAUSE)  # pause requested while an attempt runs
    check(routed)
    run_id = _run_of(routed, a1)
    routed.transact(lambda r: r.reconcile_interrupted(run_id))  # recovery: the boundary, paused
    assert routed.view(lambda r: r.get_workflow(a1)).record.status is W.PAUSED
    check(routed)
    _control(routed, a1, C.RESUME)
    check(routed)
    _amend(routed, a1)  # a workflow write that moves none of the four columns
    check(routed)

    _claim(routed, a2)
    _control(routed, a2, C.PAUSE)
    wf = routed.view(lambda r: r.get_workflow(a2))
    routed.transact(
        lambda r: r.apply_transition(
            a2, wf.generation, TransitionCommand.PAUSE_BOUNDARY_UNAVAILABLE, "no-boundary"
        )
    )
    assert (
        routed.view(lambda r: r.get_workflow(a2)).record.terminal_reason
        is FailureReason.PAUSE_BOUNDARY_UNAVAILABLE
    )
    check(routed)

    _control(routed, b1, C.CANCEL)
    check(routed)
    restarted = _control(routed, b1, C.RESTART).result.new_workflow_id
    assert routed.view(lambda r: r.get_workflow(restarted)).record.status is W.PENDING
    check(routed)

    _claim(routed, c1)
    _fail(routed, c1, FailureReason.MODEL_TIMEOUT)  # a direct update with a reason
    check(routed)
    facets = routed.view(lambda r: r.workflow_facets(WorkflowQuery(statuses=("FAILED",))))
    assert facets["reason"] == {"PAUSE_BOUNDARY_UNAVAILABLE": 1, "MODEL_TIMEOUT": 1}


def _cancel_in(rules: RoutedRules, wf_id: WorkflowID) -> None:
    wf = rules.get_workflow(wf_id)
    rules.request_control(
        ControlRequest(
            control_request_id=ControlRequestID.new(),
            workflow_id=wf_id,
            command=C.CANCEL,
            expected_generation=wf.generation,
            actor_identity="op",
            authority_scope=AuthorityScope.CONTROL,
            idempotency_key=f"cancel-{wf_id}",
        )
    )


def test_a_read_inside_the_writing_transaction_counts_its_own_writes(
    routed: RoutedStore,
) -> None:
    dep = _dep(routed, STANDALONE, max_runs=2)
    ref = dep.deployment_id

    def admit_to_the_limit(rules: RoutedRules) -> None:
        first = rules.admit_invocation(request(ref, "in-1"), 1).receipt.workflow_id
        agree(rules)
        rules.admit_invocation(request(ref, "in-2"), 1)
        assert rules.live_workflows_by_deployment() == {ref: 2}
        # Admission counts the live workflows this transaction admitted.
        with pytest.raises(AlreadyRunning):
            rules.admit_invocation(request(ref, "in-3"), 1)
        _cancel_in(rules, first)
        agree(rules)
        rules.admit_invocation(request(ref, "in-3"), 1)  # the cancel freed a slot
        agree(rules)

    routed.transact(admit_to_the_limit)
    check(routed)
    assert routed.view(lambda r: r.live_workflows_by_deployment()) == {ref: 2}
    assert routed.view(lambda r: r.count_workflows(WorkflowQuery(deployment_ids=(ref,)))) == 3


def test_admission_refuses_at_the_limit_until_a_workflow_ends(routed: RoutedStore) -> None:
    dep = _dep(routed, STANDALONE, max_runs=1)
    first = _admit(routed, dep)
    with pytest.raises(AlreadyRunning):
        _admit(routed, dep)
    _control(routed, first, C.CANCEL)
    _admit(routed, dep)
    check(routed)


def test_a_rolled_back_transaction_leaves_the_tally_as_it_was(routed: RoutedStore) -> None:
    dep = _dep(routed, STANDALONE)
    kept_wf = _admit(routed, dep)
    _claim(routed, kept_wf)
    before = routed.view(lambda r: r.rows.kept(WORKFLOW.table))
    facets_before = routed.view(lambda r: r.workflow_facets(WorkflowQuery()))

    def write_then_roll_back(rules: RoutedRules) -> None:
        rules.admit_invocation(request(dep.deployment_id, "rolled-back"), 1)
        _cancel_in(rules, kept_wf)
        agree(rules)  # the changes reached the backend, then roll back

    probe(routed, write_then_roll_back)
    assert routed.view(lambda r: r.rows.kept(WORKFLOW.table)) == before
    assert routed.view(lambda r: r.workflow_facets(WorkflowQuery())) == facets_before
    check(routed)


def test_selections_by_ids_are_counted_from_the_rows(routed: RoutedStore) -> None:
    dep = _dep(routed, STANDALONE)
    ids = [_admit(routed, dep) for _ in range(3)]
    for query in (WorkflowQuery(workflow_ids=(ids[0], ids[2])), WorkflowQuery(id_prefix=ids[1])):
        assert not tally.answers(query.where())
        assert routed.view(lambda r, q=query: r.workflow_facets(q) == grouped(r, q))
    assert (
        routed.view(lambda r: r.count_workflows(WorkflowQuery(workflow_ids=(ids[0], ids[2])))) == 2
    )
    assert routed.view(lambda r: r.count_workflows(WorkflowQuery(workflow_ids=()))) == 0


def test_the_tally_is_read_only_by_the_facet_columns(routed: RoutedStore) -> None:
    from storage.errors import Invalid

    with pytest.raises(Invalid):  # it knows no keys
        routed.view(lambda r: r.rows.counted(WORKFLOW.table, [("status", RowFilter(keys=()))]))
    with pytest.raises(Invalid):
        routed.view(lambda r: r.rows.counted(WORKFLOW.table, [("body", RowFilter())]))
    with pytest.raises(Invalid):  # only the workflow table has one
        routed.view(lambda r: r.rows.counted("run", [("status", RowFilter())]))


# -- random operations ----------------------------------------------------------------
OPERATIONS = ("admit", "claim", "pause", "resume", "cancel", "restart", "continue", "stop")
OPERATIONS += ("recover", "no_boundary", "fail", "amend")


def _operate(
    routed: RoutedStore, deps: list[DeploymentRecord], wfs: list[WorkflowID], op: str, i: int
) -> None:
    if op == "admit" or not wfs:
        wfs.append(_admit(routed, deps[i % len(deps)]))
        return
    wf_id = wfs[i % len(wfs)]
    if op == "claim":
        _claim(routed, wf_id)
    elif op in ("pause", "resume", "cancel", "restart", "continue"):
        outcome = _control(routed, wf_id, C[op.upper()])
        if outcome.result.new_workflow_id:
            wfs.append(outcome.result.new_workflow_id)
    elif op == "stop":  # the supervisor ends the running attempt
        run_id = _run_of(routed, wf_id)
        for attempt in routed.view(lambda r: r.list_attempts(run_id)):
            lease = attempt.record.lease
            if attempt.record.status is AttemptStatus.RUNNING and lease is not None:
                stopped = dataclasses.replace(attempt.record, status=AttemptStatus.NEEDS_REPLAN)
                routed.transact(
                    lambda r, attempt=attempt, lease=lease, stopped=stopped: r.update_attempt(
                        stopped, attempt.generation, lease.lease_id
                    )
                )
    elif op == "recover":
        run_id = _run_of(routed, wf_id)
        routed.transact(lambda r: r.reconcile_interrupted(run_id))
    elif op == "no_boundary":
        wf = routed.view(lambda r: r.get_workflow(wf_id))
        routed.transact(
            lambda r: r.apply_transition(
                wf_id, wf.generation, TransitionCommand.PAUSE_BOUNDARY_UNAVAILABLE, f"nb-{i}"
            )
        )
    elif op == "fail":
        _fail(routed, wf_id, list(FailureReason)[i % len(FailureReason)])
    else:
        _amend(routed, wf_id)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(OPERATIONS), st.integers(min_value=0, max_value=7)),
        min_size=1,
        max_size=10,
    )
)
def test_random_operations_keep_the_tally_a_full_count(
    routed: RoutedStore, steps: list[tuple[str, int]]
) -> None:
    """Examples share the store (a tally is a count of every row, whoever wrote it);
    each makes its own deployments, one of them limited. A refused operation rolls
    back and must leave the tally as the rows are."""
    deps = [_dep(routed, STANDALONE, max_runs=2), _dep(routed, PIPELINE)]
    wfs: list[WorkflowID] = []
    for op, i in steps:
        # Refused by a rule (a transition the map forbids, the limit...): rolled back.
        with contextlib.suppress(RoutedError):
            _operate(routed, deps, wfs, op, i)
        check(routed)


# -- the ORM's statements, the migration's backfill -----------------------------------
ORM = pytest.mark.django_db(transaction=True, databases=["default", "view"])
ROWS = '"conduit_routed_workflow"'
TALLY = '"conduit_routed_workflow_tally"'


def _statements(ctx: CaptureQueriesContext, table: str) -> int:
    return sum(table in q["sql"] for q in ctx.captured_queries)


@ORM
def test_the_facets_of_a_selection_by_facets_read_the_tally_alone(clock: Any) -> None:
    from storage.orm import OrmStore

    routed = RoutedStore(OrmStore(clock=clock))
    dep = _dep(routed, STANDALONE)
    ids = [_admit(routed, dep) for _ in range(3)]
    view = connections["view"]
    with CaptureQueriesContext(view) as facets:
        routed.view(
            lambda r: r.workflow_facets(WorkflowQuery(kinds=("standalone",), statuses=("PENDING",)))
        )
    with CaptureQueriesContext(view) as count:
        routed.view(lambda r: r.count_workflows(WorkflowQuery(deployment_ids=(dep.deployment_id,))))
    with CaptureQueriesContext(view) as live:
        routed.view(lambda r: r.live_workflows_by_deployment())
    with CaptureQueriesContext(view) as searched:
        routed.view(lambda r: r.workflow_facets(WorkflowQuery(workflow_ids=tuple(ids[:2]))))
    # One statement over the tally, none over the workflow rows...
    assert (_statements(facets, TALLY), _statements(facets, ROWS)) == (1, 0)
    assert (_statements(count, TALLY), _statements(count, ROWS)) == (1, 0)
    assert (_statements(live, TALLY), _statements(live, ROWS)) == (1, 0)
    # ...but a selection by IDs counts its rows: one grouped count per facet.
    assert (_statements(searched, TALLY), _statements(searched, ROWS)) == (0, len(FACETS))


@ORM
def test_a_write_that_moves_no_facet_column_writes_no_tally_row(clock: Any) -> None:
    from storage.orm import OrmStore

    routed = RoutedStore(OrmStore(clock=clock))
    wf_id = _admit(routed, _dep(routed, STANDALONE))
    _claim(routed, wf_id)
    with CaptureQueriesContext(connections["default"]) as amend:
        _amend(routed, wf_id)  # writes the workflow row (its ceilings)
    with CaptureQueriesContext(connections["default"]) as pause:
        _control(routed, wf_id, C.PAUSE)  # RUNNING -> PAUSE_REQUESTED
    assert _statements(amend, ROWS) >= 1
    assert _statements(amend, TALLY) == 0
    assert _statements(pause, TALLY) == 1  # one upsert: -1 RUNNING, +1 PAUSE_REQUESTED


@ORM
def test_the_migrations_backfill_and_the_rebuild_equal_a_full_count(clock: Any) -> None:
    from storage.orm import OrmStore
    from storage.routed.rows_orm import rebuild_workflow_tally

    migration = importlib.import_module("storage.migrations.0016_routed_workflow_tally")
    routed = RoutedStore(OrmStore(clock=clock))
    single, staged = _dep(routed, STANDALONE), _dep(routed, PIPELINE)
    ids = [_admit(routed, d) for d in (single, single, staged)]
    _claim(routed, ids[0])
    _control(routed, ids[1], C.CANCEL)
    _fail(routed, ids[0], FailureReason.STALL_TIMEOUT)
    rules_kept = routed.view(kept)
    full = routed.view(lambda r: tally.count(rows_of(r)))
    assert rules_kept == full

    connection = connections["default"]
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TALLY}")  # noqa: S608
    with connection.schema_editor() as editor:
        migration.backfill(apps, editor)
    assert routed.view(lambda r: r.rows.kept(WORKFLOW.table)) == full

    # A row written past the rules (a bulk load in plain SQL) is not counted until the
    # rebuild counts it.
    with connection.cursor() as cursor:
        cursor.execute(
            f'INSERT INTO {ROWS} ("key", "body", "generation", "parent", "status", "kind", '  # noqa: S608
            f'"reason") SELECT %s, "body", "generation", "parent", "status", "kind", "reason" '
            f'FROM {ROWS} WHERE "key" = %s',
            ["wf-bulk", ids[2]],
        )
    assert routed.view(kept) != routed.view(lambda r: tally.count(rows_of(r)))
    with connection.cursor() as cursor:
        rebuild_workflow_tally(cursor)
    check(routed)
    assert routed.view(lambda r: r.count_workflows(WorkflowQuery())) == len(ids) + 1

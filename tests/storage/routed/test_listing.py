"""The paged, filtered workflow read (issue 18) on every backend: keyset pages newest
first, the facets' conditions applied in the store, tallies that leave out their own
facet, ID search by exact ID or prefix, and the ORM's statements per read pinned."""

from __future__ import annotations

import dataclasses

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from storage.routed.enums import FailureReason, WorkflowStatus
from storage.routed.errors import InvalidArgument
from storage.routed.ids import WorkflowID
from storage.routed.rules import WorkflowQuery
from storage.routed.rules.specs import WORKFLOW
from storage.routed.store import RoutedStore

from .support import admit, claimed, first_attempt


def _set(routed: RoutedStore, wf_id: WorkflowID, **changes: object) -> None:
    """Give a workflow a status (and reason) past the rules: test setup for facets."""
    from .support import force

    def write(rules):  # type: ignore[no-untyped-def]
        current = rules.get_workflow(wf_id).record
        force(rules, WORKFLOW, dataclasses.replace(current, **changes))

    routed.transact(write)


@pytest.fixture
def five(routed: RoutedStore) -> list[WorkflowID]:
    """Five workflows of two deployments, oldest first: two failed (one stalled, one
    expired), one cancelled, two pending."""
    ids = [admit(routed, key=f"k{i}").receipt.workflow_id for i in range(5)]
    _set(routed, ids[0], status=WorkflowStatus.FAILED, terminal_reason=FailureReason.STALL_TIMEOUT)
    _set(
        routed,
        ids[1],
        status=WorkflowStatus.FAILED,
        terminal_reason=FailureReason.ACTIVE_TIME_EXHAUSTED,
    )
    _set(routed, ids[2], status=WorkflowStatus.CANCELLED)
    return ids


def _ids(page) -> list[str]:  # type: ignore[no-untyped-def]
    return [s.record.workflow_id for s in page.rows]


def test_it_pages_newest_first_without_gaps_or_repeats(routed, five):
    first = routed.view(lambda r: r.page_workflows(WorkflowQuery(), limit=2))
    second = routed.view(lambda r: r.page_workflows(WorkflowQuery(), first.next_after, limit=2))
    last = routed.view(lambda r: r.page_workflows(WorkflowQuery(), second.next_after, limit=2))
    assert _ids(first) + _ids(second) + _ids(last) == list(reversed(five))
    assert last.next_after is None


def test_it_selects_by_status_reason_and_deployment_in_the_store(routed, five):
    failed = routed.view(lambda r: r.page_workflows(WorkflowQuery(statuses=("FAILED",))))
    assert _ids(failed) == [five[1], five[0]]
    stalled = routed.view(lambda r: r.page_workflows(WorkflowQuery(reasons=("STALL_TIMEOUT",))))
    assert _ids(stalled) == [five[0]]
    dep = routed.view(lambda r: r.get_workflow(five[3])).record.deployment_id
    assert _ids(routed.view(lambda r: r.page_workflows(WorkflowQuery(deployment_ids=(dep,))))) == [
        five[3]
    ]
    both = WorkflowQuery(statuses=("FAILED", "CANCELLED"), kinds=("standalone", "parent_child"))
    assert _ids(routed.view(lambda r: r.page_workflows(both))) == [five[2], five[1], five[0]]
    assert routed.view(lambda r: r.count_workflows(both)) == 3


def test_it_tallies_each_facet_under_the_other_conditions_only(routed, five):
    facets = routed.view(lambda r: r.workflow_facets(WorkflowQuery(statuses=("FAILED",))))
    # The status facet ignores the status condition, so every status is offered...
    assert facets["status"] == {"FAILED": 2, "CANCELLED": 1, "PENDING": 2}
    # ...and the others count the failed workflows only.
    assert facets["reason"] == {"STALL_TIMEOUT": 1, "ACTIVE_TIME_EXHAUSTED": 1}
    assert sum(facets["deployment"].values()) == 2


def test_it_restricts_to_search_hits_and_to_an_id_prefix(routed, five):
    hits = WorkflowQuery(workflow_ids=(five[0], five[4]))
    assert _ids(routed.view(lambda r: r.page_workflows(hits))) == [five[4], five[0]]
    assert _ids(routed.view(lambda r: r.page_workflows(WorkflowQuery(id_prefix=five[2][:12])))) == [
        five[2]
    ]
    assert routed.view(lambda r: r.page_workflows(WorkflowQuery(workflow_ids=()))).rows == []


def test_an_unknown_page_position_selects_nothing(routed, five):
    page = routed.view(lambda r: r.page_workflows(WorkflowQuery(), WorkflowID("wf-never")))
    assert page.rows == []
    assert page.next_after is None


@pytest.mark.parametrize("limit", [0, -1, 501])
def test_it_refuses_a_page_size_out_of_range(routed, limit):
    with pytest.raises(InvalidArgument):
        routed.view(lambda r: r.page_workflows(WorkflowQuery(), limit=limit))


def test_it_finds_the_workflow_of_any_routed_id_or_prefix(routed):
    admission = admit(routed)
    attempt = claimed(routed, admission).record
    wf = admission.receipt.workflow_id
    for text in (wf, wf[:8], admission.receipt.run_id, attempt.attempt_id[:10]):
        assert wf in {
            hit.workflow_id for hit in routed.view(lambda r, text=text: r.find_ids(text))
        }, text
    # The ID's body alone (an alert may drop the prefix) is tried after every prefix.
    assert {h.kind for h in routed.view(lambda r: r.find_ids(attempt.attempt_id[3:]))} == {
        "attempt"
    }
    dep = routed.view(lambda r: r.find_ids(admission.receipt.resolved_deployment_id))
    assert [(h.kind, h.workflow_id) for h in dep] == [("deployment", "")]
    assert routed.view(lambda r: r.find_ids("wf-nothing-like-it")) == []


def test_facet_columns_follow_every_write(routed):
    wf = admit(routed).receipt.workflow_id
    _set(
        routed,
        wf,
        status=WorkflowStatus.FAILED,
        terminal_reason=FailureReason.ACTIVE_TIME_EXHAUSTED,
    )
    assert _ids(
        routed.view(lambda r: r.page_workflows(WorkflowQuery(reasons=("ACTIVE_TIME_EXHAUSTED",))))
    ) == [wf]
    _set(routed, wf, terminal_reason=None)
    assert (
        routed.view(
            lambda r: r.page_workflows(WorkflowQuery(reasons=("ACTIVE_TIME_EXHAUSTED",)))
        ).rows
        == []
    )


@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_each_read_is_one_statement_on_the_orm(clock):
    from storage.orm import OrmStore

    routed = RoutedStore(OrmStore(clock=clock))
    five = [admit(routed, key=f"k{i}").receipt.workflow_id for i in range(5)]
    with CaptureQueriesContext(connections["view"]) as page:
        routed.view(
            lambda r: r.page_workflows(WorkflowQuery(statuses=("FAILED",)), five[1], limit=2)
        )
    with CaptureQueriesContext(connections["view"]) as facets:
        routed.view(lambda r: r.workflow_facets(WorkflowQuery(kinds=("standalone",))))

    def routed_selects(ctx: CaptureQueriesContext, table: str) -> int:
        return sum(f'"{table}"' in q["sql"] for q in ctx.captured_queries)

    assert routed_selects(page, "conduit_routed_workflow") == 1
    # A selection by facets only: one statement of sums over the workflow tally
    # (test_workflow_tally.py pins the other cases).
    assert routed_selects(facets, "conduit_routed_workflow_tally") == 1
    assert routed_selects(facets, "conduit_routed_workflow") == 0


def test_a_workflows_children_are_read_by_their_runs_in_one_go(routed):
    first, second = admit(routed, key="a"), admit(routed, key="b")
    a1 = claimed(routed, first).record
    b1 = claimed(routed, second).record
    runs = [first.receipt.run_id]
    assert [s.record.attempt_id for s in routed.view(lambda r: r.attempts_of_runs(runs))] == [
        a1.attempt_id
    ]
    both = [first.receipt.run_id, second.receipt.run_id]
    found = routed.view(lambda r: r.attempts_of_runs(both))
    assert [s.record.attempt_id for s in found] == [a1.attempt_id, b1.attempt_id]
    assert routed.view(lambda r: r.attempts_of_runs([])) == []
    assert routed.view(lambda r: r.progress_of_runs(both)) == {}
    assert routed.view(lambda r: r.child_results_of([])) == []


def test_it_says_which_workflows_have_a_live_attempt_in_two_statements(routed):
    from storage.routed.enums import AttemptStatus

    idle = admit(routed, key="idle")  # no attempt yet
    pending = admit(routed, key="pending")
    first_attempt(routed, pending)  # created, not claimed: PENDING is live
    running = admit(routed, key="running")
    claimed(routed, running)
    ended = admit(routed, key="ended")
    attempt = claimed(routed, ended).record
    assert attempt.lease is not None
    done = dataclasses.replace(attempt, status=AttemptStatus.FAILED)
    generation = routed.view(lambda r: r.get_attempt(attempt.attempt_id)).generation
    routed.transact(lambda r: r.update_attempt(done, generation, attempt.lease.lease_id))
    ids = [a.receipt.workflow_id for a in (idle, pending, running, ended)]

    live = routed.view(lambda r: r.with_live_attempts(ids))

    assert live == {pending.receipt.workflow_id, running.receipt.workflow_id}
    assert routed.view(lambda r: r.with_live_attempts([])) == set()


def test_invocations_page_newest_first_with_their_idempotency_records(routed):
    receipts = [admit(routed, key=f"inv{i}").receipt for i in range(3)]
    first, records, after = routed.view(lambda r: r.page_invocations(None, 2))
    assert [x.invocation_id for x in first] == [
        receipts[2].invocation_id,
        receipts[1].invocation_id,
    ]
    assert records[receipts[2].invocation_id].idempotency_key == "inv2"
    rest, _, last = routed.view(lambda r: r.page_invocations(after, 2))
    assert [x.invocation_id for x in rest] == [receipts[0].invocation_id]
    assert last is None


def test_facets_of_a_table_without_them_are_refused_by_name(routed):
    from storage.errors import Invalid
    from storage.routed.rows import RowFilter

    with pytest.raises(Invalid):
        routed.view(lambda r: r.rows.tally("attempt", "kind", RowFilter()))
    with pytest.raises(Invalid):
        routed.view(lambda r: r.rows.page("attempt", RowFilter(kinds=("x",)), None, 1))
    with pytest.raises(Invalid):
        routed.view(lambda r: r.rows.tally("workflow", "body", RowFilter()))

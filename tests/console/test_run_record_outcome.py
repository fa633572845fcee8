"""A run's outcome derived from its record (console/run_records/outcome.py), over the records
the simulator's graphs save step by step, and as the Runs list and a run page show it."""

from __future__ import annotations

import re

from django.urls import reverse

from console.run_records.outcome import RunRecordStatus, run_outcome
from demo.graphs import Plan
from storage.run_records import AttemptState, DurableRunRecord, StoredRun
from tests.console import run_record_factories as rf
from tests.console.conftest import DB

S = 1_000_000_000


def stored(record: DurableRunRecord, created: int = 10 * S, updated: int = 70 * S) -> StoredRun:
    return StoredRun(record, created_ns=created, updated_ns=updated, stored_format=2)


def statuses(plan: Plan) -> list[RunRecordStatus]:
    return [run_outcome(stored(r), False, 100 * S).status for r in rf.steps("r/1", plan)]


def test_a_fresh_record_is_active_and_a_finished_checkout_complete() -> None:
    seen = statuses(Plan("checkout"))
    assert seen[0] is RunRecordStatus.ACTIVE
    assert seen[-1] is RunRecordStatus.COMPLETE
    assert RunRecordStatus.FAILED not in seen


def test_a_payment_that_fails_twice_is_retrying_then_complete() -> None:
    seen = statuses(Plan("payment", failures=2))
    assert RunRecordStatus.RETRYING in seen
    assert seen[-1] is RunRecordStatus.COMPLETE


def test_a_payment_that_spends_its_retry_budget_ends_failed_with_its_last_try() -> None:
    last = rf.until("r/1", Plan("payment", failures=99))
    outcome = run_outcome(stored(last), False, 100 * S)
    assert outcome.status is RunRecordStatus.FAILED
    failure = outcome.last_failure
    assert failure is not None
    assert failure.kind == "retry"
    assert failure.spent
    assert last.attempts[failure.key].state is AttemptState.FAILED
    assert failure.index == max(a.index for a in last.attempts.values() if a.boundary)


def test_a_finished_run_lasts_from_first_to_last_save_an_active_one_until_now() -> None:
    done = rf.until("r/1", Plan("checkout"))
    assert run_outcome(stored(done), False, 500 * S).duration_ns == 60 * S
    first = next(rf.steps("r/1", Plan("checkout")))
    assert run_outcome(stored(first), False, 500 * S).duration_ns == 490 * S


def test_a_run_a_session_holds_is_active_even_when_every_attempt_is_confirmed() -> None:
    done = rf.until("r/1", Plan("checkout"))
    assert run_outcome(stored(done), True, 100 * S).status is RunRecordStatus.ACTIVE


@DB
def test_the_runs_list_and_run_page_lead_with_the_outcome(as_alice) -> None:
    rf.checkout("checkout/1")
    rf.save(rf.until("payment/9", Plan("payment", failures=99)))
    listing = as_alice.get(reverse("run_records")).content.decode()
    row = r'<td class="id"><a class="mono" href="/run-records/([^"]+)">.*?run-status run-(\w+)'
    status = dict(re.findall(row, listing, re.S))
    assert status == {"checkout/1": "complete", "payment/9": "failed"}
    assert "budget spent" in listing

    page = as_alice.get(reverse("run_record", args=["payment/9"])).content.decode()
    order = [page.index(f'id="{part}"') for part in ("run-outcome", "run-tree", "findings")]
    assert order == sorted(order)
    assert "last failure" in page
    assert "the record keeps no error text" in page

"""Startup backfills (storage.ops.backfill), on the reference double and on SQLite:
Event scopes from the Work an Event resolves to, attempt executors from their own
binding; both idempotent, both batched by ``run_backfills`` and ``manage.py backfill``."""

from __future__ import annotations

import io
from dataclasses import replace
from typing import cast

import pytest
from django.core.management import call_command

from storage import Binding, ExecutionState, Invalid, Store, Tx, WorkQuery
from storage.ops.backfill import (
    backfill_event_scopes,
    backfill_executors,
    run_backfills,
)
from storage.tx import BaseTx

from ..support import (
    get_execution,
    get_work,
    key,
    make_event,
    make_execution,
    make_scope,
    make_work,
    tx,
)


def scopes_of(store: Store) -> dict[str, str]:
    return tx(store, lambda t: {e.id: e.scope_id for e in t.events()})


def seed_events(t: Tx) -> None:
    """Scopes s1, s2; Work w1 in s1, w2 in s2 (owning key k2), w3 without a scope;
    Events accepted on their own (no scope recorded), as before record format 4."""
    t.put_scope(make_scope("s1"))
    t.put_scope(make_scope("s2"))
    t.put_work(make_work("w1", scope_id="s1"))
    t.put_work(make_work("w2", scope_id="s2", keys=[key("k2")]))
    t.put_work(make_work("w3"))
    t.accept_event(make_event("named", work_id="w1"))
    t.accept_event(make_event("routed"))
    t.mark_routed("routed", "w2", "routed")
    t.accept_event(make_event("keyed", keys=[key("k2")]))
    t.accept_event(make_event("unscoped-work", work_id="w3"))
    t.mark_routed("unscoped-work", "w2", "routed")
    t.accept_event(make_event("orphan", keys=[key("nobody")]))
    t.accept_event(make_event("ghost-named", work_id="ghost"))
    t.mark_routed("ghost-named", "w1", "routed")
    t.accept_event(make_event("already", work_id="w1"))
    t.set_event_scope("already", "s2")


def test_it_fills_event_scopes_from_the_work_the_event_resolves_to(store: Store) -> None:
    tx(store, seed_events)
    assert tx(store, backfill_event_scopes) == 4
    assert scopes_of(store) == {
        "named": "s1",  # the Work the envelope names
        "routed": "s2",  # else the Work it was routed to
        "keyed": "s2",  # else the Work owning its first correlation key
        "unscoped-work": "",  # the named Work decides, and it has no scope
        "orphan": "",  # resolves to no Work
        "ghost-named": "s1",  # a named Work that does not exist does not decide
        "already": "s2",  # a recorded scope is never changed
    }
    assert [e.id for e in tx(store, lambda t: t.scope_events(["s1"]))] == ["named", "ghost-named"]


def test_event_scope_backfill_is_idempotent(store: Store) -> None:
    tx(store, seed_events)
    tx(store, backfill_event_scopes)
    before = scopes_of(store)
    assert tx(store, backfill_event_scopes) == 0
    assert scopes_of(store) == before
    left = [e.id for e in tx(store, lambda t: t.scope_events([""]))]
    assert left == ["unscoped-work", "orphan"]


def test_event_scope_backfill_pages_by_sequence(store: Store) -> None:
    tx(store, seed_events)
    first = tx(store, lambda t: t.event("named").sequence)
    # The first two Events without a scope after "named": "routed" and "keyed".
    assert tx(store, lambda t: backfill_event_scopes(t, after=first, limit=2)) == 2
    assert scopes_of(store)["named"] == ""
    assert scopes_of(store)["routed"] == scopes_of(store)["keyed"] == "s2"


def legacy_attempt(t: Tx, execution_id: str) -> None:
    """Make an attempt look registered before executors were kept: executor and its
    Work's latest_executor empty, binding unchanged. Writes rows directly, through the
    backend's persistence interface, because the contract would fill them in."""
    raw = cast(BaseTx, t)
    x = t.execution(execution_id)
    raw._put("execution", replace(x, executor=""), create=False)
    raw._put("work", replace(t.work(x.work_id), latest_executor=""), create=False)


def seed_attempts(t: Tx) -> None:
    """Work a1 with a cancelled attempt x1 and a latest attempt x2, a2 with an attempt
    whose binding names no executor, a3 with an attempt already recorded."""
    t.put_work(make_work("a1"))
    t.put_execution(make_execution("x1", "a1", binding=Binding("build", "runner.old")))
    t.put_execution(replace(t.execution("x1"), state=ExecutionState.CANCELLED))
    t.put_execution(make_execution("x2", "a1", 2, binding=Binding("build", "runner.new")))
    t.put_work(make_work("a2"))
    t.put_execution(make_execution("y1", "a2", binding=Binding("build", "")))
    t.put_work(make_work("a3"))
    t.put_execution(make_execution("z1", "a3", binding=Binding("build", "runner.z")))
    for execution_id in ("x1", "x2", "y1"):
        legacy_attempt(t, execution_id)


def test_it_fills_attempt_executors_from_their_binding(store: Store) -> None:
    tx(store, seed_attempts)
    assert get_work(store, "a1").latest_executor == ""
    assert tx(store, backfill_executors) == 2
    assert get_execution(store, "x1").executor == "runner.old"
    assert get_execution(store, "x2").executor == "runner.new"
    assert get_execution(store, "y1").executor == "", "a binding without executor"
    assert get_execution(store, "z1").executor == "runner.z"
    # Only the latest attempt sets the Work's executor, so queries by executor see it.
    assert get_work(store, "a1").latest_executor == "runner.new"
    query = WorkQuery(executor="runner.new")
    assert [w.id for w in tx(store, lambda t: t.query_works(query))] == ["a1"]
    revision = get_execution(store, "x2").revision
    assert tx(store, backfill_executors) == 0, "a second run changed something"
    assert get_execution(store, "x2").revision == revision


def test_executor_backfill_restricted_to_given_attempts(store: Store) -> None:
    tx(store, seed_attempts)
    assert tx(store, lambda t: backfill_executors(t, execution_ids=["x1", "y1"])) == 1
    assert get_execution(store, "x2").executor == ""
    # x1 is not the latest attempt: its Work's executor stays as it was.
    assert get_work(store, "a1").latest_executor == ""


def test_run_backfills_in_small_batches(store: Store) -> None:
    tx(store, seed_events)
    tx(store, seed_attempts)
    lines: list[str] = []
    report = run_backfills(store, batch=2, progress=lines.append)
    assert (report.event_scopes, report.executors) == (4, 2)
    # 7 unscoped Events in pages of 2; the 2 candidate attempts join the first page.
    assert report.transactions == 4
    assert lines[0].endswith("executors: 2 filled of 2 candidates so far")
    last = tx(store, lambda t: t.event("ghost-named").sequence)  # the last without scope
    assert lines[-1] == (
        f"event scopes: 4 filled (through sequence {last}); "
        "executors: 2 filled of 2 candidates so far"
    )
    again = run_backfills(store, batch=2)
    assert (again.event_scopes, again.executors) == (0, 0)


def test_run_backfills_refuses_a_nonpositive_batch(store: Store) -> None:
    with pytest.raises(ValueError, match="positive"):
        run_backfills(store, batch=0)


@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_the_backfill_command_prints_its_counts() -> None:
    from storage.orm import OrmStore

    store = OrmStore()
    tx(store, seed_events)
    tx(store, seed_attempts)
    out = io.StringIO()
    call_command("backfill", "--batch", "3", stdout=out, stderr=io.StringIO())
    assert out.getvalue().strip() == (
        "event scopes filled: 4; attempt executors filled: 2 (3 transactions)"
    )
    out = io.StringIO()
    call_command("backfill", stdout=out)
    assert out.getvalue().strip() == (
        "event scopes filled: 0; attempt executors filled: 0 (1 transactions)"
    )


def test_a_small_database_is_backfilled_in_one_transaction(store: Store) -> None:
    tx(store, seed_events)
    tx(store, seed_attempts)
    report = run_backfills(store)
    assert (report.event_scopes, report.executors, report.transactions) == (4, 2, 1)


def test_an_up_to_date_store_is_backfilled_without_a_transaction(store: Store) -> None:
    """Startup on a store with nothing to fill costs one read: no commit, so neither
    the store version nor the clock's high-water mark moves."""
    tx(store, lambda t: t.put_work(make_work("w1")))
    before = tx(store, lambda t: t.store_version())
    report = run_backfills(store)
    assert (report.event_scopes, report.executors, report.transactions) == (0, 0, 0)
    assert tx(store, lambda t: t.store_version()) == before


def test_the_candidates_are_the_attempts_without_an_executor_in_id_order(store: Store) -> None:
    tx(store, seed_attempts)

    def ids(after: str = "", limit: int = 0) -> list[str]:
        return [x.id for x in tx(store, lambda t: t.executions_without_executor(after, limit))]

    assert ids() == ["x1", "x2", "y1"]  # z1 has its executor
    assert ids(after="x1") == ["x2", "y1"]
    assert ids(after="x2", limit=5) == ["y1"]
    assert ids(limit=2) == ["x1", "x2"]
    assert ids(after="y1") == []
    with pytest.raises(Invalid):
        tx(store, lambda t: t.executions_without_executor(limit=-1))


def test_run_backfills_reads_its_candidates_a_page_at_a_time(store: Store) -> None:
    """A page of one: x1 and x2 filled one transaction each, y1 (a binding without an
    executor) read and passed over without a transaction."""
    tx(store, seed_attempts)
    lines: list[str] = []
    report = run_backfills(store, batch=1, progress=lines.append)
    assert (report.event_scopes, report.executors, report.transactions) == (0, 2, 2)
    assert [x.id for x in tx(store, lambda t: t.executions_without_executor())] == ["y1"]
    assert lines[-1].endswith("executors: 2 filled of 2 candidates so far")

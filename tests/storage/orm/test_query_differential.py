"""Q-13: ``query_works``, ``count_works`` and ``work_facets`` on SQLite equal
``storage.select_works`` / ``select_facets`` over a plain list of the same Work, for
randomised data sets (with time ties) and randomised queries (their selection by
states, Scope and kind alone too, which the tally answers, from its margins when by
states alone, and that selection bounded in time, by ``until`` alone from the tally
less the Work updated since; the tally itself, margins included, equals its full
count, ``meaning.tally.count``); so do the dashboard's
``work_series`` and ``exhausted_works`` their meaning in ``storage.meaning.series``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage import (
    Buckets,
    CorrelationKey,
    Event,
    Execution,
    ExecutionState,
    Guard,
    Outcome,
    OutcomeKind,
    Scope,
    Timer,
    Tx,
    Work,
    WorkKey,
    WorkOrder,
    WorkQuery,
    WorkState,
    select_facets,
    select_works,
)
from storage.meaning import tally
from storage.meaning.series import select_exhausted, work_series
from storage.meaning.triage import failure_key, select_error_groups
from storage.orm import OrmStore

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

T0 = 1_767_225_600_000_000_001
# Ten 1 µs buckets over every creation and update instant, edges on them too.
AXIS = Buckets(T0, 1_000, 10)
SCOPES = ["", "acme", "globex"]
KINDS = ["billing.charge", "deploy.service", "report.nightly"]
SOURCES = ["", "github.acme", "stripe.acct"]  # "" = no key, so source is the kind
EXECUTORS = ["", "shell", "python"]
PATHS = {  # how to reach each state from ready
    WorkState.READY: [],
    WorkState.RUNNING: [WorkState.RUNNING],
    WorkState.WAITING: [WorkState.RUNNING, WorkState.WAITING],
    WorkState.COMPLETED: [WorkState.RUNNING, WorkState.COMPLETED],
    WorkState.FAILED: [WorkState.FAILED],
    WorkState.CANCELLED: [WorkState.CANCELLED],
}

work_spec = st.fixed_dictionaries(
    {
        "tick": st.integers(0, 4),  # few ticks: many equal creation times
        "scope": st.sampled_from(SCOPES),
        "kind": st.sampled_from(KINDS),
        "source": st.sampled_from(SOURCES),
        "executor": st.sampled_from(EXECUTORS),
        "state": st.sampled_from(list(WorkState)),
        "child": st.booleans(),
        "touch": st.integers(0, 3),
        "ended": st.booleans(),  # the attempt ends: no live attempt left
        # How it ends: cancelled (None) or failed with this message (its error group).
        "failure": st.sampled_from([None, "disk 1 full", "disk 22 full", "timeout"]),
        "timer": st.booleans(),  # a Timer serves the Work
    }
)


def _query(draw: Any) -> WorkQuery:
    return WorkQuery(
        states=frozenset(draw(st.sets(st.sampled_from(list(WorkState)), max_size=3))),
        scope_id=draw(st.sampled_from(SCOPES)),
        kind=draw(st.sampled_from(["", *KINDS])),
        parent_id=draw(st.sampled_from(["", "w000", "w001"])),
        sources=frozenset(draw(st.sets(st.sampled_from([*SOURCES[1:], *KINDS]), max_size=2))),
        executor=draw(st.sampled_from(EXECUTORS)),
        updated_since=draw(st.sampled_from([None, T0, T0 + 2_000, T0 + 10_000])),
        scope_ids=frozenset(draw(st.sets(st.sampled_from(SCOPES), max_size=2))),
        updated_before=draw(st.sampled_from([None, T0 + 1_000, T0 + 6_000, T0 + 9_000])),
        exhausted=draw(st.booleans()),
        error_group=draw(st.sampled_from(["", "disk <n> full", "timeout"])),
        order=draw(st.sampled_from(list(WorkOrder))),
        limit=draw(st.sampled_from([0, 1, 3, 7])),
    )


queries = st.composite(lambda draw: _query(draw))()


def _build(store: OrmStore, specs: list[dict[str, Any]]) -> None:
    """Create the Work through the API: one transaction per tick (ties), then state
    changes and attempts at later, also-tied instants (updated_at ties)."""
    store.transact(
        Guard(clock=lambda: T0 - 1),
        lambda tx: [tx.put_scope(Scope(id=s)) for s in SCOPES if s],
    )
    for tick in range(5):

        def create(tx: Tx, tick: int = tick) -> None:
            for i, spec in enumerate(specs):
                if spec["tick"] != tick:
                    continue
                keys = (CorrelationKey(spec["source"], f"k{i}"),) if spec["source"] else ()
                parent = "w000" if spec["child"] and i > 0 and specs[0]["tick"] <= tick else ""
                if parent and i == 0:
                    parent = ""
                tx.put_work(
                    Work(
                        id=f"w{i:03d}",
                        kind=spec["kind"],
                        scope_id=spec["scope"],
                        parent_id=parent if tx_has(tx, parent) else "",
                        keys=keys,
                    )
                )

        store.transact(Guard(clock=lambda tick=tick: T0 + tick * 1000), create)

    for i, spec in enumerate(specs):

        def evolve(tx: Tx, i: int = i, spec: dict[str, Any] = spec) -> None:
            work = tx.work(f"w{i:03d}")
            if spec["executor"]:
                x = tx.put_execution(
                    Execution(id=f"x{i:03d}", work_id=work.id, attempt=1, executor=spec["executor"])
                )
                if spec["ended"] and spec["failure"]:
                    # Only a running attempt fails; its Work goes back to ready first.
                    x = tx.claim(x.id, "runner", tx.now + 1_000)
                    failed = Outcome(OutcomeKind.FAILED, spec["failure"])
                    tx.put_execution(replace(x, state=ExecutionState.FAILED, outcome=failed))
                    tx.put_work(replace(tx.work(work.id), state=WorkState.READY))
                elif spec["ended"]:
                    tx.put_execution(replace(x, state=ExecutionState.CANCELLED))
                work = tx.work(work.id)
            if spec["timer"]:
                template = Event(f"t{i:03d}-fire", "core.timer", f"t{i:03d}", "timer.fired")
                tx.put_timer(Timer(f"t{i:03d}", tx.now, template, work_id=work.id))
            for state in PATHS[spec["state"]]:
                work = tx.put_work(replace(work, state=state))

        at = T0 + 5_000 + spec["touch"] * 1000
        store.transact(Guard(clock=lambda at=at: at), evolve)


def inputs(tx: Tx) -> tuple[list[Work], list[Execution], list[Timer]]:
    return tx.works(), tx.executions(), tx.timers()


def tx_has(tx: Tx, work_id: str) -> bool:
    if not work_id:
        return False
    try:
        tx.work(work_id)
    except Exception:
        return False
    return True


def _walk(tx: Tx, query: WorkQuery) -> list[str]:
    """Every page of ``query`` (limit as page size) by keyset cursor."""
    seen: list[str] = []
    after: WorkKey | None = None
    while True:
        page = tx.query_works(replace(query, after=after, limit=query.limit or 3))
        if not page:
            return seen
        seen += [w.id for w in page]
        after = query.key_of(page[-1])


@pytest.mark.slow  # 60 examples of up to 25 Work and 8 queries: minutes on a busy CI
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(specs=st.lists(work_spec, min_size=1, max_size=25), qs=st.lists(queries, max_size=8))
def test_sqlite_queries_equal_select_works(
    specs: list[dict[str, Any]], qs: list[WorkQuery]
) -> None:
    call_command("flush", "--noinput", verbosity=0)
    store = OrmStore()
    _build(store, specs)

    def check(tx: Tx) -> None:
        everything = tx.works()
        for query in qs:
            expected = select_works(query, everything)
            assert [w.id for w in tx.query_works(query)] == [w.id for w in expected], query
            unpaged = replace(query, limit=0)
            assert tx.count_works(query) == len(select_works(unpaged, everything)), query
            assert tx.work_facets(query) == select_facets(query, everything), query
            walked = _walk(tx, query)
            assert walked == [w.id for w in select_works(unpaged, everything)], query
            assert tx.work_series(query, AXIS) == work_series(query, AXIS, everything), query
            exhausted = select_exhausted(query, *inputs(tx))
            assert tx.exhausted_works(query) == exhausted, query
            assert tx.count_exhausted(query) == len(select_exhausted(unpaged, *inputs(tx))), query
            assert tx.error_groups(query) == select_error_groups(query, everything), query
            # The same selection by its tally keys alone: answered from the tally.
            keyed = WorkQuery(
                states=query.states,
                scope_id=query.scope_id,
                scope_ids=query.scope_ids,
                kind=query.kind,
            )
            assert tx.work_facets(keyed) == select_facets(keyed, everything), keyed
            assert tx.count_works(keyed) == len(select_works(keyed, everything)), keyed
            # Its exhausted Work (the exhausted list): from their own tally rows.
            dead = replace(keyed, exhausted=True)
            assert tx.work_facets(dead) == select_facets(dead, everything), dead
            assert tx.count_works(dead) == len(select_works(dead, everything)), dead
            # Bounded in time: by ``until`` alone, the tally less the Work updated
            # since (``tally.complements``); by ``since`` or both, the rows directly.
            until = query.updated_before if query.updated_before is not None else T0 + 6_000
            for bounded in (
                replace(keyed, updated_before=until),
                replace(dead, updated_before=until),
                replace(keyed, updated_since=query.updated_since, updated_before=until),
                replace(keyed, updated_since=query.updated_since),
            ):
                selected = select_works(bounded, everything)
                assert tx.work_facets(bounded) == select_facets(bounded, everything), bounded
                assert tx.count_works(bounded) == len(selected), bounded
                exhausted = sum(w.exhausted for w in selected)
                assert tx.count_exhausted(bounded) == exhausted, bounded
        # The marks kept at commit equal their recomputation from attempts and Timers.
        recomputed = select_exhausted(WorkQuery(order=WorkOrder.CREATED_ASC), *inputs(tx))
        assert [
            w.id
            for w in select_works(WorkQuery(order=WorkOrder.CREATED_ASC), everything)
            if w.exhausted
        ] == [w.id for w in recomputed]
        latest = {x.work_id: x for x in sorted(tx.executions(), key=lambda x: x.attempt)}
        assert {w.id: w.error_group for w in everything} == {
            w.id: failure_key(latest.get(w.id)) for w in everything
        }

    store.view(check)
    # The committed tally rows are the full count of the stored Work (zero rows aside).
    with connection.cursor() as cursor:
        cursor.execute("SELECT state, scope_id, kind, dimension, value, n FROM conduit_work_tally")
        rows = {tuple(row[:5]): row[5] for row in cursor.fetchall() if row[5]}
    assert rows == tally.count(store.view(lambda tx: tx.works()))

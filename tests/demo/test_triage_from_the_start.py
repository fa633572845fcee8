"""The demo's triage loop from the first minute: a fresh `make run` has retry-exhausted
Work sharing one error within a minute, and a long one keeps the exhausted pile at
``catalog.EXHAUSTED_PILE`` (a simulated teammate cancels the longest stuck, recorded as
operators' actions are)."""

from __future__ import annotations

import json

import pytest

from demo import catalog
from demo.runtime import Simulator
from storage import WorkQuery, view
from storage.default import default_artifacts, default_store
from storage.ops.manual import MANUAL_SOURCE
from tests.console import factories as f
from tests.demo.invariants import problems

db = pytest.mark.django_db(transaction=True, databases=["default", "view"])

RATE = 2.0  # make run's rate (simulate's default): a tick is half a simulated second


def _run(sim: Simulator, simulated_seconds: float) -> None:
    for _ in range(int(simulated_seconds * RATE)):
        sim.tick()


def _poisoned(tx):
    """The exhausted Work opened by a poisoned refund, with its attempts' errors."""
    out = {}
    for w in tx.exhausted_works(WorkQuery(kind=catalog.POISON_KIND)):
        if w.context and json.loads(w.context.data).get("poison"):
            out[w.id] = [x.outcome.message for x in tx.executions(w.id) if x.outcome]
    return out


@db
def test_a_fresh_store_has_exhausted_work_sharing_one_error_within_a_minute():
    store = default_store()
    sim = Simulator(store, default_artifacts(), seed=1, rate=RATE)
    _run(sim, 60)

    poisoned = view(store, None, _poisoned)
    assert len(poisoned) == catalog.POISON_AT_START
    for messages in poisoned.values():
        assert len(messages) == catalog.MAX_FAILURES
        assert len(set(messages)) == 1  # the same error on every attempt
        assert messages[0].startswith("refund rejected by stripe: amount -")
    # Each names its own refund and request, as real errors do: an error group must
    # see past the IDs and numbers to gather them.
    assert len({m[0] for m in poisoned.values()}) == catalog.POISON_AT_START
    assert problems(store) == []


@db
def test_a_second_simulator_on_the_same_store_sends_no_more_poison():
    store = default_store()
    _run(Simulator(store, default_artifacts(), seed=1, rate=RATE), 60)
    _run(Simulator(store, default_artifacts(), seed=2, rate=RATE), 60)
    assert len(view(store, None, _poisoned)) == catalog.POISON_AT_START


@db
def test_the_teammate_keeps_the_exhausted_pile_at_its_size():
    extra = 5
    stuck = [f"stuck-{i:02d}" for i in range(catalog.EXHAUSTED_PILE + extra)]
    for work_id in stuck:  # the longest stuck first
        f.exhausted(work_id)
    store = default_store()
    sim = Simulator(store, default_artifacts(), seed=1, rate=RATE)
    for _ in range(catalog.TIDY_EVERY_TICKS):
        sim.tick()

    def state(tx):
        works = {w: tx.work(w) for w in stuck}
        audits = [
            e for w in stuck[:extra] for e in tx.work_events(w) if e.event.source == MANUAL_SOURCE
        ]
        return works, audits, tx.count_exhausted(WorkQuery())

    works, audits, exhausted = view(store, None, state)
    assert sim.stats["tidied"] == extra
    assert [works[w].state.value for w in stuck[:extra]] == ["cancelled"] * extra
    assert all(works[w].state.value == "ready" for w in stuck[extra:])
    assert exhausted <= catalog.EXHAUSTED_PILE
    assert {(e.event.actor, e.route.disposition if e.route else "") for e in audits} == {
        (f"operator:{catalog.TEAMMATE}", "routed")
    }
    reason = json.loads(audits[0].event.payload.data)["reason"]
    assert str(catalog.EXHAUSTED_PILE) in reason
    # Within its pile the teammate does nothing.
    for _ in range(catalog.TIDY_EVERY_TICKS):
        sim.tick()
    assert sim.stats["tidied"] == extra
    assert problems(store) == []

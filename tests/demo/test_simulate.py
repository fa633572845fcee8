import hashlib
import io
from collections import Counter

import pytest
from django.core.management import call_command

from demo.graphruns import GraphRunner
from demo.graphs import PROVIDES
from demo.runtime import Simulator
from storage import ExecutionState, Guard, WorkState, view
from storage.artifacts import FileArtifactStore
from storage.default import default_artifacts, default_store
from storage.memory import MemoryStore
from storage.ops.control import cancel_work, retry_work
from storage.ops.run_record_sessions import MemoryRunStore
from storage.run_records import (
    AttemptState,
    NodeReason,
    RunQuery,
    Terminal,
    ValueState,
)
from storage.run_records.validate import validate_run
from tests.demo.invariants import problems
from tests.demo.support import census

db = pytest.mark.django_db(transaction=True, databases=["default", "view"])

SEED = 3
TICKS = 100
# Four simulated seconds a tick: enough time for waits to time out three times.
RATE = 0.25
# Kinds whose attempts never park: an epoch above 1 on one of them can only come from
# recovering an expired lease.
NEVER_PARK = {"billing.refund", "deploy.step", "report.nightly", "ingest.batch"}


def simulate(**options):
    # Routed runs have their own tests (test_routed_*); these are about the contract's
    # records, and a supervisor beside them would only make each run slower.
    out = io.StringIO()
    call_command("simulate", stdout=out, no_routed=True, **options)
    return out.getvalue()


def totals(output: str) -> dict[str, int]:
    """The counters of the command's last line: "simulate: ... k=v k=v"."""
    line = output.strip().splitlines()[-1]
    return {k: int(v) for k, v in (item.split("=") for item in line.rsplit(": ", 1)[1].split())}


@db
def test_simulate_once_produces_every_record_and_state_the_console_shows():
    output = simulate(once=TICKS, seed=SEED, rate=RATE)
    store = default_store()

    seen = census(store)
    assert set(seen.works) >= {"ready", "running", "waiting", "completed", "failed"}
    assert set(seen.attempts) >= {
        "pending",
        "running",
        "parked",
        "waiting",
        "completed",
        "failed",
        "handoff",
    }
    assert set(seen.waits) >= {"active", "woken", "cancelled"}
    # A retry timer lives for seconds between a failure and the next attempt, so
    # whether one is pending at the last tick depends on the seed's exact history: the
    # retries' firing is counted below instead.
    assert set(seen.timers) >= {"timeout", "schedule"}
    assert set(seen.dispositions) >= {"routed", "dropped", "unmatched"}
    assert seen.derived > 10
    assert seen.children > 5
    assert seen.unscoped == 0  # every acceptance recorded its Scope
    counters = totals(output)
    assert counters["duplicates"] > 0
    assert counters["exhausted"] > 0
    assert counters["fired_retry"] > 0
    assert counters["recovered"] > 0
    assert counters["fired_schedule"] > 0
    assert view(store, None, recovered_attempts)
    assert_artifacts_open(store)
    assert_graph_runs(store, counters)
    assert problems(store) == []


def recovered_attempts(tx):
    """Attempts with an epoch above 1 of kinds that never park: only recovering an
    expired lease raises those."""
    kinds = {w.id: w.kind for w in tx.works()}
    return [x for x in tx.executions() if x.epoch >= 2 and kinds[x.work_id] in NEVER_PARK]


def assert_artifacts_open(store):
    refs = view(store, None, lambda tx: [r for x in tx.executions() for r in x.artifacts])
    assert {r.media_type for r in refs} == {"text/plain", "application/json"}
    for ref in refs[:20]:
        with default_artifacts().open(ref) as f:
            data = f.read()
        assert len(data) == ref.size
        assert hashlib.sha256(data).hexdigest() == ref.sha256


def exhausted_works(tx):
    return [
        w.id
        for w in tx.live_works()
        if w.state is WorkState.READY and not tx.live_executions(w.id) and not tx.timers(w.id)
    ]


@db
def test_it_honours_an_operator_cancel_and_an_operator_retry():
    store = default_store()
    sim = Simulator(store, default_artifacts(), seed=SEED, rate=RATE)
    for _ in range(TICKS):
        sim.tick()
    held = next(iter(sim.workers.values()))
    exhausted = view(store, None, exhausted_works)[0]

    result = store.transact(Guard(), lambda tx: cancel_work(tx, held.work_id))
    retry = store.transact(Guard(), lambda tx: retry_work(tx, exhausted, "operator-retry-1"))
    assert result.cancelled_attempt == held.execution_id
    assert retry.state is ExecutionState.PENDING
    held.next_at = 0  # due now: its next write must be fenced
    for _ in range(4):
        sim.tick()

    assert held.execution_id not in sim.workers
    assert sim.stats["fenced"] >= 1

    def after(tx):
        return tx.work(held.work_id), tx.execution(held.execution_id), tx.execution(retry.id)

    work, attempt, retried = view(store, None, after)
    assert work.state is WorkState.CANCELLED
    assert attempt.state is ExecutionState.CANCELLED
    assert retried.state is not ExecutionState.PENDING  # claimed by the simulator
    assert retried.epoch >= 1
    assert problems(store) == []


@db
def test_the_same_seed_gives_the_same_history_on_any_fresh_store(tmp_path):
    simulate(once=40, seed=SEED, rate=RATE)
    on_sqlite = census(default_store())

    def in_memory(seed, ticks):
        # The store's own clock is the host's: the simulator's Sessions must save on
        # its fake clock (Simulator._run_store), or the digests part.
        store = MemoryStore()
        sim = Simulator(store, FileArtifactStore(tmp_path / f"mem{seed}"), seed=seed, rate=RATE)
        for _ in range(ticks):
            sim.tick()
        return census(store)

    assert in_memory(SEED, 40).digest == on_sqlite.digest
    assert in_memory(SEED + 1, 3).digest != in_memory(SEED, 3).digest


@db
def test_a_second_run_on_the_same_store_never_reuses_an_id():
    simulate(once=10, seed=SEED, rate=RATE)
    first = census(default_store())

    simulate(once=10, seed=SEED, rate=RATE)

    second = census(default_store())
    assert second.events > first.events
    assert sum(second.works.values()) > sum(first.works.values())
    assert problems(default_store()) == []


def graph_runs(store):
    return view(store, None, lambda tx: tx.run_records(RunQuery(limit=0)))


def assert_graph_runs(store, counters):
    """Every kind of run record the console's run page draws, each one valid."""
    runs = [s.record for s in graph_runs(store)]
    assert {r.run_id.split("/")[0] for r in runs} == {"checkout", "payment", "feed"}
    assert counters["run_busy"] > 0  # a slow worker's Session made a step skip
    assert counters["runs_completed"] > 0
    for record in runs:
        assert validate_run(record, PROVIDES) == [], record.run_id
    nodes = [n for r in runs for s in r.scopes.values() for n in s.nodes.values()]
    values = [v for n in nodes for v in n.outputs]
    assert {v.state for v in values} == {ValueState.READY, ValueState.SKIPPED}
    assert any(v.state is ValueState.READY and v.data == b"" for v in values)
    assert any(n.reason is NodeReason.SKIPPED for n in nodes)
    assert any(len(r.scopes) > 1 for r in runs)  # a child graph under its node's attempt
    assert any(v.stream and v.stream.terminal is Terminal.COMPLETED for v in values)
    # Retry: failed inner attempts, then the node's root attempt confirmed.
    retried = [
        r
        for r in runs
        if any(a.boundary and a.state is AttemptState.FAILED for a in r.attempts.values())
    ]
    assert any(
        a.state is AttemptState.CONFIRMED and a.node_id == "charge" and not a.boundary
        for r in retried
        for a in r.attempts.values()
    )
    feeds = [r for r in runs if r.streams]
    assert feeds
    assert all(r.managed for r in feeds)
    messages = [m for r in feeds for m in r.messages.values()]
    assert any(m.state is AttemptState.FAILED for m in messages)
    assert any(m.index == 2 and m.state is AttemptState.CONFIRMED for m in messages)


def test_graph_runs_acknowledge_stream_messages_sparsely_over_time():
    store = MemoryStore()
    stats = Counter()
    runner = GraphRunner(MemoryRunStore(store), SEED, 1, stats)
    sparse = []
    for tick in range(1, TICKS + 1):
        runner.tick(tick)
        # Acknowledgements above the frontier come and go: look after every tick.
        for stored in graph_runs(store):
            for stream in stored.record.streams.values():
                if any(p.acked for p in stream.pending):
                    sparse.append((stream.acked_through, stream.pending))
                    assert validate_run(stored.record, PROVIDES) == []
    runner.close()

    assert sparse
    assert stats["run_saves"] > 50

"""The simulated routed-run supervisor, observed through the routed-run store: each
behaviour of issue 18's "Simulated supervisor" on a memory store and a test clock,
one workflow at a time (``Supervisor.advance``) or a few ticks (``tick``)."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from demo.routed import catalog, worker
from demo.routed.reading import RECOVERED
from demo.routed.supervisor import Supervisor
from storage.memory import MemoryStore
from storage.routed.enums import (
    AttemptStatus,
    AuthorityScope,
    ControlCommand,
    FailureReason,
    RunStatus,
    WorkflowStatus,
)
from storage.routed.envelope import consumed_ms
from storage.routed.errors import JournalInvalid, LeaseFenced, SizeCapExceeded, SymlinkRejected
from storage.routed.ids import LimitAmendmentID
from storage.routed.journal import TAIL_FILE, open_control_journal
from storage.routed.records import LimitAmendment
from storage.routed.store import RoutedStore
from tests.demo.routed_support import (
    Clock,
    admit,
    census,
    control,
    drive,
    request_for,
    supervisor,
)


def running_attempt(sup, workflow_id):
    attempts = [
        a.record
        for run in sup.routed.view(lambda r: r.list_runs(workflow_id))
        for a in sup.routed.view(lambda r, run=run: r.list_attempts(run.record.run_id))
        if a.record.status is AttemptStatus.RUNNING
    ]
    assert len(attempts) == 1, attempts
    return attempts[0]


def test_the_same_seed_leaves_the_same_routed_records(tmp_path):
    seen = []
    for n in (1, 2):
        sup, clock = supervisor(tmp_path / str(n), seed=4)
        # 75 simulated seconds: the tight ceilings are minutes now (their workflows
        # stay live that long), so the first successes come a little later.
        for _ in range(150):
            sup.tick(clock.advance(500_000_000))
        seen.append(census(sup.routed))
    assert seen[0] == seen[1]
    statuses = {w[2] for w in seen[0]}
    assert len(seen[0]) >= catalog.BURST
    assert {"RUNNING", "SUCCEEDED"} <= statuses, statuses


def test_a_pause_waits_for_the_step_boundary_and_freezes_the_envelope(tmp_path):
    sup, clock = supervisor(tmp_path)
    wf_id = admit(sup, request_for("succeed"))
    drive(sup, clock, wf_id, lambda done: done == "step")
    held = running_attempt(sup, wf_id)

    outcome = control(sup.routed, wf_id, ControlCommand.PAUSE)
    assert outcome.result.applied
    # Asked, not reached: the attempt is mid-step and still runs under its lease.
    assert (
        sup.routed.view(lambda r: r.get_workflow(wf_id)).record.status
        is WorkflowStatus.PAUSE_REQUESTED
    )
    assert running_attempt(sup, wf_id).attempt_id == held.attempt_id

    assert sup.advance(wf_id, clock.advance()) == "paused"
    assert sup.routed.view(lambda r: r.get_workflow(wf_id)).record.status is WorkflowStatus.PAUSED
    assert (
        sup.routed.view(lambda r: r.get_attempt(held.attempt_id)).record.status
        is AttemptStatus.NEEDS_REPLAN
    )
    frozen = sup.routed.view(lambda r: r.get_time_envelope(wf_id)).record
    assert frozen.running_segment_start_ms is None
    later = clock.advance(60_000_000_000) // 1_000_000
    assert sup.advance(wf_id, clock.now) == "waiting"
    assert consumed_ms(
        sup.routed.view(lambda r: r.get_time_envelope(wf_id)).record, later
    ) == consumed_ms(frozen, later)

    control(sup.routed, wf_id, ControlCommand.RESUME)
    assert sup.advance(wf_id, clock.advance()) == "claimed"  # the same attempt, again
    assert running_attempt(sup, wf_id).attempt_id == held.attempt_id
    drive(sup, clock, wf_id, lambda done: done == "succeeded")


def test_a_cancel_fences_the_workers_attempt(tmp_path):
    sup, clock = supervisor(tmp_path)
    wf_id = admit(sup, request_for("succeed", ref="ingest"))
    drive(sup, clock, wf_id, lambda done: done == "step")
    held = running_attempt(sup, wf_id)
    assert held.lease is not None

    control(sup.routed, wf_id, ControlCommand.CANCEL)
    assert (
        sup.routed.view(lambda r: r.get_attempt(held.attempt_id)).record.status
        is AttemptStatus.CANCELLED
    )

    assert sup.advance(wf_id, clock.advance()) == "ended"
    assert sup.stats["routed_fenced"] == 1
    with pytest.raises(LeaseFenced):
        sup.routed.transact(
            lambda r: r.renew_lease(held.attempt_id, held.lease.lease_id, catalog.LEASE_MS)
        )
    # The pipeline's MCP service, left STOPPING by the cancel, is stopped.
    assert {s.record.status.name for s in sup.routed.view(lambda r: r.list_services(wf_id))} == {
        "STOPPED"
    }


def test_a_restart_through_the_alias_records_its_provenance_and_runs(tmp_path):
    sup, clock = supervisor(tmp_path)
    wf_id = admit(sup, request_for("fail"))
    drive(sup, clock, wf_id, lambda done: done == "failed")
    assert (
        sup.routed.view(lambda r: r.get_workflow(wf_id)).record.terminal_reason
        is FailureReason.AGENT_EXCEPTION
    )

    outcome = control(sup.routed, wf_id, ControlCommand.RESTART, target_deployment_ref="summarise")
    new_id = outcome.result.new_workflow_id
    provenance = sup.routed.view(lambda r: r.get_restart_provenance(new_id))
    assert provenance.source_workflow_id == wf_id
    # Through the alias: its current target (1.1.0), not the source's exact 1.0.0 ...
    assert (
        sup.routed.view(lambda r: r.get_workflow(new_id)).record.deployment_id
        == catalog.PACKAGES[1].deployment_id
    )
    # ... and it runs clean.
    drive(sup, clock, new_id, lambda done: done == "succeeded")


def test_a_plan_that_no_longer_fits_waits_in_needs_replan_for_a_continue(tmp_path):
    sup, clock = supervisor(tmp_path)
    wf_id = admit(sup, request_for("operator"))
    drive(sup, clock, wf_id, lambda done: done == "needs replan")
    assert (
        sup.routed.view(lambda r: r.get_workflow(wf_id)).record.status
        is WorkflowStatus.NEEDS_REPLAN
    )
    # Reached through a pause of the supervisor's own, so the envelope is frozen.
    assert [
        c.actor_identity for c in sup.routed.view(lambda r: r.list_control_requests(wf_id))
    ] == ["supervisor:sim"]
    assert (
        sup.routed.view(lambda r: r.get_time_envelope(wf_id)).record.running_segment_start_ms
        is None
    )
    assert sup.advance(wf_id, clock.advance()) == "waiting"

    outcome = control(sup.routed, wf_id, ControlCommand.CONTINUE)
    assert outcome.result.resume_checkpoint_id is not None
    assert sup.advance(wf_id, clock.advance()) == "claimed"
    assert running_attempt(sup, wf_id).attempt_number == 2
    assert {n.record.status.name for n in sup.routed.view(lambda r: r.list_nodes(wf_id))} == {
        "RUNNING"
    }
    drive(sup, clock, wf_id, lambda done: done == "succeeded")


def test_tight_ceilings_run_out_unless_an_operator_amends_them(tmp_path):
    sup, clock = supervisor(tmp_path)
    over = admit(sup, request_for("succeed", spend=catalog.TIGHT_SPEND))
    amended = admit(
        sup,
        dataclasses.replace(
            request_for("succeed", spend=catalog.TIGHT_SPEND), idempotency_key="amended"
        ),
    )
    expires = admit(
        sup,
        request_for("succeed", ref="ingest", spend=catalog.LONG_SPEND, active_ms=catalog.EXPIRE_MS),
    )
    wf = sup.routed.view(lambda r: r.get_workflow(amended)).record
    sup.routed.transact(
        lambda r: r.append_limit_amendment(
            amended,
            wf.authority_generation,
            LimitAmendment(
                amendment_id=LimitAmendmentID.new(),
                workflow_id=amended,
                expected_authority_generation=wf.authority_generation,
                reason="approved",
                actor_identity="operator:alice",
                idempotency_key="raise",
                new_max_llm_spend_decimal="9.00",
            ),
            AuthorityScope.AMEND_LIMITS,
        )
    )

    drive(sup, clock, over, lambda done: done == "budget_exceeded")
    drive(sup, clock, amended, lambda done: done == "succeeded")
    # Three minutes of active time, two simulated seconds an advance.
    drive(sup, clock, expires, lambda done: done == "expired", limit=200)
    assert (
        sup.routed.view(lambda r: r.get_workflow(over)).record.status
        is WorkflowStatus.BUDGET_EXCEEDED
    )
    assert sup.routed.view(lambda r: r.get_workflow(expires)).record.terminal_reason is (
        FailureReason.ACTIVE_TIME_EXHAUSTED
    )


def test_the_workspace_refuses_a_workers_symlink_and_oversized_file(tmp_path):
    sup, clock = supervisor(tmp_path)
    wf_id = admit(sup, request_for("succeed"))
    drive(sup, clock, wf_id, lambda done: done == "step")
    attempt = running_attempt(sup, wf_id)
    before = sup.routed.view(lambda r: r.list_artifacts(attempt.run_id))

    refused = worker.try_unsafe_artifacts(
        sup.routed, sup.state_root, attempt.run_id, attempt.attempt_id
    )

    assert [(rel, type(exc)) for rel, exc in refused] == [
        ("out/passwd.txt", SymlinkRejected),
        ("out/dump.bin", SizeCapExceeded),
    ]
    assert sup.routed.view(lambda r: r.list_artifacts(attempt.run_id)) == before
    assert sorted(
        p.name for p in (worker.workspace_root(sup.state_root, attempt.run_id) / "out").iterdir()
    ) == ["step-01.json"]


def test_a_replayed_request_gets_its_receipt_and_a_reused_key_is_refused(tmp_path, monkeypatch):
    # Every caller after the first resends a request or reuses its key.
    monkeypatch.setattr(catalog, "REPLAY_SHARE", 0.5)
    monkeypatch.setattr(catalog, "CONFLICT_SHARE", 0.5)
    sup, clock = supervisor(tmp_path, seed=6)
    for _ in range(3):
        sup.tick(clock.advance(500_000_000))
    assert sup.stats["routed_replayed"] >= 1
    assert sup.stats["routed_err_idempotencyconflict"] >= 1
    # Replays and conflicts created nothing: one receipt per admission.
    assert (
        len(sup.routed.view(lambda r: r.list_invocations()))
        == sup.stats["routed_admitted"] + sup.stats["routed_teammate_restart"]
    )
    first = sup.admissions.sent[0]
    replay = sup.routed.transact(lambda r: r.admit_invocation(first, 0))
    assert replay.outcome.name == "IDEMPOTENT_REPLAY"
    assert replay.receipt == sup.routed.view(
        lambda r: r.get_invocation_by_idempotency(first.caller_identity, first.idempotency_key)
    )


def test_live_workflows_stay_bounded_under_heavy_admission(tmp_path, monkeypatch):
    # Two callers a tick, thirteen times as many as in `make run`: the bound holds.
    monkeypatch.setattr(catalog, "ADMIT_MEAN", 2.0)
    sup, clock = supervisor(tmp_path, seed=5)
    peak = 0
    for _ in range(80):
        sup.tick(clock.advance(500_000_000))
        live = [
            w
            for w in sup.routed.view(lambda r: r.list_workflows())
            if w.record.status.name not in _TERMINAL
        ]
        peak = max(peak, len(live))
    assert peak == catalog.MAX_LIVE
    assert sup.stats["routed_succeeded"] >= 1  # workflows finish and make room


_TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED", "BUDGET_EXCEEDED"}


def test_a_restarted_supervisor_reconciles_and_recovers_interrupted_attempts(tmp_path):
    store = MemoryStore()
    sup, clock = supervisor(tmp_path, store=store)
    wf_id = admit(sup, request_for("succeed"))
    drive(sup, clock, wf_id, lambda done: done == "step")
    interrupted = running_attempt(sup, wf_id)

    again, clock2 = supervisor(tmp_path, store=store, run=2)  # a new process, same store

    record = again.routed.view(lambda r: r.get_attempt(interrupted.attempt_id)).record
    assert record.status is AttemptStatus.FAILED
    assert record.failure_reason is FailureReason.DAEMON_RESTARTED
    assert any(
        "reconciled: 1" in e.entry
        for e in again.routed.view(lambda r: r.list_ledger(interrupted.run_id))
    )
    clock2.now = clock.now
    assert again.advance(wf_id, clock2.advance()) == "claimed"
    assert running_attempt(again, wf_id).attempt_number == 2


def test_a_hung_worker_lets_its_lease_lapse_and_is_recovered_under_a_new_one(tmp_path):
    sup, clock = supervisor(tmp_path)
    wf_id = admit(sup, request_for("stall"))
    drive(sup, clock, wf_id, lambda done: done == "stalled")
    hung = running_attempt(sup, wf_id)
    assert sup.advance(wf_id, clock.advance()) == "waiting"  # its lease still runs

    clock.advance((catalog.LEASE_MS + catalog.RECOVER_AFTER_MS) * 1_000_000)
    assert sup.advance(wf_id, clock.advance()) == "recovered"
    again = running_attempt(sup, wf_id)
    assert again.attempt_id == hung.attempt_id
    assert again.lease.lease_id != hung.lease.lease_id
    assert RECOVERED in [e.entry for e in sup.routed.view(lambda r: r.list_ledger(hung.run_id))]
    drive(sup, clock, wf_id, lambda done: done == "succeeded")


def test_a_pause_of_a_hung_worker_finds_no_boundary_and_fails_the_run(tmp_path):
    sup, clock = supervisor(tmp_path)
    wf_id = admit(sup, request_for("stall"))
    drive(sup, clock, wf_id, lambda done: done == "stalled")

    control(sup.routed, wf_id, ControlCommand.PAUSE)
    assert sup.advance(wf_id, clock.advance()) == "no boundary"
    wf = sup.routed.view(lambda r: r.get_workflow(wf_id)).record
    assert wf.status is WorkflowStatus.FAILED
    assert wf.terminal_reason is FailureReason.PAUSE_BOUNDARY_UNAVAILABLE


def test_a_parent_fans_out_a_child_batch_and_ends_with_its_join(tmp_path):
    sup, clock = supervisor(tmp_path)
    wf_id = admit(sup, request_for("succeed", ref="fanout"))
    done = drive(sup, clock, wf_id, lambda did: did in ("succeeded", "failed"))
    assert "spawned" in done
    assert "joined" in done
    (batch,) = sup.routed.view(lambda r: r.list_child_batches(wf_id))
    results = sup.routed.view(lambda r: r.list_child_results(batch.record.child_batch_id))
    failed = [r for r in results if r.status is not RunStatus.SUCCEEDED]
    if failed:  # the plan's one failing child: the join fails the batch and the parent
        assert batch.record.status.name == "FAILED"
        assert sup.routed.view(lambda r: r.get_workflow(wf_id)).record.terminal_reason is (
            FailureReason.CHILD_BATCH_FAILED
        )
    else:
        assert batch.record.status.name == "SUCCEEDED"
        assert len(results) == len(batch.record.child_run_ids)
        assert done[-1] == "succeeded"


def test_a_tight_ceiling_is_minutes_near_for_a_while_and_an_amendment_saves_it(tmp_path):
    """Issue 33: the demo's ceilings are minutes. A tight one (3 min) has more work
    than it allows: its workflow is near its ceiling (the console's last 20%) for
    dozens of simulated seconds, time enough to amend it by hand, and amended it
    finishes instead of expiring; the far ceilings are minutes too."""
    assert catalog.EXPIRE_MS == 3 * catalog.MINUTE_MS
    assert all(ms >= 10 * catalog.MINUTE_MS for ms in catalog.REF_ACTIVE_MS.values())
    assert catalog.ceilings_for("", "fanout")[0] == 30 * catalog.MINUTE_MS
    sup, clock = supervisor(tmp_path)
    wf_id = admit(
        sup, request_for("succeed", spend=catalog.LONG_SPEND, active_ms=catalog.EXPIRE_MS)
    )

    def near() -> bool:
        return wf_id in sup.routed.view(lambda r: r.near_ceiling(0.8))

    drive(sup, clock, wf_id, lambda _done: near(), limit=200)
    for _ in range(15):  # still near thirty simulated seconds on: playable by hand
        sup.advance(wf_id, clock.advance())
        assert near()
    wf = sup.routed.view(lambda r: r.get_workflow(wf_id)).record
    sup.routed.transact(
        lambda r: r.append_limit_amendment(
            wf_id,
            wf.authority_generation,
            LimitAmendment(
                amendment_id=LimitAmendmentID.new(),
                workflow_id=wf_id,
                expected_authority_generation=wf.authority_generation,
                reason="almost there",
                actor_identity="operator:alice",
                idempotency_key="raise-active",
                new_max_active_duration_ms=30 * catalog.MINUTE_MS,
            ),
            AuthorityScope.AMEND_LIMITS,
        )
    )
    assert not near()
    drive(sup, clock, wf_id, lambda done: done == "succeeded", limit=300)
    assert (
        sup.routed.view(lambda r: r.get_workflow(wf_id)).record.status is WorkflowStatus.SUCCEEDED
    )


def test_the_first_start_of_this_release_anchors_the_journals_an_older_runtime_left(tmp_path):
    # The older runtime: its journals have no tail, and no anchoring is recorded.
    store, clock = MemoryStore(), Clock()
    routed = RoutedStore(store, clock=clock, monotonic=clock)
    old = Supervisor(routed, tmp_path / "routed", seed=1, run=1, stats=Counter(), clock=clock)
    catalog.ensure_catalog(routed)
    old.started = True  # its start is the older release's: nothing anchored
    wf_id = admit(old, request_for("succeed"))
    drive(old, clock, wf_id, lambda done: done == "step")
    held = running_attempt(old, wf_id)
    journal_dir = tmp_path / "routed" / "runs" / held.run_id / "control" / held.attempt_id
    (journal_dir / TAIL_FILE).unlink()

    def events() -> int:
        with open_control_journal(
            tmp_path / "routed", held.run_id, held.attempt_id, create=False
        ) as journal:
            return len(journal.read())

    with pytest.raises(JournalInvalid, match="no tail anchor"):
        events()
    assert routed.view(lambda r: r.journal_anchoring()) is None

    again, _clock2 = supervisor(tmp_path, store=store, run=2)  # this release starts
    assert events() > 1
    recorded = again.routed.view(lambda r: r.journal_anchoring())
    assert recorded is not None
    assert recorded.journals_anchored == 1

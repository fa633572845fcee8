"""``Supervisor``: the simulated routed-run supervisor of ``manage.py simulate``.

It drives routed runs only through the public routed-run store (``RoutedStore``: its
operations, ``transact``/``view``, the control journal, the progress tailer and the
artifact workspace), as a real supervisor beside the store would:

- admits invocations against the catalog's deployments and aliases, now and then
  resending an earlier request (the store replays its receipt) or reusing a key with
  another input, or asking a retired deployment or a full one (refused: logged);
- claims attempts under leases and renews them at every step; each step's output is
  accepted as an artifact and checkpointed through the attempt's journal;
- moves pipelines stage to stage through handoffs, and parent runs through a child
  batch and its join;
- honours the operators' control requests (``request_control``, made by the console or
  the simulated teammate): the store applies cancel, resume, restart, continue and
  amendments at once; a pause waits for the running attempt to reach its boundary
  (the end of its step), where the store pauses the workflow and freezes its envelope;
- lets a tight ceiling run out (active time: EXPIRED; spend: BUDGET_EXCEEDED);
- on start, reconciles what an earlier process left running (``reconcile_interrupted``)
  and recovers those runs with a new attempt.

Its state lives in the store: a workflow's plan derives from its receipt
(``catalog.plan_for``), its progress from its checkpoints, so a restarted supervisor
picks up any workflow where it stands. ``advance(workflow_id)`` moves one workflow to
its next boundary now (tests and browser journeys call it); ``tick(now)`` advances the
workflows that are due, bounded by ``catalog.MAX_LIVE``.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Protocol

from storage import Conflict, StorageError, Store
from storage.routed.anchoring import anchor_old_journals
from storage.routed.enums import (
    AttemptStatus,
    DataClassification,
    FailureReason,
    FailureScope,
    InvokeJobEventKind,
    NodeStatus,
    RecoveryDisposition,
    ResumeCapability,
    RunStatus,
    WorkflowStatus,
)
from storage.routed.envelope import active_time_remaining_ms
from storage.routed.errors import LeaseFenced
from storage.routed.ids import (
    AttemptID,
    ControlRequestID,
    HandoffID,
    LeaseID,
    RunID,
    WorkflowID,
)
from storage.routed.records import ArtifactRef, AttemptRecord, Nanos, Stored
from storage.routed.rules import RoutedRules, TransitionCommand
from storage.routed.store import RoutedStore
from storage.routed.transitions import is_terminal

from . import catalog, children, moves, worker
from .admission import Admissions
from .reading import HUNG, RECOVERED, Seen, overview, read
from .teammate import Teammate

log = logging.getLogger("demo.simulate")
NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
SCAN_EVERY = 10  # ticks between two full scans for workflows made elsewhere (restarts)


class Simulator(Protocol):
    """What ``for_simulator`` needs of ``demo.runtime.Simulator``."""

    store: Store
    seed: int
    run: int
    stats: Counter[str]
    virtual: Nanos
    fake_clock: bool
    routed_dir: Path | None
    routed: object

    def now(self) -> Nanos: ...


def for_simulator(sim: Simulator) -> Supervisor:
    """The supervisor of a simulator: over its store (or the routed store it was
    given) and on its clock, so a fake clock stamps routed writes too."""
    routed = sim.routed
    if not isinstance(routed, RoutedStore):
        virtual = (lambda: sim.virtual) if sim.fake_clock else None
        # Simulated time is both axes: wall for evidence, monotonic for durations.
        routed = RoutedStore(sim.store, clock=virtual, monotonic=virtual)
    root = sim.routed_dir or Path("routed")
    return Supervisor(routed, root, seed=sim.seed, run=sim.run, stats=sim.stats, clock=sim.now)


def standalone(seed: int = 1, run: int = 1) -> Supervisor:
    """A supervisor of this process's routed store and ``ROUTED_STATE_DIR`` on the
    host's clock, started: for tests and journeys that move one workflow at a time
    (``advance``) without a simulator around it. Its workers hold the leases of the
    attempts it claims, so a pause it is asked for reaches its boundary at the next
    ``advance``."""
    from django.conf import settings

    from storage.clock import wall_clock
    from storage.default import default_routed_store

    sup = Supervisor(
        default_routed_store(),
        Path(settings.ROUTED_STATE_DIR),
        seed=seed,
        run=run,
        stats=Counter(),
        clock=wall_clock,
    )
    sup.start()
    return sup


class Supervisor:
    def __init__(
        self,
        routed: RoutedStore,
        state_root: Path,
        *,
        seed: int,
        run: int,
        stats: Counter[str],
        clock: Callable[[], Nanos],
    ) -> None:
        self.routed = routed
        self.state_root = Path(state_root)
        self.seed, self.run = seed, run
        self.stats = stats
        self.clock = clock
        # Seeded pseudo-randomness is the point here: a simulation, not security.
        self.rng = random.Random(f"simulate/{seed}/{run}/routed")  # noqa: S311
        self.id_rng = random.Random(f"simulate/{seed}/{run}/routed-ids")  # noqa: S311
        self.ticks = 0
        self.started = False
        self.live: set[WorkflowID] = set()
        self.next_at: dict[WorkflowID, Nanos] = {}
        self.held: dict[AttemptID, LeaseID] = {}  # the leases our workers hold
        self.teammate = Teammate(routed, seed, run, stats, self.failed)
        self.admissions = Admissions(routed, seed, run, stats, self.rng, self.id_rng, self.failed)

    # -- ids ------------------------------------------------------------------------------
    def _hex(self) -> str:
        return f"{self.id_rng.getrandbits(128):032x}"

    def failed(self, what: str, exc: StorageError) -> None:
        """Every refusal ends here: counted and logged, never raised out of a tick."""
        self.stats[f"routed_err_{type(exc).__name__.lower()}"] += 1
        level = logging.INFO if isinstance(exc, Conflict) else logging.WARNING
        log.log(level, "routed %s: %s: %s", what, type(exc).__name__, exc)

    # -- start: the catalog, and what an earlier process left running ------------------
    def start(self) -> None:
        """Once, before the first tick: the catalog, and a reconciliation of the
        attempts an earlier process held (it is gone: nothing of ours runs yet)."""
        if self.started:
            return
        self.started = True
        # The first writer of this release: anchor the journals older writers left
        # (once per deployment; nothing after it was recorded: storage.routed.anchoring).
        anchored = anchor_old_journals(self.routed, self.state_root)
        if anchored.anchored or anchored.refused:
            log.info(
                "routed: anchored %d old journal(s), refused %d: %s",
                len(anchored.anchored),
                len(anchored.refused),
                anchored.refused,
            )
        catalog.ensure_catalog(self.routed)
        self._scan()
        for workflow_id in sorted(self.live):
            for run in self.routed.view(lambda r, w=workflow_id: r.list_runs(w)):
                run_id = run.record.run_id
                try:
                    # Look and reconcile in one transaction: no attempt starts between.
                    failed = self.routed.transact(lambda r, i=run_id: _reconcile_running(r, i))
                except StorageError as exc:
                    self.failed(f"reconcile {run_id}", exc)
                    continue
                if failed:
                    self.stats["routed_reconciled"] += len(failed)
                    log.info("routed: reconciled %d attempt(s) of %s", len(failed), run_id)

    def _scan(self) -> None:
        self.live = {
            w.record.workflow_id
            for w in self.routed.view(lambda r: r.list_workflows())
            if not is_terminal(w.record.status)
        }

    # -- the tick ---------------------------------------------------------------------------
    def tick(self, now: Nanos | None = None) -> None:
        """Admit, then advance every live workflow that is due (in a fixed order).
        A refusal of the store's ends the tick's routed work, logged; never raised."""
        now = self.clock() if now is None else now
        self.ticks += 1
        try:
            self._tick(now)
        except StorageError as exc:
            self.failed(f"tick {self.ticks}", exc)

    def _tick(self, now: Nanos) -> None:
        if self.ticks == 1:
            self.start()
        elif self.ticks % SCAN_EVERY == 0:
            self._scan()
        self.admissions.admit_some(self.ticks == 1, self.live)
        briefs = self.routed.view(lambda r: overview(r, self.live))
        self.live |= self.teammate.tick(self.ticks, now, briefs)
        for brief in briefs:
            workflow_id = brief.wf.record.workflow_id
            if self.next_at.get(workflow_id, 0) > now or workflow_id not in self.live:
                continue
            self.advance(workflow_id, now)
            low, high = catalog.STEP_SECONDS
            delay = int(self.rng.uniform(low, high) * NS_PER_S)
            if workflow_id in self.live:  # an ended one is forgotten (advance let it go)
                self.next_at[workflow_id] = now + delay

    # -- one workflow -----------------------------------------------------------------------
    def advance(self, workflow_id: WorkflowID, now: Nanos | None = None) -> str:
        """Move the workflow to its next boundary (a claim, a step, a stage done, a
        pause reached, an end); returns what it did. Refusals are logged."""
        now = self.clock() if now is None else now
        try:
            seen = self.routed.view(lambda r: read(r, workflow_id))
            done = self._advance(seen, now)
        except StorageError as exc:
            self.failed(f"advance {workflow_id}", exc)
            return "refused"
        except OSError as exc:  # the journal or workspace files (a full disk, a race)
            self.stats["routed_err_oserror"] += 1
            log.warning("routed advance %s: %s", workflow_id, exc)
            return "refused"
        if is_terminal(self.routed.view(lambda r: r.get_workflow(workflow_id)).record.status):
            self.live.discard(workflow_id)
            self.next_at.pop(workflow_id, None)
        self.stats[f"routed_{done.split(':')[0].replace(' ', '_')}"] += 1
        return done

    def _advance(self, seen: Seen, now: Nanos) -> str:
        status = seen.status
        if is_terminal(status):
            return self._after_end(seen, now)
        if status in (WorkflowStatus.PAUSED, WorkflowStatus.NEEDS_REPLAN):
            return "waiting"  # the operator's: resume or continue
        if active_time_remaining_ms(seen.envelope.record, now // NS_PER_MS) <= 0:
            return self._end(seen, WorkflowStatus.EXPIRED, FailureReason.ACTIVE_TIME_EXHAUSTED)
        node = seen.current_node()
        if node is None:  # every stage is done: a crash between two writes
            self.routed.transact(
                lambda r: moves.end_workflow(
                    r, seen.wf.record.workflow_id, WorkflowStatus.SUCCEEDED, None
                )
            )
            return "succeeded"
        run = seen.runs[node.record.run_id] if node.record.run_id else None
        if run is None:
            return "waiting"
        live = seen.live_attempt(run.record.run_id)
        if status is WorkflowStatus.PAUSE_REQUESTED:
            return self._pause_boundary(seen, now)
        if node.record.status is NodeStatus.PENDING:
            return "waiting"  # for its handoff
        if live is None:
            return self._next_attempt(seen, run.record.run_id, now)
        attempt = live.record
        if attempt.status in (AttemptStatus.PENDING, AttemptStatus.NEEDS_REPLAN):
            return self._claim(
                attempt.attempt_id, now, resumed=attempt.status is AttemptStatus.NEEDS_REPLAN
            )
        lease = attempt.lease
        if lease is None or self.held.get(attempt.attempt_id) != lease.lease_id:
            # Not our worker's (a lapsed or another process's lease): recover it once
            # the lease has run out, as any supervisor would.
            if lease is None or now < lease.expires_at + catalog.RECOVER_AFTER_MS * NS_PER_MS:
                return "waiting"
            self.routed.transact(lambda r: r.append_ledger(attempt.run_id, RECOVERED))
            return self._claim(attempt.attempt_id, now, resumed=True, what="recovered")
        return self._step(seen, run.record.run_id, attempt, now)

    def _journal(
        self,
        run_id: RunID,
        attempt_id: AttemptID,
        lease: LeaseID | None,
        kind: InvokeJobEventKind,
        payload: dict[str, object] | None,
        now: Nanos,
    ) -> None:
        worker.journal(self.routed, self.state_root, run_id, attempt_id, lease, kind, payload, now)

    def _heartbeat(
        self, run_id: RunID, attempt_id: AttemptID, lease: LeaseID, phase: str, now: Nanos
    ) -> None:
        worker.heartbeat(self.routed, self.state_root, run_id, attempt_id, lease, phase, now)

    def _claim(
        self, attempt_id: AttemptID, now: Nanos, *, resumed: bool, what: str = "claimed"
    ) -> str:
        claimed = self.routed.transact(lambda r: moves.claim(r, attempt_id))
        lease = moves.lease_of(claimed.record)
        self.held[attempt_id] = lease
        # One lifecycle event a claim (STARTED; ACCEPTED, the admission's, would add a
        # journal write and an ingest per attempt and tell the console nothing more).
        self._journal(
            claimed.record.run_id,
            attempt_id,
            lease,
            InvokeJobEventKind.STARTED,
            {"resumed": resumed},
            now,
        )
        return what

    def _next_attempt(self, seen: Seen, run_id: RunID, now: Nanos) -> str:
        """No live attempt: the first, or a retry after an automatic recovery. A run
        whose attempt failed for the operator to decide waits for their continue."""
        attempts = seen.attempts.get(run_id, [])
        if attempts:
            last = attempts[-1].record
            auto = last.recovery_disposition is RecoveryDisposition.AUTO_RECOVERED or (
                last.failure_reason is FailureReason.DAEMON_RESTARTED
            )
            if not auto:
                return "waiting"  # for an operator's continue (or restart)
        attempt_id = AttemptID(f"at-{self._hex()}")
        run = seen.runs[run_id].record
        self.routed.transact(lambda r: moves.new_attempt(r, run, attempt_id))
        return self._claim(attempt_id, now, resumed=bool(attempts))

    def _pause_boundary(self, seen: Seen, now: Nanos) -> str:
        """The running attempt ends its step here: it stops (NEEDS_REPLAN, resumable
        from the checkpoint it just wrote), and in that transaction the store pauses
        the workflow and freezes the envelope. An attempt no worker of ours holds
        stops once its lease has lapsed, but one whose worker hangs (our stall) never
        reaches a boundary: the run fails PAUSE_BOUNDARY_UNAVAILABLE. Nothing running:
        report the boundary."""
        waiting = False
        for stored in seen.running_attempts():
            attempt = stored.record
            lease = self.held.pop(attempt.attempt_id, None)
            if lease is None and attempt.attempt_id in seen.hung:
                wf = seen.wf
                self.routed.transact(
                    lambda r, wf=wf: r.apply_transition(
                        wf.record.workflow_id,
                        wf.generation,
                        TransitionCommand.PAUSE_BOUNDARY_UNAVAILABLE,
                        f"no-boundary-{wf.generation}",
                    )
                )
                return "no boundary"
            if lease is None:
                expires = attempt.lease.expires_at if attempt.lease else 0
                if now < expires + catalog.RECOVER_AFTER_MS * NS_PER_MS:
                    waiting = True
                    continue
            else:
                self._heartbeat(
                    attempt.run_id,
                    attempt.attempt_id,
                    lease,
                    "pausing at a step boundary",
                    now,
                )
            self._stop_at_boundary(attempt.attempt_id, lease)
        if waiting:
            return "waiting"
        self.routed.transact(lambda r: _report_boundary(r, seen.wf.record.workflow_id))
        return "paused"

    def _stop_at_boundary(self, attempt_id: AttemptID, lease: LeaseID | None) -> None:
        def stop(r: RoutedRules) -> None:
            moves.stop_attempt(
                r,
                attempt_id,
                lease,
                status=AttemptStatus.NEEDS_REPLAN,
                resume_capability=ResumeCapability.SAFE_CHECKPOINT,
            )

        self.routed.transact(stop)

    def _step(self, seen: Seen, run_id: RunID, a: AttemptRecord, now: Nanos) -> str:
        run = seen.runs[run_id].record
        lease = self.held[a.attempt_id]
        plan = catalog.plan_for(seen.receipt.invocation_intent_digest, seen.restarted)
        done = seen.done.get(run_id, 0)
        spent = Decimal(seen.steps_done()) * catalog.COST_PER_STEP
        if spent > Decimal(seen.wf.record.max_llm_spend_decimal):
            self.routed.transact(
                lambda r: r.append_ledger(
                    run_id,
                    f"spend {spent} USD over its ceiling {seen.wf.record.max_llm_spend_decimal}",
                )
            )
            return self._end(
                seen,
                WorkflowStatus.BUDGET_EXCEEDED,
                FailureReason.LLM_BUDGET_EXHAUSTED,
                RunStatus.BUDGET_EXCEEDED,
            )
        try:
            self.routed.transact(lambda r: r.renew_lease(a.attempt_id, lease, moves.lease_ms(run)))
        except LeaseFenced as exc:
            self.held.pop(a.attempt_id, None)
            self.failed(f"renew {a.attempt_id}", exc)
            return "fenced"
        first = a.attempt_number == 1 and run_id not in seen.recovered
        trouble = first and done + 1 == plan.trouble_at
        if plan.fate == "operator" and run_id != seen.receipt.run_id:
            trouble = False  # an operator's continue reaches the top-level run only
        if trouble and plan.fate == "stall":
            self.held.pop(a.attempt_id, None)  # the worker hangs: no more renewals
            self._heartbeat(
                run_id,
                a.attempt_id,
                lease,
                HUNG,
                now,
            )
            return "stalled"
        if trouble and plan.fate in ("retry", "fail", "operator"):
            return self._fail(seen, run_id, a.attempt_id, lease, plan.fate)
        if trouble and plan.fate == "artifacts":
            for rel, refusal in worker.try_unsafe_artifacts(
                self.routed, self.state_root, run_id, a.attempt_id
            ):
                self.failed(f"artifact {rel} of {a.attempt_id}", refusal)
                self.stats["routed_artifact_refused"] += 1
        batch = children.drive_batch(self.routed, seen, run_id, self.held, self._hex)
        if batch is not None:
            return batch
        steps = catalog.steps_for(
            plan, seen.receipt.initial_max_active_duration_ms, len(seen.nodes)
        )
        if done >= steps:
            return self._finish(seen, run_id, a.attempt_id, lease, now)
        meta = worker.step(
            self.routed, self.state_root, run_id, a.attempt_id, lease, done + 1, steps, now
        )
        del meta
        return "step"

    def _fail(
        self, seen: Seen, run_id: RunID, attempt_id: AttemptID, lease: LeaseID, fate: str
    ) -> str:
        reason, scope, disposition = {
            "retry": (
                FailureReason.MODEL_RATE_LIMITED,
                FailureScope.MODEL_CALL,
                RecoveryDisposition.AUTO_RECOVERED,
            ),
            "operator": (
                FailureReason.MODEL_CONTEXT_LIMIT,
                FailureScope.MODEL_CALL,
                RecoveryDisposition.NEEDS_REPLAN,
            ),
            "fail": (
                FailureReason.AGENT_EXCEPTION,
                FailureScope.WORKER,
                RecoveryDisposition.TERMINAL,
            ),
        }[fate]
        self._journal(
            run_id,
            attempt_id,
            lease,
            InvokeJobEventKind.FAILED,
            {"reason": reason.name},
            self.clock(),
        )
        self.held.pop(attempt_id, None)
        if fate == "operator":
            request_id = ControlRequestID(f"ctrl-{self._hex()}")
            self.routed.transact(
                lambda r: moves.needs_replan(r, attempt_id, lease, request_id, reason)
            )
            return "needs replan"
        if fate == "fail":
            self.routed.transact(lambda r: moves.fail_workflow(r, attempt_id, lease, reason, scope))
            return "failed"
        self.routed.transact(
            lambda r: moves.fail_attempt(r, attempt_id, lease, reason, scope, disposition)
        )
        return "attempt failed"

    def _finish(
        self, seen: Seen, run_id: RunID, attempt_id: AttemptID, lease: LeaseID, now: Nanos
    ) -> str:
        self._journal(
            run_id,
            attempt_id,
            lease,
            InvokeJobEventKind.SUCCEEDED,
            None,
            now,
        )
        self.held.pop(attempt_id, None)
        artifacts = [
            m
            for m in self.routed.view(lambda r: r.list_artifacts(run_id))
            if m.relative_path.startswith("out/")
        ]
        ref = None
        if artifacts:
            last = max(artifacts, key=lambda m: m.relative_path)
            ref = ArtifactRef(
                artifact_id=last.artifact_id,
                workflow_id=seen.wf.record.workflow_id,
                run_id=run_id,
                attempt_id=attempt_id,
                logical_ref=last.relative_path,
                digest=last.digest,
                byte_size=last.byte_size,
                media_type=last.media_type,
                classification=DataClassification.INTERNAL,
                created_at=last.updated_at,
            )
        handoff = HandoffID(f"ho-{self._hex()}")
        status = self.routed.transact(
            lambda r: moves.finish_stage(r, attempt_id, lease, handoff, ref)
        )
        return "succeeded" if status is WorkflowStatus.SUCCEEDED else "stage done"

    def _end(
        self,
        seen: Seen,
        status: WorkflowStatus,
        reason: FailureReason,
        run_status: RunStatus | None = None,
    ) -> str:
        workflow_id = seen.wf.record.workflow_id
        for stored in seen.running_attempts():
            self.held.pop(stored.record.attempt_id, None)
        self.routed.transact(
            lambda r: moves.end_workflow(
                r, workflow_id, status, reason, run_status or RunStatus.EXPIRED
            )
        )
        return status.name.lower()

    def _after_end(self, seen: Seen, now: Nanos) -> str:
        """An ended workflow (an operator's cancel): our workers find their leases
        revoked at their next write (fenced), journal the end and stop; the services
        the store left STOPPING are stopped."""
        fenced = 0
        for attempts in seen.attempts.values():
            for stored in attempts:
                a = stored.record
                lease = self.held.pop(a.attempt_id, None)
                if lease is None:
                    continue
                try:
                    self.routed.transact(
                        lambda r, i=a.attempt_id, held=lease: r.renew_lease(
                            i, held, catalog.LEASE_MS
                        )
                    )
                except LeaseFenced as exc:
                    fenced += 1
                    log.info("routed worker of %s stops: %s", a.attempt_id, exc)
                    kind = (
                        InvokeJobEventKind.CANCELLED
                        if a.status is AttemptStatus.CANCELLED
                        else InvokeJobEventKind.FAILED
                    )
                    self._journal(a.run_id, a.attempt_id, None, kind, None, now)
        self.stats["routed_fenced"] += fenced
        self.routed.transact(lambda r: moves.stop_services(r, seen.wf.record.workflow_id))
        return "ended"


def _reconcile_running(r: RoutedRules, run_id: RunID) -> list[Stored[AttemptRecord]]:
    """The run's RUNNING attempts an earlier process held, failed as interrupted; none
    when no attempt runs (nothing is written then)."""
    if not any(a.record.status is AttemptStatus.RUNNING for a in r.list_attempts(run_id)):
        return []
    return r.reconcile_interrupted(run_id)


def _report_boundary(r: RoutedRules, workflow_id: WorkflowID) -> None:
    """A workflow asked to pause has reached its boundary: read and report it in one
    transaction (the generation the report compares is the one just read)."""
    wf = r.get_workflow(workflow_id)
    if wf.record.status is WorkflowStatus.PAUSE_REQUESTED:
        r.apply_transition(
            wf.record.workflow_id,
            wf.generation,
            TransitionCommand.PAUSE_BOUNDARY_REACHED,
            f"boundary-{wf.generation}",
        )

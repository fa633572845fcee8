"""Runs, attempts under leases, the run ledger, reconciliation and checkpoints (the
spec's RunStore and CheckpointStore), over ``Rows``.

Leases: only the store mints lease IDs (``claim_attempt``); a record that arrives with
a lease the store did not give is ``LeaseCallerSelected`` (resolution 5). Every write
to a leased attempt names its lease and is ``LeaseFenced`` unless that lease is the
attempt's current one and unexpired; expiry is exclusive: at ``now == expires_at`` the
lease is gone, as in the contract.
"""

from __future__ import annotations

import dataclasses
import secrets

from ..codec import check_record
from ..enums import (
    AttemptStatus,
    ControlCommand,
    FailureReason,
    FailureScope,
    NodeStatus,
    RecoveryDisposition,
    RunStatus,
    WorkflowStatus,
)
from ..envelope import TimeEnvelope, close_active_segment, start_active_segment
from ..errors import CASConflict, InvalidArgument, LeaseCallerSelected, LeaseFenced, TransitionError
from ..ids import AttemptID, CheckpointID, LeaseID, RunID, WorkflowID, check_id
from ..records import (
    ActiveTimeLedger,
    AttemptLease,
    AttemptRecord,
    LedgerEntry,
    NodeStateTransition,
    PipelineNode,
    RunRecord,
    SemanticCheckpoint,
    Stored,
)
from ..rows import RowFilter
from ..transitions import ATTEMPT_TRANSITIONS, is_terminal
from .base import check_text
from .deployments import DeploymentRules
from .specs import (
    ATTEMPT,
    CHECKPOINT,
    DESIRED_STATE,
    ENVELOPE,
    NODE,
    NODE_TRANSITION,
    RUN,
    RUN_LEDGER,
    TIME_LEDGER,
    WORKFLOW,
    TimeEnvelopeRow,
    TimeLedgerRow,
)

LIVE_ATTEMPT = frozenset(s.name for s, nxt in ATTEMPT_TRANSITIONS.items() if nxt)
_MS = 1_000_000


def checkpoint_digest(cp: SemanticCheckpoint) -> str:
    """SHA-256 of the canonical semantic content (the spec's ``ComputeDigest``)."""
    return cp.compute_digest()


def verify_checkpoint_digest(cp: SemanticCheckpoint) -> None:
    cp.verify_digest()


class RunRules(DeploymentRules):
    # -- runs ----------------------------------------------------------------------------
    def create_run(self, run: RunRecord) -> Stored[RunRecord]:
        """Dynamic runs only (services, children): top-level runs come from admission."""
        check_record(run)
        self._live_workflow(run.workflow_id)
        if run.status is not RunStatus.PENDING:
            raise InvalidArgument("a run is created PENDING")
        check_text("run_kind", run.run_kind, 32)
        stamped = dataclasses.replace(run, created_at=self.now, updated_at=self.now)
        return self._create(RUN, stamped)

    def get_run(self, run_id: RunID) -> Stored[RunRecord]:
        return self._require(RUN, run_id)

    def list_runs(self, workflow_id: WorkflowID | None = None) -> list[Stored[RunRecord]]:
        return self._list(RUN, workflow_id)

    def update_run(self, run: RunRecord, expected_generation: int) -> Stored[RunRecord]:
        check_record(run)
        current = self.get_run(run.run_id).record
        if (run.workflow_id, run.created_at) != (current.workflow_id, current.created_at):
            raise InvalidArgument("a run's workflow and creation time are fixed")
        return self._replace(RUN, self._stamp(run), expected_generation)

    def _stamp[T: (RunRecord, AttemptRecord)](self, record: T) -> T:
        terminated = self.now if is_terminal(record.status) else None
        return dataclasses.replace(record, updated_at=self.now, terminated_at=terminated)

    def _live_workflow(self, workflow_id: WorkflowID) -> None:
        wf = self._require(WORKFLOW, workflow_id).record
        if is_terminal(wf.status):
            raise TransitionError(
                "workflow", wf.status, wf.status, f"workflow {wf.workflow_id} is {wf.status.name}"
            )

    # -- attempts --------------------------------------------------------------------------
    def create_attempt(self, attempt: AttemptRecord) -> Stored[AttemptRecord]:
        check_record(attempt)
        if attempt.lease is not None:
            raise LeaseCallerSelected(f"attempt {attempt.attempt_id} arrived with a lease")
        run = self.get_run(attempt.run_id).record
        if run.workflow_id != attempt.workflow_id:
            raise InvalidArgument(f"run {run.run_id} belongs to {run.workflow_id}")
        if is_terminal(run.status):
            raise TransitionError("run", run.status, run.status, f"run {run.run_id} is terminal")
        if attempt.status is not AttemptStatus.PENDING:
            raise InvalidArgument("an attempt is created PENDING")
        attempts = self.list_attempts(run.run_id)
        if any(a.record.status.name in LIVE_ATTEMPT for a in attempts):
            raise InvalidArgument(f"run {run.run_id} already has a live attempt")
        if attempt.attempt_number != len(attempts) + 1:
            raise InvalidArgument(f"attempt number must be {len(attempts) + 1}")
        stamped = dataclasses.replace(attempt, created_at=self.now, updated_at=self.now)
        return self._create(ATTEMPT, stamped)

    def get_attempt(self, attempt_id: AttemptID) -> Stored[AttemptRecord]:
        return self._require(ATTEMPT, attempt_id)

    def list_attempts(self, run_id: RunID) -> list[Stored[AttemptRecord]]:
        return self._list(ATTEMPT, run_id)

    def claim_attempt(
        self, attempt_id: AttemptID, expected_generation: int, duration_ms: int
    ) -> Stored[AttemptRecord]:
        """Move a PENDING (or NEEDS_REPLAN) attempt to RUNNING under a lease the store
        mints; the run, its workflow and its node start running with it and the
        workflow's envelope opens its active segment. Refused (``TransitionError``)
        while the workflow is not PENDING or RUNNING or its desired state is pause or
        cancel (a paused workflow accrues no active time), and for a RUNNING attempt
        whose lease is live (its holder is not fenced by a second claim); a RUNNING
        attempt whose lease expired is taken over under a new lease."""
        check_id(AttemptID, attempt_id)
        if duration_ms <= 0:
            raise InvalidArgument("lease duration must be positive")
        current = self.get_attempt(attempt_id)
        attempt = current.record
        run = self.get_run(attempt.run_id)
        self._check_lease_ceiling(run.record, duration_ms)
        self._check_claimable(attempt)
        lease = AttemptLease(
            lease_id=LeaseID.new(),
            attempt_id=attempt.attempt_id,
            run_id=attempt.run_id,
            duration_ms=duration_ms,
            acquired_at=self.now,
            expires_at=self.now + duration_ms * _MS,
            lease_token=secrets.token_hex(16),
            acquired_monotonic_ns=self.monotonic_ns,
            expires_monotonic_ns=self.monotonic_ns + duration_ms * _MS,
        )
        claimed = self._replace(
            ATTEMPT,
            dataclasses.replace(
                attempt, status=AttemptStatus.RUNNING, lease=lease, updated_at=self.now
            ),
            expected_generation,
        )
        self._start_run(run)
        envelope = self._envelope(attempt.workflow_id)
        env = envelope.record.envelope
        if env.running_segment_start_ms is None:
            env = start_active_segment(env, self.now_ms)
        self._put_envelope(
            envelope, dataclasses.replace(env, attempt_lease_remaining_ms=duration_ms)
        )
        return claimed

    def _check_lease_ceiling(self, run: RunRecord, duration_ms: int) -> None:
        if duration_ms > run.max_attempt_lease_ms:
            raise InvalidArgument(
                f"lease of {duration_ms} ms is over the run's ceiling of "
                f"{run.max_attempt_lease_ms} ms"
            )

    def _check_claimable(self, attempt: AttemptRecord) -> None:
        """Where a claim may start an attempt running (README, "Readings")."""
        wf = self._require(WORKFLOW, attempt.workflow_id).record
        if wf.status not in (WorkflowStatus.PENDING, WorkflowStatus.RUNNING):
            raise TransitionError(
                "workflow",
                wf.status,
                WorkflowStatus.RUNNING,
                f"workflow {wf.workflow_id} is {wf.status.name}: an attempt is claimed only "
                "while its workflow is PENDING or RUNNING",
            )
        desired = self._read(DESIRED_STATE, wf.workflow_id)
        if desired is not None and desired.record.desired_command in (
            ControlCommand.PAUSE,
            ControlCommand.CANCEL,
        ):
            raise TransitionError(
                "workflow",
                wf.status,
                WorkflowStatus.RUNNING,
                f"workflow {wf.workflow_id} is desired to "
                f"{desired.record.desired_command.name.lower()}: no attempt is claimed",
            )
        lease = attempt.lease
        if (
            attempt.status is AttemptStatus.RUNNING
            and lease is not None
            and not self.lease_expired(lease)
        ):
            raise TransitionError(
                "attempt",
                attempt.status,
                AttemptStatus.RUNNING,
                f"attempt {attempt.attempt_id} runs under live lease {lease.lease_id}: "
                "a claim takes over only an expired lease",
            )

    def _start_run(self, run: Stored[RunRecord]) -> None:
        if run.record.status is RunStatus.PENDING:
            self._replace(
                RUN,
                dataclasses.replace(run.record, status=RunStatus.RUNNING, updated_at=self.now),
                run.generation,
            )
        wf = self._require(WORKFLOW, run.record.workflow_id)
        if wf.record.status is WorkflowStatus.PENDING:
            self._replace(
                WORKFLOW,
                dataclasses.replace(wf.record, status=WorkflowStatus.RUNNING, updated_at=self.now),
                wf.generation,
            )
        if run.record.node_id is not None:
            node = self._read(NODE, run.record.node_id)
            steps = {NodeStatus.READY: (NodeStatus.LAUNCHING, NodeStatus.RUNNING)}
            if node is not None and node.record.status in steps:
                for status in steps[node.record.status]:
                    node = self._move_node(node, status, "attempt claimed")

    def _move_node(
        self, node: Stored[PipelineNode], status: NodeStatus, reason: str
    ) -> Stored[PipelineNode]:
        """A node's status change through its map, with its transition record."""
        moved = self._replace(
            NODE,
            dataclasses.replace(node.record, status=status, updated_at=self.now),
            node.generation,
        )
        self._node_transition(node.record, status, reason)
        return moved

    def _node_transition(self, node: PipelineNode, to: NodeStatus, reason: str) -> None:
        self._create(
            NODE_TRANSITION,
            NodeStateTransition(
                node_id=node.node_id,
                from_state=node.status,
                to_state=to,
                timestamp=self.now,
                reason=reason,
                sequence=len(self.rows.scan(NODE_TRANSITION.table, node.node_id)) + 1,
            ),
        )

    def lease_expired(self, lease: AttemptLease) -> bool:
        """Expiry is exclusive (gone at the expiry instant) and decided on the
        monotonic axis; a lease minted before it existed, on its wall expiry."""
        if lease.expires_monotonic_ns is None:
            return self.now >= lease.expires_at
        return self.monotonic_ns >= lease.expires_monotonic_ns

    def _lease_remaining_ms(self, lease: AttemptLease) -> int:
        """What is left of a lease, in whole milliseconds, never more than is left."""
        if lease.expires_monotonic_ns is None:
            left = lease.expires_at - self.now
        else:
            left = lease.expires_monotonic_ns - self.monotonic_ns
        return max(0, left // _MS)

    def check_lease(self, attempt: AttemptRecord, lease_id: LeaseID | None) -> None:
        """Fencing: ``lease_id`` must be the attempt's live, unexpired lease."""
        lease = attempt.lease
        if lease is None:
            raise LeaseFenced(f"attempt {attempt.attempt_id} holds no lease")
        if lease_id != lease.lease_id:
            raise LeaseFenced(f"lease {lease_id} is not attempt {attempt.attempt_id}'s")
        if self.lease_expired(lease):
            raise LeaseFenced(f"lease {lease_id} expired")

    def update_attempt(
        self, attempt: AttemptRecord, expected_generation: int, lease_id: LeaseID | None
    ) -> Stored[AttemptRecord]:
        """A supervisor's write: fenced unless ``lease_id`` is the live lease of a
        leased attempt (an unleased, pending attempt takes ``None``). An attempt runs
        only under a lease the store minted: a write that makes it RUNNING, or writes
        a RUNNING one, carries that live lease (``claim_attempt`` mints it)."""
        check_record(attempt)
        current = self.get_attempt(attempt.attempt_id).record
        if current.lease is not None or lease_id is not None:
            self.check_lease(current, lease_id)
        elif AttemptStatus.RUNNING in (current.status, attempt.status):
            self._check_change(current, attempt)  # a forbidden move says so first
            raise LeaseFenced(
                f"attempt {attempt.attempt_id} holds no lease: an attempt runs only under "
                "a lease the store mints (claim_attempt)"
            )
        if attempt.lease != current.lease:
            raise LeaseCallerSelected(f"attempt {attempt.attempt_id}: leases are minted by claim")
        fixed = (attempt.run_id, attempt.workflow_id, attempt.attempt_number, attempt.created_at)
        if fixed != (
            current.run_id,
            current.workflow_id,
            current.attempt_number,
            current.created_at,
        ):
            raise InvalidArgument("an attempt's run, workflow, number and creation time are fixed")
        record = self._stamp(attempt)
        if is_terminal(record.status):
            record = dataclasses.replace(record, lease=None)  # a finished attempt lets go
        stored = self._replace(ATTEMPT, record, expected_generation)
        if current.status is AttemptStatus.RUNNING and record.status is not AttemptStatus.RUNNING:
            self._attempt_stopped(record.workflow_id)
        return stored

    def _attempt_stopped(self, workflow_id: WorkflowID) -> None:
        """An attempt of the workflow stopped running, in this transaction: a pause
        boundary when nothing else runs (``ControlRules`` acts on it)."""

    def renew_lease(
        self, attempt_id: AttemptID, lease_id: LeaseID, duration_ms: int
    ) -> Stored[AttemptRecord]:
        """A new expiry ``duration_ms`` from now for the live lease, under the run's
        attempt-lease ceiling as at claim (``InvalidArgument`` above it)."""
        check_id(AttemptID, attempt_id)
        stored = self.get_attempt(attempt_id)
        self.check_lease(stored.record, lease_id)
        lease = stored.record.lease
        if lease is None or duration_ms <= 0:
            raise InvalidArgument("lease duration must be positive")
        self._check_lease_ceiling(self.get_run(stored.record.run_id).record, duration_ms)
        renewed = dataclasses.replace(
            lease,
            duration_ms=duration_ms,
            expires_at=self.now + duration_ms * _MS,
            expires_monotonic_ns=self.monotonic_ns + duration_ms * _MS,
        )
        record = dataclasses.replace(stored.record, lease=renewed, updated_at=self.now)
        written = self._replace(ATTEMPT, record, stored.generation)
        envelope = self._envelope(record.workflow_id)
        self._put_envelope(
            envelope,
            dataclasses.replace(envelope.record.envelope, attempt_lease_remaining_ms=duration_ms),
        )
        return written

    def revoke_lease(
        self, stored: Stored[AttemptRecord], status: AttemptStatus, **why: object
    ) -> Stored[AttemptRecord]:
        """End an attempt from the control plane: no lease, ``status`` through the map."""
        record = dataclasses.replace(stored.record, status=status, lease=None, **why)  # type: ignore[arg-type]
        return self._replace(ATTEMPT, self._stamp(record), stored.generation)

    # -- ledger and reconciliation ----------------------------------------------------------
    def append_ledger(self, run_id: RunID, entry: str) -> LedgerEntry:
        check_id(RunID, run_id)
        self.get_run(run_id)
        check_text("ledger entry", entry, 65_536)
        sequence = len(self.rows.scan(RUN_LEDGER.table, run_id)) + 1
        return self._create(RUN_LEDGER, LedgerEntry(run_id, sequence, entry, self.now)).record

    def list_ledger(self, run_id: RunID) -> list[LedgerEntry]:
        return [s.record for s in self._list(RUN_LEDGER, run_id)]

    def reconcile_interrupted(self, run_id: RunID) -> list[Stored[AttemptRecord]]:
        """After a daemon restart: every live attempt of the run loses its lease and
        fails with DAEMON_RESTARTED through the map; the open active segment is
        closed once. Idempotent: a second call finds nothing live."""
        check_id(RunID, run_id)
        run = self.get_run(run_id).record
        failed = [
            self.revoke_lease(
                stored,
                AttemptStatus.FAILED,
                failure_reason=FailureReason.DAEMON_RESTARTED,
                failure_scope=FailureScope.PLATFORM,
                recovery_disposition=RecoveryDisposition.NEEDS_REPLAN,
            )
            for stored in self._list(ATTEMPT, run_id, LIVE_ATTEMPT)
        ]
        if failed:
            envelope = self._envelope(run.workflow_id)
            closed = close_active_segment(envelope.record.envelope, self.now_ms)
            self._put_envelope(
                envelope, dataclasses.replace(closed, attempt_lease_remaining_ms=None)
            )
            self._attempt_stopped(run.workflow_id)
        self.append_ledger(run_id, f"reconciled: {len(failed)} attempt(s) failed DAEMON_RESTARTED")
        return failed

    # -- the time envelope and the active-time ledger ---------------------------------------
    def _envelope(self, workflow_id: WorkflowID) -> Stored[TimeEnvelopeRow]:
        return self._require(ENVELOPE, workflow_id)

    def _put_envelope(self, stored: Stored[TimeEnvelopeRow], env: TimeEnvelope) -> None:
        if env != stored.record.envelope:
            self._replace(
                ENVELOPE, dataclasses.replace(stored.record, envelope=env), stored.generation
            )

    def get_time_envelope(self, workflow_id: WorkflowID) -> Stored[TimeEnvelope]:
        """The stored envelope, its ``attempt_lease_remaining_ms`` read now: what is
        left of the shortest live lease of the workflow's running attempts (so the
        effective deadline never overstates a lease); the stored figure when no
        attempt runs under a lease (README, "Readings")."""
        stored = self._envelope(workflow_id)
        env = stored.record.envelope
        runs = [row.key for row in self.rows.scan(RUN.table, workflow_id)]
        # One statement for the running attempts of every run, whatever the pipeline.
        running = RowFilter(parents=runs, statuses=frozenset({AttemptStatus.RUNNING.name}))
        left = [
            self._lease_remaining_ms(lease)
            for row in (self.rows.page(ATTEMPT.table, running, None, len(runs)) if runs else [])
            if (lease := self._decode(ATTEMPT, row).record.lease) is not None
        ]
        if left:
            env = dataclasses.replace(env, attempt_lease_remaining_ms=min(left))
        return Stored(env, stored.generation)

    def put_time_envelope(
        self, workflow_id: WorkflowID, env: TimeEnvelope, expected_generation: int
    ) -> Stored[TimeEnvelope]:
        check_id(WorkflowID, workflow_id)
        check_record(env)
        row = TimeEnvelopeRow(workflow_id, env)
        if expected_generation == 0:
            self._require(WORKFLOW, workflow_id)
            stored = self._create(ENVELOPE, row)
        else:
            stored = self._replace(ENVELOPE, row, expected_generation)
        return Stored(stored.record.envelope, stored.generation)

    def get_active_time_ledger(self, workflow_id: WorkflowID) -> Stored[ActiveTimeLedger]:
        stored = self._require(TIME_LEDGER, workflow_id)
        return Stored(stored.record.ledger, stored.generation)

    def put_active_time_ledger(
        self, workflow_id: WorkflowID, ledger: ActiveTimeLedger, expected_generation: int
    ) -> Stored[ActiveTimeLedger]:
        """CAS on the ledger; 0 creates it and fails if it exists (resolution 4: Go's
        0 bypasses CAS, here it never does)."""
        check_id(WorkflowID, workflow_id)
        check_record(ledger)
        self._require(WORKFLOW, workflow_id)
        row = TimeLedgerRow(workflow_id, dataclasses.replace(ledger, updated_at=self.now))
        if expected_generation == 0:
            if self._read(TIME_LEDGER, workflow_id) is not None:
                raise CASConflict(f"workflow {workflow_id} has a ledger (generation 0 creates)")
            stored = self._create(TIME_LEDGER, row)
        else:
            stored = self._replace(TIME_LEDGER, row, expected_generation)
        return Stored(stored.record.ledger, stored.generation)

    # -- checkpoints ------------------------------------------------------------------------
    def save_checkpoint(self, cp: SemanticCheckpoint) -> SemanticCheckpoint:
        """Persist a checkpoint written under the attempt's live lease; never replaces
        one (``AlreadyExists``), whatever its content."""
        check_record(cp)
        attempt = self.get_attempt(cp.attempt_id).record
        if (cp.run_id, cp.workflow_id) != (attempt.run_id, attempt.workflow_id):
            raise InvalidArgument(f"checkpoint names another run than attempt {attempt.attempt_id}")
        self.check_lease(attempt, cp.lease_id)
        verify_checkpoint_digest(cp)
        if cp.sequence < 1:
            raise InvalidArgument("checkpoint sequence starts at 1")
        return self._create(CHECKPOINT, dataclasses.replace(cp, created_at=self.now)).record

    def get_checkpoint(self, checkpoint_id: CheckpointID) -> SemanticCheckpoint:
        cp = self._require(CHECKPOINT, checkpoint_id).record
        verify_checkpoint_digest(cp)
        return cp

    def get_latest_checkpoint(self, attempt_id: AttemptID) -> SemanticCheckpoint:
        """The safe-to-resume checkpoint of the attempt with the highest sequence whose
        digest verifies; ``RoutedNotFound`` if there is none."""
        best: SemanticCheckpoint | None = None
        for stored in self._list(CHECKPOINT, attempt_id):
            cp = stored.record
            if not cp.safe_to_resume or cp.checkpoint_digest != checkpoint_digest(cp):
                continue
            if best is None or cp.sequence > best.sequence:
                best = cp
        if best is None:
            from ..errors import RoutedNotFound

            raise RoutedNotFound(f"attempt {attempt_id} has no safe checkpoint")
        return best

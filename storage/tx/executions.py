"""Executions: attempts, their outcomes, and the lease (claim, renew, release, revoke).

An Execution belongs to a Work, so these rules build on ``WorkRules``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import Conflict, Fenced, Invalid, NotFound
from ..meaning import series_tally
from ..meaning.executions import check_execution_query
from ..records import (
    LIVE_EXECUTION_STATES,
    ArtifactRef,
    Binding,
    Execution,
    ExecutionQuery,
    ExecutionState,
    LeaseRef,
    Nanos,
    Outcome,
    OutcomeKind,
    WorkState,
)
from . import fields, lifecycle
from .base import PARKED_STATES
from .work import WorkRules

# Which outcome kind each Execution state requires (None: no outcome allowed).
_OUTCOME_FOR: dict[ExecutionState, OutcomeKind | None] = {
    ExecutionState.PENDING: None,
    ExecutionState.RUNNING: None,
    ExecutionState.CANCELLED: None,
    ExecutionState.PARKED: OutcomeKind.WAITING,
    ExecutionState.WAITING: OutcomeKind.WAITING,
    ExecutionState.COMPLETED: OutcomeKind.COMPLETED,
    ExecutionState.FAILED: OutcomeKind.FAILED,
    ExecutionState.HANDOFF: OutcomeKind.HANDOFF,
}


class ExecutionRules(WorkRules):
    """The Execution and lease operations of ``Tx``."""

    def _require_execution(self, execution_id: str) -> Execution:
        x = self._get("execution", execution_id)
        if x is None:
            raise NotFound(f"Execution {execution_id!r} does not exist")
        return x

    @staticmethod
    def _check_outcome(state: ExecutionState, outcome: Outcome | None) -> None:
        needed = _OUTCOME_FOR[state]
        if outcome is None:
            if needed is not None:
                raise Invalid(f"state {state} needs a {needed} outcome")
            return
        try:
            kind = OutcomeKind(outcome.kind)
        except ValueError:
            raise Invalid(f"unknown outcome kind {outcome.kind!r}") from None
        if needed is None:
            raise Invalid(f"state {state} has no outcome")
        if kind is not needed:
            raise Invalid(f"state {state} needs a {needed} outcome, not {kind}")
        fields.require_payload(outcome.detail, "outcome detail")

    @staticmethod
    def _check_attachments(binding: Binding | None, artifacts: Sequence[ArtifactRef]) -> None:
        if binding is not None and not isinstance(binding, Binding):
            raise Invalid("binding must be a Binding")
        for ref in artifacts:
            if not isinstance(ref, ArtifactRef) or not ref.id or ref.size < 0:
                raise Invalid(f"bad artifact reference {ref!r}")

    def put_execution(self, execution: Execution) -> Execution:
        self._writable()
        x = execution
        fields.require_id(x.id, "Execution ID")
        fields.require_storable(x, "Execution")
        fields.require_id(x.work_id, "Execution work_id")
        fields.require_text(x.executor, "Execution executor")
        current = self._get("execution", x.id)
        if x.revision != 0:
            # Same order as every update: NotFound, then revision, then the rules.
            if current is None:
                raise NotFound(f"Execution {x.id!r} does not exist")
            if x.revision != current.revision:
                raise Conflict(
                    f"Execution {x.id} is at revision {current.revision}, not {x.revision}"
                )
        state = lifecycle.execution_state(x.state)
        self._check_outcome(state, x.outcome)
        self._check_attachments(x.binding, x.artifacts)
        if current is None or x.revision == 0:
            return self._create_execution(x, current)
        if current.terminal:
            raise Invalid(f"Execution {x.id} is {current.state}; terminal records are immutable")
        if (x.work_id, x.attempt, x.binding) != (current.work_id, current.attempt, current.binding):
            raise Invalid("an Execution's Work, attempt number and binding are fixed")
        if state is not current.state and not lifecycle.execution_transition_allowed(
            current.state, state
        ):
            if state is ExecutionState.RUNNING:
                raise Invalid(f"{current.state} -> running happens only through claim")
            raise Invalid(f"Execution cannot move from {current.state} to {state}")
        executor = current.executor
        if x.executor and x.executor != current.executor:
            if current.executor:
                raise Conflict(f"Execution {x.id} executor is already {current.executor!r}")
            executor = x.executor
        # Parking and every terminal state release authority; the epoch stays (O-05).
        releases = state not in (ExecutionState.PENDING, ExecutionState.RUNNING)
        stored = replace(
            x,
            state=state,
            executor=executor,
            owner="" if releases else current.owner,
            epoch=current.epoch,
            lease_expires_at=0 if releases else current.lease_expires_at,
            started_at=current.started_at,
            finished_at=self._now if state not in LIVE_EXECUTION_STATES else 0,
            revision=current.revision + 1,
            created_at=current.created_at,
            updated_at=self._now,
        )
        self._put("execution", stored, create=False)
        self._touch(stored.work_id, attempt=True)
        if state in PARKED_STATES and current.state not in PARKED_STATES:
            self._parked_here.add(stored.id)
        if executor != current.executor:
            self._note_executor(stored)
        return stored

    def _create_execution(self, x: Execution, current: Execution | None) -> Execution:
        if current is not None:
            raise Conflict(f"Execution {x.id!r} already exists")
        if x.state is not ExecutionState.PENDING:
            raise Invalid(f"a new Execution starts pending, not {x.state}")
        work = self._require_work(x.work_id)
        if work.terminal:
            raise Invalid(f"Work {work.id} is {work.state}; it takes no new attempt")
        latest = self._latest_attempt(work.id)
        expected = latest.attempt + 1 if latest else 1
        if x.attempt != expected:
            raise Invalid(f"next attempt of Work {work.id} is {expected}, not {x.attempt}")
        if self._list("execution", work_id=work.id, live=True):
            raise Conflict(f"Work {work.id} already has a nonterminal attempt")
        executor = x.executor or (x.binding.executor if x.binding else "")
        stored = replace(
            x,
            executor=executor,
            owner="",
            epoch=0,
            lease_expires_at=0,
            started_at=0,
            finished_at=0,
            revision=1,
            created_at=self._now,
            updated_at=self._now,
        )
        self._put("execution", stored, create=True)
        self._touch(work.id, attempt=True)
        # Storage keeps Work.latest_executor; it is metadata, so no Work revision bump.
        if work.latest_executor != executor:
            self._write_work(work, replace(work, latest_executor=executor))
        return stored

    def _note_executor(self, x: Execution) -> None:
        latest = self._latest_attempt(x.work_id)
        if latest is not None and latest.id == x.id:
            work = self._require_work(x.work_id)
            self._write_work(work, replace(work, latest_executor=x.executor))

    def execution(self, execution_id: str) -> Execution:
        self._check()
        return self._require_execution(execution_id)

    def executions(self, work_id: str = "") -> list[Execution]:
        self._check()
        return self._list("execution", work_id=work_id)

    def live_executions(self, work_id: str = "") -> list[Execution]:
        self._check()
        return self._list("execution", work_id=work_id, live=True)

    def executions_without_executor(self, after: str = "", limit: int = 0) -> list[Execution]:
        """Attempts whose ``executor`` is empty, by ID after ``after``, at most ``limit``
        (0: all): what the startup backfill of executors looks at. The ORM reads them
        from a partial index of those rows alone, so a runtime starting on a million
        Work whose attempts all have one reads nothing (it decoded every attempt)."""
        self._check()
        fields.require_limit(limit)
        fields.require_text(after, "after")
        return self._executions_without_executor(after, limit)

    def query_executions(self, query: ExecutionQuery) -> list[Execution]:
        """A page of attempts (``storage.meaning.executions``): one read."""
        self._check()
        check_execution_query(query)
        # Every string reaches SQL as a parameter: refuse what an engine cannot hold
        # (PostgreSQL raises on a NUL) as Invalid, the same on every backend.
        if query.work_id_prefix:
            fields.require_text(query.work_id_prefix, "Work ID prefix")
        for kind in query.kinds:
            fields.require_text(kind, "Work kind")
        for scope_id in query.scope_ids or ():
            fields.require_text(scope_id, "Scope ID")
        return self._query_executions(query)

    def latest_executions(self, work_ids: Sequence[str]) -> dict[str, Execution]:
        """The highest-numbered attempt of each listed Work that has one (unknown
        Work and Work never attempted are absent), read for the whole list at once."""
        self._check()
        ids = fields.require_ids(work_ids, "Work ID")
        latest: dict[str, Execution] = {}
        for x in self._list_of_works("execution", ids) if ids else []:
            if x.work_id not in latest or x.attempt > latest[x.work_id].attempt:
                latest[x.work_id] = x
        return latest

    def claim(self, execution_id: str, owner: str, expires_at: Nanos) -> Execution:
        self._writable()
        fields.require_id(owner, "lease owner")
        x = self._require_execution(execution_id)
        if expires_at <= self._now:
            raise Invalid("a lease must expire after Guard.now")
        work = self._require_work(x.work_id)
        if work.terminal:
            raise Invalid(f"Work {work.id} is {work.state}")
        if x.terminal:
            raise Invalid(f"Execution {x.id} is {x.state}")
        if x.state is ExecutionState.RUNNING and x.owner and self._now < x.lease_expires_at:
            raise Conflict(f"Execution {x.id} is leased to {x.owner} (epoch {x.epoch})")
        stored = replace(
            x,
            state=ExecutionState.RUNNING,
            # A resumed parked attempt drops its waiting outcome: running has none (O-03).
            outcome=None,
            owner=owner,
            epoch=x.epoch + 1,
            lease_expires_at=expires_at,
            started_at=x.started_at or self._now,
            revision=x.revision + 1,
            updated_at=self._now,
        )
        self._put("execution", stored, create=False)
        self._touch(work.id, attempt=True)
        if not x.started_at:
            # The first claim: the attempt counts in its day from now on (its Scope
            # column is its Work's, fixed at creation; later claims keep started_at).
            series_tally.add(series_tally.attempt_keys(stored, work.scope_id), 1, self._series)
        if work.state is not WorkState.RUNNING:
            running = replace(
                work, state=WorkState.RUNNING, revision=work.revision + 1, updated_at=self._now
            )
            self._write_work(work, running)
        return stored

    def renew(self, lease: LeaseRef, expires_at: Nanos) -> Execution:
        self._writable()
        x = self.verify_lease(lease)
        if expires_at < x.lease_expires_at:
            raise Invalid("renew cannot shorten a lease")
        stored = replace(
            x, lease_expires_at=expires_at, revision=x.revision + 1, updated_at=self._now
        )
        self._put("execution", stored, create=False)
        return stored

    def release(self, lease: LeaseRef) -> Execution:
        self._writable()
        x = self.verify_lease(lease)
        stored = replace(
            x, owner="", lease_expires_at=0, revision=x.revision + 1, updated_at=self._now
        )
        self._put("execution", stored, create=False)
        return stored

    def revoke_lease(self, execution_id: str) -> Execution:
        """Control plane only: end a running attempt's lease now (expiry = Guard.now,
        already expired since expiry is exclusive). Owner and epoch stay, so the old
        holder is fenced and a later claim recovers the attempt with a higher epoch.
        Restore uses it to fence every restored lease before any executor commits."""
        self._writable()
        if not self.trusted:
            raise Fenced("revoke_lease needs control-plane authority (no lease in the Guard)")
        x = self._require_execution(execution_id)
        if x.state is not ExecutionState.RUNNING or not x.owner:
            return x
        if x.lease_expires_at <= self._now:
            return x
        stored = replace(
            x, lease_expires_at=self._now, revision=x.revision + 1, updated_at=self._now
        )
        self._put("execution", stored, create=False)
        return stored

    def set_execution_executor(self, execution_id: str, executor: str) -> Execution:
        self._writable()
        fields.require_id(executor, "executor")
        x = self._require_execution(execution_id)
        if x.executor == executor:
            return x
        if x.executor:
            raise Conflict(f"Execution {x.id} executor is already {x.executor!r}")
        # Write-once metadata kept by storage: no revision bump, like latest_executor.
        stored = replace(x, executor=executor)
        self._put("execution", stored, create=False)
        self._note_executor(stored)
        return stored

"""Limit amendments and ``apply_transition``; ``RoutedRules``, every rule in one class.

Amendments are absolute and increase-only (zero: unchanged), CAS on the workflow's
authority generation, which they increment, and record the ceilings before and after
(resolution 11). They reach the workflow, its live runs and its time envelope in the
same transaction.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal, InvalidOperation

from ..codec import check_record
from ..enums import (
    AttemptStatus,
    AuthorityScope,
    ChildBatchStatus,
    FailureReason,
    NodeStatus,
    RunStatus,
    WorkflowStatus,
)
from ..envelope import consumed_ms, with_amended_ceiling
from ..errors import (
    AuthorityDenied,
    CASConflict,
    IdempotencyConflict,
    InvalidArgument,
    TransitionError,
)
from ..ids import WorkflowID, check_id
from ..records import LimitAmendment, Stored, WorkflowRecord
from ..transitions import is_terminal
from .base import check_text
from .control import ControlRules, TransitionCommand
from .listing import ListingRules
from .progress import ProgressRules
from .specs import AMENDMENT, RUN, TRANSITION, WORKFLOW, TransitionRecord, amendment_key


def _decimal(name: str, text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation as exc:
        raise InvalidArgument(f"{name} {text!r} is not a decimal") from exc
    if not value.is_finite() or value < 0:
        raise InvalidArgument(f"{name} {text!r} must be a finite amount >= 0")
    return value


class RoutedRules(ControlRules, ProgressRules, ListingRules):
    def append_limit_amendment(
        self,
        workflow_id: WorkflowID,
        expected_authority_generation: int,
        amendment: LimitAmendment,
        scope: AuthorityScope,
    ) -> LimitAmendment:
        check_record(amendment)
        if scope is not AuthorityScope.AMEND_LIMITS:
            raise AuthorityDenied(f"amending limits needs runs:amend_limits, not {scope.value}")
        check_text("actor_identity", amendment.actor_identity)
        check_text("idempotency_key", amendment.idempotency_key)
        if amendment.workflow_id != workflow_id:
            raise InvalidArgument("the amendment names another workflow")
        if amendment.expected_authority_generation != expected_authority_generation:
            raise InvalidArgument("expected_authority_generation differs from the argument")
        prior = self._read(AMENDMENT, amendment_key(workflow_id, amendment.idempotency_key))
        if prior is not None:
            asked = (
                "new_max_active_duration_ms",
                "new_current_attempt_lease_ms",
                "new_max_llm_spend_decimal",
            )
            if any(getattr(prior.record, f) != getattr(amendment, f) for f in asked):
                raise IdempotencyConflict(f"key {amendment.idempotency_key!r} amended other limits")
            return prior.record
        wf = self.get_workflow(workflow_id)
        current = wf.record
        if is_terminal(current.status):
            raise TransitionError(
                "workflow", current.status, current.status, "amend a finished workflow"
            )
        if current.authority_generation != expected_authority_generation:
            raise CASConflict(
                f"workflow {workflow_id} authority generation is {current.authority_generation}, "
                f"not {expected_authority_generation}"
            )
        active, lease, spend = self._amended(current, amendment)
        generation = current.authority_generation + 1
        updated = dataclasses.replace(
            current,
            max_active_duration_ms=active,
            max_attempt_lease_ms=lease,
            max_llm_spend_decimal=spend,
            authority_generation=generation,
            updated_at=self.now,
        )
        # Not update_workflow: ceilings and the authority generation are this
        # operation's alone.
        self._replace(WORKFLOW, updated, wf.generation)
        for run in self._list(RUN, workflow_id):
            if not is_terminal(run.record.status):
                amended_run = dataclasses.replace(
                    run.record,
                    max_active_duration_ms=active,
                    max_attempt_lease_ms=lease,
                    max_llm_spend_decimal=spend,
                    updated_at=self.now,
                )
                self._replace(RUN, amended_run, run.generation)
        envelope = self._envelope(workflow_id)
        self._put_envelope(
            envelope, with_amended_ceiling(envelope.record.envelope, active, generation)
        )
        record = dataclasses.replace(
            amendment,
            before_max_active_duration_ms=current.max_active_duration_ms,
            before_max_attempt_lease_ms=current.max_attempt_lease_ms,
            before_max_llm_spend_decimal=current.max_llm_spend_decimal,
            after_max_active_duration_ms=active,
            after_max_attempt_lease_ms=lease,
            after_max_llm_spend_decimal=spend,
            consumed_active_time_ms=consumed_ms(envelope.record.envelope, self.now_ms),
            reserved_spend_decimal="0",  # spend is not tracked here (README: out of scope)
            new_authority_generation=generation,
            created_at=self.now,
        )
        return self._create(AMENDMENT, record).record

    def _amended(self, wf: WorkflowRecord, a: LimitAmendment) -> tuple[int, int, str]:
        active, lease, spend = (
            wf.max_active_duration_ms,
            wf.max_attempt_lease_ms,
            wf.max_llm_spend_decimal,
        )
        if a.new_max_active_duration_ms < 0 or a.new_current_attempt_lease_ms < 0:
            raise InvalidArgument("ceilings are absolute values >= 0 (0: unchanged)")
        if a.new_max_active_duration_ms:
            if a.new_max_active_duration_ms < active:
                raise InvalidArgument(f"max active duration may only grow from {active} ms")
            active = a.new_max_active_duration_ms
        if a.new_current_attempt_lease_ms:
            if a.new_current_attempt_lease_ms < lease:
                raise InvalidArgument(f"attempt lease may only grow from {lease} ms")
            lease = a.new_current_attempt_lease_ms
        if a.new_max_llm_spend_decimal:
            new = _decimal("new_max_llm_spend_decimal", a.new_max_llm_spend_decimal)
            if spend and new < _decimal("max_llm_spend_decimal", spend):
                raise InvalidArgument(f"LLM spend ceiling may only grow from {spend}")
            spend = a.new_max_llm_spend_decimal
        if (active, lease, spend) == (
            wf.max_active_duration_ms,
            wf.max_attempt_lease_ms,
            wf.max_llm_spend_decimal,
        ):
            raise InvalidArgument("the amendment changes no ceiling")
        return active, lease, spend

    def list_limit_amendments(self, workflow_id: WorkflowID) -> list[LimitAmendment]:
        return [s.record for s in self._list(AMENDMENT, workflow_id)]

    # -- apply_transition -----------------------------------------------------------------
    def apply_transition(
        self,
        workflow_id: WorkflowID,
        expected_generation: int,
        command: TransitionCommand,
        idempotency_key: str,
    ) -> Stored[WorkflowRecord]:
        """One atomic, idempotent update across the workflow and everything under it
        (the supervisor's side of pausing). A key seen before with the same command
        returns the workflow as it is, applying nothing."""
        check_id(WorkflowID, workflow_id)
        if not isinstance(command, TransitionCommand):
            raise InvalidArgument(f"not a TransitionCommand: {command!r}")
        check_text("idempotency_key", idempotency_key)
        record = TransitionRecord(workflow_id, command.name, idempotency_key, 0, self.now)
        prior = self._read(TRANSITION, TRANSITION.key(record))
        if prior is not None:
            if prior.record.command != command.name:
                raise IdempotencyConflict(f"key {idempotency_key!r} was {prior.record.command}")
            return self.get_workflow(workflow_id)
        wf = self.get_workflow(workflow_id)
        self._check_generation(WORKFLOW, wf, expected_generation)
        if command is TransitionCommand.PAUSE_BOUNDARY_REACHED:
            done = self._reach_pause_boundary(wf)
        else:
            done = self._fail_pause_boundary(wf)
        self._create(TRANSITION, dataclasses.replace(record, workflow_generation=done.generation))
        return done

    def _fail_pause_boundary(self, wf: Stored[WorkflowRecord]) -> Stored[WorkflowRecord]:
        """No pause boundary is reachable: the run fails with PauseBoundaryUnavailable
        (resolution 8), its attempts lose their leases, nodes and batches end."""
        if wf.record.status is not WorkflowStatus.PAUSE_REQUESTED:
            raise TransitionError(
                "workflow", wf.record.status, WorkflowStatus.FAILED, "no pause pending"
            )
        reason = FailureReason.PAUSE_BOUNDARY_UNAVAILABLE
        self._end_attempts(wf.record, AttemptStatus.FAILED, reason)
        self._retire_services(wf.record)
        self._move_all(wf.record, run=RunStatus.FAILED, node=NodeStatus.FAILED)
        # Nodes the map does not let fail (none from PAUSE_REQUESTED) and batches end cancelled.
        self._move_all(wf.record, node=NodeStatus.CANCELLED, batch=ChildBatchStatus.CANCELLED)
        return self._set_workflow(
            self.get_workflow(wf.record.workflow_id), WorkflowStatus.FAILED, reason
        )

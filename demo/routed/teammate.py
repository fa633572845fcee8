"""A simulated operator for routed runs, so a newcomer's `make run` shows every
control the console offers having been used: it pauses a running workflow and
resumes it a little later, cancels one now and then, restarts a failed one (through
the alias it came by, so the restart takes the alias's current target), continues a
run left waiting for an operator, and raises a tight spend ceiling.

It acts only through the operators' path, ``request_control`` and
``append_limit_amendment`` with actor ``teammate:sim`` and the scopes the console's
permissions map to, so its requests appear in each workflow's control history like
anyone's; the supervisor then carries them out as it does the console's. Its pauses
are resumed by itself, and a restart waits for room under ``catalog.MAX_LIVE``, so it
never grows the live set.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

from storage import StorageError
from storage.routed.enums import (
    AuthorityScope,
    ControlCommand,
    WorkflowStatus,
)
from storage.routed.ids import ControlRequestID, LimitAmendmentID, WorkflowID
from storage.routed.records import ControlRequest, LimitAmendment, Nanos, Stored, WorkflowRecord
from storage.routed.store import RoutedStore
from storage.routed.transitions import is_terminal

from . import catalog
from .reading import Brief

ACTOR = "teammate:sim"
PAUSE_EVERY = 24  # ticks between two pauses
RESUME_AFTER_S = 12  # a pause lasts this long (simulated seconds)
CANCEL_EVERY = 160
RESTART_EVERY = 45
AMEND_EVERY = 40  # rarely enough that some tight ceilings run out first
AMENDED_SPEND = "1.50"
NS_PER_S = 1_000_000_000


class Teammate:
    def __init__(
        self,
        routed: RoutedStore,
        seed: int,
        run: int,
        stats: Counter[str],
        failed: Callable[[str, StorageError], None],
    ) -> None:
        self.routed = routed
        self.stats = stats
        self.failed = failed
        # Seeded pseudo-randomness is the point here: a simulation, not security.
        self.id_rng = random.Random(f"simulate/{seed}/{run}/routed-teammate")  # noqa: S311
        self.paused: dict[WorkflowID, Nanos] = {}  # our pauses and when we asked
        self.restarted: set[WorkflowID] = set()  # sources we restarted
        self.waiting: dict[WorkflowID, int] = {}  # runs waiting for a continue, since tick

    def tick(self, tick: int, now: Nanos, briefs: list[Brief]) -> set[WorkflowID]:
        """This tick's operator actions over the live workflows (in the supervisor's
        fixed order); returns the workflows it created (restarts)."""
        workflows = [b.wf for b in briefs]
        live = {b.wf.record.workflow_id for b in briefs}
        waiting = {b.wf.record.workflow_id for b in briefs if b.waits_for_operator}
        # What ended meanwhile (by anyone's hand) is forgotten: bounded by the live set.
        self.paused = {w: t for w, t in self.paused.items() if w in live}
        self.waiting = {w: t for w, t in self.waiting.items() if w in live}
        created: set[WorkflowID] = set()
        for wf in workflows:
            wf_id = wf.record.workflow_id
            asked = self.paused.get(wf_id)
            if asked is not None and now - asked >= RESUME_AFTER_S * NS_PER_S:
                pausing = wf.record.status in (
                    WorkflowStatus.PAUSED,
                    WorkflowStatus.PAUSE_REQUESTED,
                )
                # Kept until a resume is recorded: a refused one (a stale generation) is
                # asked again next tick.
                if not pausing or self._control(wf, ControlCommand.RESUME):
                    self.paused.pop(wf_id, None)
            if wf_id in waiting:
                since = self.waiting.setdefault(wf_id, tick)
                if tick - since >= catalog.OPERATOR_WAIT_TICKS:
                    self._control(wf, ControlCommand.CONTINUE)
                    self.waiting.pop(wf_id, None)
        running = [w for w in workflows if w.record.status is WorkflowStatus.RUNNING]
        if tick % PAUSE_EVERY == 0 and running:
            target = running[0]
            if self._control(target, ControlCommand.PAUSE):
                self.paused[target.record.workflow_id] = now
        if tick % CANCEL_EVERY == 0 and len(running) > 1:
            self._control(running[-1], ControlCommand.CANCEL)
        if tick % AMEND_EVERY == 0:
            tight = [w for w in running if w.record.max_llm_spend_decimal == catalog.TIGHT_SPEND]
            if tight:
                self._amend(tight[0])
        if tick % RESTART_EVERY == 0 and len(live) < catalog.MAX_LIVE:
            created |= self._restart_one()
        return created

    def _request(
        self, wf: Stored[WorkflowRecord], command: ControlCommand, target: str | None = None
    ) -> ControlRequest:
        return ControlRequest(
            control_request_id=ControlRequestID(f"ctrl-{self.id_rng.getrandbits(128):032x}"),
            workflow_id=wf.record.workflow_id,
            command=command,
            expected_generation=wf.generation,
            actor_identity=ACTOR,
            authority_scope=AuthorityScope.CONTROL,
            # Derived from what it acts on: a retried request is the same request.
            idempotency_key=f"{ACTOR}/{command.name.lower()}/{wf.generation}",
            target_deployment_ref=target,
        )

    def _control(
        self, wf: Stored[WorkflowRecord], command: ControlCommand, target: str | None = None
    ) -> WorkflowID | None:
        """One request; the workflow it created (restart) or the one acted on."""
        try:
            outcome = self.routed.transact(
                lambda r: r.request_control(self._request(wf, command, target))
            )
        except StorageError as exc:
            self.failed(f"teammate {command.name.lower()} {wf.record.workflow_id}", exc)
            return None
        self.stats[f"routed_teammate_{command.name.lower()}"] += 1
        return outcome.result.new_workflow_id or wf.record.workflow_id

    def _amend(self, wf: Stored[WorkflowRecord]) -> None:
        record = wf.record
        amendment = LimitAmendment(
            amendment_id=LimitAmendmentID(f"amend-{self.id_rng.getrandbits(128):032x}"),
            workflow_id=record.workflow_id,
            expected_authority_generation=record.authority_generation,
            reason="simulated teammate: the caller approved a larger model budget",
            actor_identity=ACTOR,
            idempotency_key=f"{ACTOR}/amend/{record.authority_generation}",
            new_max_llm_spend_decimal=AMENDED_SPEND,
        )
        try:
            self.routed.transact(
                lambda r: r.append_limit_amendment(
                    record.workflow_id,
                    record.authority_generation,
                    amendment,
                    AuthorityScope.AMEND_LIMITS,
                )
            )
        except StorageError as exc:
            self.failed(f"teammate amend {record.workflow_id}", exc)
            return
        self.stats["routed_teammate_amend"] += 1

    def _alias_of(self, wf: WorkflowRecord) -> str | None:
        """The alias the workflow was invoked through, if it was."""
        receipt = self.routed.view(lambda r: r.get_invocation(wf.invocation_id))
        ref = receipt.requested_deployment_ref
        return None if ref.startswith("dep-") else ref

    def _restart_one(self) -> set[WorkflowID]:
        """Restart the oldest failed workflow not restarted yet: through the alias it
        was invoked by (its current target), or its exact deployment."""
        failed = sorted(
            (
                w
                for w in self.routed.view(lambda r: r.list_workflows())
                if w.record.status is WorkflowStatus.FAILED
                and w.record.workflow_id not in self.restarted
                and is_terminal(w.record.status)
            ),
            key=lambda w: w.record.created_at,
        )
        for wf in failed:
            self.restarted.add(wf.record.workflow_id)
            if any(
                c.command is ControlCommand.RESTART
                for c in self.routed.view(
                    lambda r, w=wf.record.workflow_id: r.list_control_requests(w)
                )
            ):
                continue  # an operator restarted it already
            target = self._alias_of(wf.record)
            created = self._control(wf, ControlCommand.RESTART, target)
            return {created} if created else set()
        return set()

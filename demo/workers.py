"""The simulated executors: workers that hold an attempt's lease and follow a plan.

Each step is one executor transaction whose Guard carries the lease, so storage fences
it once the lease is gone: an operator cancelled the Work, or the lease expired and
another claim recovered the attempt. The worker then stops. Artifacts are published
before the transaction that attaches them, never inside it.
"""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from storage import (
    ArtifactRef,
    Conflict,
    CorrelationKey,
    Event,
    Execution,
    ExecutionState,
    Fenced,
    LeaseRef,
    Nanos,
    Outcome,
    OutcomeKind,
    Payload,
    StorageError,
    Timer,
    Tx,
    Wait,
    WorkState,
    seconds,
)
from storage.artifacts import FileArtifactStore

from . import catalog
from .catalog import FLOW_BY_KIND

log = logging.getLogger("demo.simulate")
T = TypeVar("T")


@dataclass
class Worker:
    """A simulated executor process holding one attempt's lease."""

    execution_id: str
    work_id: str
    kind: str
    attempt: int
    lease: LeaseRef
    trigger: str  # the Event that started or woke this attempt (causation of emits)
    plan: list[str]
    next_at: Nanos


class WorkerSteps:
    """The worker half of ``demo.runtime.Simulator`` (which supplies these)."""

    workers: dict[str, Worker]
    stats: Counter[str]
    rng: random.Random
    owner: str
    artifacts: FileArtifactStore
    transact: Callable[..., Any]
    now: Callable[[], Nanos]
    new_id: Callable[[], str]
    token: Callable[..., str]
    _failed: Callable[[str, StorageError], None]
    _after_failure: Callable[[Tx, str, str], None]

    # -- steps --------------------------------------------------------------------
    def _advance_workers(self) -> None:
        now = self.now()
        for worker in [w for w in self.workers.values() if w.next_at <= now]:
            self._step(worker)

    def _step(self, w: Worker) -> None:
        op = w.plan[0]
        if op == "abandon":
            # A crashed worker: the lease is never renewed and expires on its own.
            del self.workers[w.execution_id]
            self.stats["abandoned"] += 1
            return
        ref: ArtifactRef | None = None
        if op in ("log", "report"):
            try:
                ref = self._publish(w, op)  # outside any transaction
            except StorageError as exc:
                self._failed(f"publish {op}", exc)
        try:
            self.transact(op, lambda tx: self._execute(tx, w, op, ref), lease=w.lease)
        except Fenced as exc:
            # Cancelled by an operator, or the lease was lost and recovered by someone
            # else: this worker's authority is gone, so it stops.
            del self.workers[w.execution_id]
            self.stats["fenced"] += 1
            log.info("worker for attempt %s stopped: %s", w.execution_id, exc)
            return
        except Conflict as exc:
            self._failed(f"{op} on {w.execution_id}", exc)  # retried next tick, reread
            return
        except StorageError as exc:
            # A bug or a broken store: drop the worker; its lease expires and a later
            # scan recovers the attempt from stored state.
            del self.workers[w.execution_id]
            self._failed(f"{op} on {w.execution_id}", exc)
            return
        w.plan.pop(0)
        if op in catalog.TERMINAL_OPS or op in ("park", "park_terminal", "spawn") or not w.plan:
            del self.workers[w.execution_id]
        else:
            w.next_at = self.now() + seconds(self.rng.uniform(1, 5))

    def _execute(self, tx: Tx, w: Worker, op: str, ref: ArtifactRef | None) -> None:
        """One executor transaction (the Guard carries the lease)."""
        x = tx.execution(w.execution_id)
        if op in ("work", "log", "report"):
            x = tx.renew(w.lease, tx.now + seconds(catalog.LEASE_SECONDS))
            if ref is not None:
                # outcome=None: a claim that resumes a parked attempt keeps its waiting
                # outcome on the running record, which put_execution then refuses.
                tx.put_execution(replace(x, artifacts=(*x.artifacts, ref), outcome=None))
                self.stats["artifacts"] += 1
            return
        if op == "complete":
            tx.put_execution(
                replace(x, state=ExecutionState.COMPLETED, outcome=Outcome(OutcomeKind.COMPLETED))
            )
            work = tx.put_work(replace(tx.work(w.work_id), state=WorkState.COMPLETED))
            if work.kind == "deploy.step" and work.parent_id:
                self._emit(tx, w, work.parent_id, "deploy.step.finished", {"step": work.id})
            self.stats["completed"] += 1
        elif op in ("fail", "fail_final"):
            message = self.rng.choice(catalog.FAILURE_MESSAGES)
            failed = Outcome(OutcomeKind.FAILED, message)
            tx.put_execution(replace(x, state=ExecutionState.FAILED, outcome=failed))
            if op == "fail_final":  # an explicit terminal-failure policy
                tx.put_work(replace(tx.work(w.work_id), state=WorkState.FAILED))
            else:
                self._after_failure(tx, w.work_id, w.trigger)
            self.stats["failed"] += 1
        elif op == "handoff":
            handoff = Outcome(OutcomeKind.HANDOFF, "continuing on a larger worker")
            tx.put_execution(replace(x, state=ExecutionState.HANDOFF, outcome=handoff))
            tx.put_work(replace(tx.work(w.work_id), state=WorkState.READY))
            tx.put_execution(
                Execution(
                    id=self.new_id(),
                    work_id=w.work_id,
                    attempt=x.attempt + 1,
                    binding=x.binding,
                    trace_id=self.token(32),
                )
            )
            self.stats["handoffs"] += 1
        elif op == "spawn":
            work = tx.work(w.work_id)
            boundary = tx.latest_sequence()
            steps = self.rng.sample(catalog.CHILD_STEPS, self.rng.randint(2, 3))
            for step in steps:
                key = CorrelationKey(work.keys[0].source, f"{work.keys[0].external_id}/{step}")
                body = {"parent": work.id, "step": step}
                self._emit(tx, w, "", "deploy.step.requested", body, keys=(key,))
            self._park(tx, w, x, boundary, resumable=True, timeout=60)
        elif op in ("park", "park_terminal"):
            self._park(tx, w, x, tx.latest_sequence(), op == "park", timeout=None)

    def _park(
        self,
        tx: Tx,
        w: Worker,
        x: Execution,
        boundary: int,
        resumable: bool,
        timeout: float | None,
    ) -> None:
        """Park the attempt on a Wait: attempt parked (or terminal waiting), Work
        waiting, Wait and its timeout timer registered in this same transaction."""
        work = tx.work(w.work_id)
        flow = FLOW_BY_KIND[work.kind]
        timer_id = self.new_id()
        fire_at = tx.now + seconds(timeout or self.rng.uniform(15, 40))
        template = Event(
            id=self.new_id(),
            source=catalog.TIMER_SOURCE,
            delivery_id=f"timeout/{timer_id}",
            type="timer.timeout",
            work_id=work.id,
            causation_id=w.trigger,
        )
        tx.put_timer(Timer(timer_id, fire_at, template, work_id=work.id, purpose="timeout"))
        waiting = Outcome(OutcomeKind.WAITING, f"waiting for {' or '.join(flow.wake_types)}")
        state = ExecutionState.PARKED if resumable else ExecutionState.WAITING
        tx.put_execution(replace(x, state=state, outcome=waiting))
        tx.put_work(replace(work, state=WorkState.WAITING))
        keys = () if flow.kind == "deploy.service" else work.keys[:1]
        tx.put_wait(
            Wait(
                id=self.new_id(),
                work_id=work.id,
                execution_id=x.id,
                keys=keys,
                types=flow.wake_types,
                after_sequence=boundary,
                timeout_timer_id=timer_id,
                description=waiting.message,
            )
        )
        self.stats["parked"] += 1

    def _emit(
        self,
        tx: Tx,
        w: Worker,
        work_id: str,
        type_: str,
        body: dict[str, Any],
        keys: tuple[CorrelationKey, ...] = (),
    ) -> None:
        """A derived Event caused by the attempt's trigger, accepted in the executor's
        fenced transaction (with its scope, as every acceptance)."""
        flow = FLOW_BY_KIND[w.kind]
        event = Event(
            id=self.new_id(),
            source=f"conduit:{flow.scope}",
            delivery_id=f"emit/{self.token(16)}",
            type=type_,
            work_id=work_id,
            keys=keys,
            causation_id=w.trigger,
            payload=Payload("demo.step", json.dumps(body).encode()),
        )
        stored, _ = tx.accept_event(event)
        tx.set_event_scope(stored.id, flow.scope)
        self.stats["derived"] += 1

    # -- artifacts ------------------------------------------------------------------
    def _publish(self, w: Worker, op: str) -> ArtifactRef:
        """Publish first, attach later: the bytes are committed before any
        transaction names them (an attach that loses its lease leaves an orphan)."""
        if op == "report":
            media, body = "application/json", self._report(w)
        else:
            media, body = "text/plain", self._log_text(w)
        with self.artifacts.create(media) as writer:
            writer.write(body)
            return writer.commit()

    def _log_text(self, w: Worker) -> bytes:
        t = self.now() / 1e9
        lines = [
            f"[{t:.3f}] {w.kind} attempt {w.attempt} ({w.execution_id}) started by {self.owner}"
        ]
        for i in range(self.rng.randint(3, 12)):
            t += self.rng.uniform(0.01, 0.8)
            level = self.rng.choices(["INFO", "DEBUG", "WARN"], [6, 3, 1])[0]
            lines.append(f"[{t:.3f}] {level} step {i + 1}: {self.rng.choice(_LOG_LINES)}")
        return ("\n".join(lines) + "\n").encode()

    def _report(self, w: Worker) -> bytes:
        report = {
            "work_id": w.work_id,
            "kind": w.kind,
            "attempt": w.attempt,
            "owner": self.owner,
            "rows": self.rng.randint(10, 50_000),
            "duration_ms": self.rng.randint(40, 9_000),
            "checks": {name: self.rng.random() > 0.1 for name in ("schema", "totals", "dupes")},
        }
        return json.dumps(report, indent=2).encode()


_LOG_LINES = (
    "fetched configuration",
    "resolved 3 dependencies",
    "request to upstream took 231ms",
    "wrote 1,204 rows",
    "cache miss, recomputing",
    "retrying idempotent call",
    "validated payload schema",
    "uploaded chunk 2/4",
)

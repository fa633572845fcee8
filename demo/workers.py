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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from storage import (
    ArtifactRef,
    Conflict,
    CorrelationKey,
    Execution,
    ExecutionState,
    Fenced,
    LeaseRef,
    Nanos,
    Outcome,
    OutcomeKind,
    StorageError,
    Tx,
    WorkState,
    seconds,
)
from storage.artifacts import FileArtifactStore

from . import catalog, steps
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
    failure: str = ""  # the error its "fail" step ends with ("": one drawn at random)


class Runtime(Protocol):
    """What the workers use of the runtime that holds them (``demo.runtime.Simulator``)."""

    stats: Counter[str]
    rng: random.Random
    owner: str

    def transact(self, what: str, fn: Callable[[Tx], T], lease: LeaseRef | None = None) -> T: ...

    def now(self) -> Nanos: ...

    def new_id(self) -> str: ...

    def token(self, n: int) -> str: ...

    def failed(self, what: str, exc: StorageError) -> None: ...

    def after_failure(self, tx: Tx, work_id: str, cause: str) -> None: ...


class Workers(Mapping[str, Worker]):
    """The attempts a runtime holds, by execution ID, and the steps that advance them.

    A mapping, so the runtime counts its capacity (``len``) and skips attempts it
    already holds (``in``) without knowing how a worker steps."""

    def __init__(self, runtime: Runtime, artifacts: FileArtifactStore) -> None:
        self.runtime = runtime
        self.artifacts = artifacts
        self._held: dict[str, Worker] = {}

    def __getitem__(self, execution_id: str) -> Worker:
        return self._held[execution_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, worker: Worker) -> None:
        self._held[worker.execution_id] = worker

    def _drop(self, worker: Worker) -> None:
        del self._held[worker.execution_id]

    # -- steps --------------------------------------------------------------------
    def advance(self) -> None:
        """One step for every held worker whose next step is due."""
        now = self.runtime.now()
        for worker in [w for w in self._held.values() if w.next_at <= now]:
            self._step(worker)

    def _step(self, w: Worker) -> None:
        op = w.plan[0]
        if op == "abandon":
            # A crashed worker: the lease is never renewed and expires on its own.
            self._drop(w)
            self.runtime.stats["abandoned"] += 1
            return
        ref: ArtifactRef | None = None
        if op in ("log", "report"):
            try:
                ref = self._publish(w, op)  # outside any transaction
            except StorageError as exc:
                self.runtime.failed(f"publish {op}", exc)
        try:
            self.runtime.transact(op, lambda tx: self._execute(tx, w, op, ref), lease=w.lease)
        except Fenced as exc:
            # Cancelled by an operator, or the lease was lost and recovered by someone
            # else: this worker's authority is gone, so it stops.
            self._drop(w)
            self.runtime.stats["fenced"] += 1
            log.info("worker for attempt %s stopped: %s", w.execution_id, exc)
            return
        except Conflict as exc:
            self.runtime.failed(f"{op} on {w.execution_id}", exc)  # retried next tick, reread
            return
        except StorageError as exc:
            # A bug or a broken store: drop the worker; its lease expires and a later
            # scan recovers the attempt from stored state.
            self._drop(w)
            self.runtime.failed(f"{op} on {w.execution_id}", exc)
            return
        w.plan.pop(0)
        if op in catalog.TERMINAL_OPS or op in ("park", "park_terminal", "spawn") or not w.plan:
            self._drop(w)
        else:
            w.next_at = self.runtime.now() + seconds(self.runtime.rng.uniform(1, 5))

    def _execute(self, tx: Tx, w: Worker, op: str, ref: ArtifactRef | None) -> None:
        """One executor transaction (the Guard carries the lease)."""
        x = tx.execution(w.execution_id)
        if op in ("work", "log", "report"):
            x = tx.renew(w.lease, tx.now + seconds(catalog.LEASE_SECONDS))
            if ref is not None:
                # outcome=None: a claim that resumes a parked attempt keeps its waiting
                # outcome on the running record, which put_execution then refuses.
                tx.put_execution(replace(x, artifacts=(*x.artifacts, ref), outcome=None))
                self.runtime.stats["artifacts"] += 1
            return
        if op == "complete":
            _, work = steps.complete(tx, x, tx.work(w.work_id))
            if work.kind == "deploy.step" and work.parent_id:
                self._emit(tx, w, work.parent_id, "deploy.step.finished", {"step": work.id})
            self.runtime.stats["completed"] += 1
        elif op in ("fail", "fail_final"):
            message = w.failure or self.runtime.rng.choice(catalog.FAILURE_MESSAGES)
            steps.fail_attempt(tx, x, message)
            if op == "fail_final":  # an explicit terminal-failure policy
                tx.put_work(replace(tx.work(w.work_id), state=WorkState.FAILED))
            else:
                self.runtime.after_failure(tx, w.work_id, w.trigger)
            self.runtime.stats["failed"] += 1
        elif op == "handoff":
            handoff = Outcome(OutcomeKind.HANDOFF, "continuing on a larger worker")
            tx.put_execution(replace(x, state=ExecutionState.HANDOFF, outcome=handoff))
            tx.put_work(replace(tx.work(w.work_id), state=WorkState.READY))
            steps.next_attempt(tx, self.runtime, x)
            self.runtime.stats["handoffs"] += 1
        elif op == "spawn":
            work = tx.work(w.work_id)
            boundary = tx.latest_sequence()
            rng = self.runtime.rng
            chosen = rng.sample(catalog.CHILD_STEPS, rng.randint(2, 3))
            for step in chosen:
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
        """Park the attempt on a Wait, with a timeout after ``timeout`` seconds (or a
        random 15-40 s), in the executor's transaction."""
        steps.park(
            tx,
            self.runtime,
            tx.work(w.work_id),
            x,
            cause=w.trigger,
            fire_at=tx.now + seconds(timeout or self.runtime.rng.uniform(15, 40)),
            after_sequence=boundary,
            resumable=resumable,
        )
        self.runtime.stats["parked"] += 1

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
        event = steps.derived_event(
            self.runtime, flow.scope, type_, body, w.trigger, work_id=work_id, keys=keys
        )
        stored, _ = tx.accept_event(event)
        tx.set_event_scope(stored.id, flow.scope)
        self.runtime.stats["derived"] += 1

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
        rng, t = self.runtime.rng, self.runtime.now() / 1e9
        owner = self.runtime.owner
        lines = [f"[{t:.3f}] {w.kind} attempt {w.attempt} ({w.execution_id}) started by {owner}"]
        for i in range(rng.randint(3, 12)):
            t += rng.uniform(0.01, 0.8)
            level = rng.choices(["INFO", "DEBUG", "WARN"], [6, 3, 1])[0]
            lines.append(f"[{t:.3f}] {level} step {i + 1}: {rng.choice(_LOG_LINES)}")
        return ("\n".join(lines) + "\n").encode()

    def _report(self, w: Worker) -> bytes:
        rng = self.runtime.rng
        report = {
            "work_id": w.work_id,
            "kind": w.kind,
            "attempt": w.attempt,
            "owner": self.runtime.owner,
            "rows": rng.randint(10, 50_000),
            "duration_ms": rng.randint(40, 9_000),
            "checks": {name: rng.random() > 0.1 for name in ("schema", "totals", "dupes")},
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

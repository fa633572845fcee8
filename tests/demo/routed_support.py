"""Driving the simulated routed-run supervisor in tests: on a memory store and a
clock the test moves, one workflow at a time through ``Supervisor.advance``."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from demo.routed import catalog
from demo.routed.supervisor import Supervisor
from storage.memory import MemoryStore
from storage.routed.enums import AuthorityScope, ControlCommand
from storage.routed.ids import ControlRequestID, WorkflowID
from storage.routed.records import ControlRequest, InvocationRequest
from storage.routed.rules import input_digest
from storage.routed.rules.deployments import intent_digest
from storage.routed.store import RoutedStore

START = 1_767_225_600 * 1_000_000_000  # 2026-01-01T00:00:00Z
STEP = 2_000_000_000  # two simulated seconds between two advances


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> int:
        return self.now

    def advance(self, nanos: int = STEP) -> int:
        self.now += nanos
        return self.now


def supervisor(
    tmp_path: Path, *, seed: int = 1, run: int = 1, store: MemoryStore | None = None
) -> tuple[Supervisor, Clock]:
    clock = Clock()
    routed = RoutedStore(store or MemoryStore(), clock=clock, monotonic=clock)
    sup = Supervisor(routed, tmp_path / "routed", seed=seed, run=run, stats=Counter(), clock=clock)
    sup.start()
    return sup, clock


def request_for(
    fate: str, ref: str = "summarise", spend: str = "5.00", active_ms: int = catalog.ACTIVE_MS
) -> InvocationRequest:
    """A request whose plan (from its intent digest) has ``fate``: the first of a
    fixed series of inputs that draws it."""
    for n in range(500):
        text = json.dumps({"brief": f"test document {n}", "ref": ref})
        req = InvocationRequest(
            requested_deployment_ref=ref,
            input_json=text,
            input_digest=input_digest(text),
            initial_max_active_duration_ms=active_ms,
            initial_attempt_lease_ms=catalog.LEASE_MS,
            initial_max_cost_usd_decimal=spend,
            creation_options_digest="sha256:test",
            idempotency_key=f"test-{fate}-{n}",
            caller_identity="user:test",
        )
        if catalog.plan_for(intent_digest(req), restarted=False).fate == fate:
            return req
    raise AssertionError(f"no input in the series draws {fate}")


def admit(sup: Supervisor, req: InvocationRequest) -> WorkflowID:
    ref = req.requested_deployment_ref
    dep = sup.routed.view(
        lambda r: r.get_deployment(r.resolve_alias(ref).record.target_deployment_id)
    )
    admission = sup.routed.transact(lambda r: r.admit_invocation(req, dep.generation))
    sup.live.add(admission.receipt.workflow_id)
    return admission.receipt.workflow_id


def drive(
    sup: Supervisor,
    clock: Clock,
    workflow_id: WorkflowID,
    until: Callable[[str], bool],
    limit: int = 60,
) -> list[str]:
    """Advance the workflow (two simulated seconds apart) until ``until(what it did)``."""
    done: list[str] = []
    for _ in range(limit):
        done.append(sup.advance(workflow_id, clock.advance()))
        if until(done[-1]):
            return done
    raise AssertionError(f"{workflow_id} never got there: {done}")


def control(
    routed: RoutedStore, workflow_id: WorkflowID, command: ControlCommand, **changes: Any
) -> Any:
    """An operator's request, as the console records it."""
    wf = routed.view(lambda r: r.get_workflow(workflow_id))
    req = ControlRequest(
        control_request_id=ControlRequestID.new(),
        workflow_id=workflow_id,
        command=command,
        expected_generation=wf.generation,
        actor_identity="operator:alice",
        authority_scope=AuthorityScope.CONTROL,
        idempotency_key=f"test-{command.name}-{wf.generation}",
    )
    return routed.transact(lambda r: r.request_control(dataclasses.replace(req, **changes)))


def census(routed: RoutedStore) -> list[tuple[object, ...]]:
    """Every workflow's content without the IDs the store mints at random (invocation,
    workflow, run, node, lease): by admission order and intent digest."""

    def read(r: Any) -> list[tuple[object, ...]]:
        out = []
        for wf in r.list_workflows():
            w = wf.record
            receipt = r.get_invocation(w.invocation_id)
            runs = sorted(
                r.list_runs(w.workflow_id), key=lambda s: (s.record.run_kind, s.record.created_at)
            )
            attempts = [
                (a.record.attempt_number, a.record.status.name, str(a.record.failure_reason))
                for run in runs
                for a in sorted(
                    r.list_attempts(run.record.run_id), key=lambda a: a.record.attempt_number
                )
            ]
            artifacts = sorted(
                (m.relative_path, m.digest)
                for run in runs
                for m in r.list_artifacts(run.record.run_id)
            )
            env = r.get_time_envelope(w.workflow_id).record
            out.append(
                (
                    w.created_at,
                    receipt.invocation_intent_digest,
                    w.status.name,
                    w.workflow_kind,
                    str(w.terminal_reason),
                    w.updated_at,
                    tuple(
                        sorted(
                            (n.record.stage_order, n.record.status.name)
                            for n in r.list_nodes(w.workflow_id)
                        )
                    ),
                    tuple(s.record.status.name for s in runs),
                    tuple(attempts),
                    tuple(artifacts),
                    env.consumed_active_duration_ms,
                    tuple(
                        (c.command.name, c.applied) for c in r.list_control_results(w.workflow_id)
                    ),
                )
            )
        return sorted(out)

    return routed.view(read)

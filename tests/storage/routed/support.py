"""Builders for the routed-run suite: a deployment, a request, an admitted run, a
claimed attempt, and a way to force a row's status past the rules (to test every
transition from every state)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import secrets
from collections.abc import Callable
from enum import Enum
from typing import Any

import pytest

from storage.routed import enums
from storage.routed.enums import AdmissionOutcome, AuthorityScope, ControlCommand
from storage.routed.errors import CASConflict, TransitionError
from storage.routed.ids import (
    AttemptID,
    CheckpointID,
    ChildBatchID,
    ControlRequestID,
    DeploymentID,
    LeaseID,
    ServiceID,
    WorkflowID,
)
from storage.routed.records import (
    AliasRecord,
    AttemptLease,
    AttemptRecord,
    ChildBatch,
    ChildSpawnRequest,
    ControlRequest,
    DeploymentRecord,
    InvocationRequest,
    JoinPolicy,
    MCPServiceBinding,
    SemanticCheckpoint,
    Stored,
)
from storage.routed.rows import TABLES, Row
from storage.routed.rules import (
    Admission,
    ControlOutcome,
    RoutedRules,
    checkpoint_digest,
    input_digest,
)
from storage.routed.rules import specs as S
from storage.routed.rules.base import Spec
from storage.routed.store import RoutedStore

LEASE_MS = 60_000


def deployment(max_runs: int = 0, version: str = "1.0.0", **changes: Any) -> DeploymentRecord:
    dep = DeploymentRecord(
        deployment_id=DeploymentID.new(),
        package_name="pkg.example",
        package_version=version,
        max_concurrent_runs=max_runs,
        bundle_digest=f"sha256:bundle-{version}",
        policy_digest="sha256:policy",
        image_lock_digest="sha256:image",
        provenance_digest="sha256:prov",
        created_by="alice",
        # A parent of child.pkg@1.0 (storage.routed.rules.topology), so tests can make
        # child batches; the other shapes are test_topology's.
        nested_package_digests={
            "stage:0": f"sha256:stage-{version}",
            "child:child.pkg@1.0": "sha256:child",
        },
    )
    return dataclasses.replace(dep, **changes)


def request(
    ref: str, key: str = "key-1", caller: str = "alice", **changes: Any
) -> InvocationRequest:
    text = changes.pop("input_json", json.dumps({"q": "hello"}))
    req = InvocationRequest(
        requested_deployment_ref=ref,
        input_json=text,
        input_digest=input_digest(text),
        initial_max_active_duration_ms=3_600_000,
        initial_attempt_lease_ms=LEASE_MS,
        initial_max_cost_usd_decimal="5.00",
        creation_options_digest="sha256:opts",
        idempotency_key=key,
        caller_identity=caller,
    )
    return dataclasses.replace(req, **changes)


def setup_deployment(routed: RoutedStore, **changes: Any) -> Stored[DeploymentRecord]:
    return routed.transact(lambda r: r.create_deployment(deployment(**changes)))


def alias(name: str, dep: DeploymentRecord, generation: int = 0) -> AliasRecord:
    return AliasRecord(name, dep.deployment_id, dep.package_version, "alice", generation)


def admit(routed: RoutedStore, key: str = "key-1", **dep_changes: Any) -> Admission:
    dep = setup_deployment(routed, **dep_changes)
    return routed.transact(
        lambda r: r.admit_invocation(request(dep.record.deployment_id, key), dep.generation)
    )


def first_attempt(routed: RoutedStore, admission: Admission) -> Stored[AttemptRecord]:
    r = admission.receipt
    return routed.transact(
        lambda rules: rules.create_attempt(
            AttemptRecord(AttemptID.new(), r.run_id, r.workflow_id, 1)
        )
    )


def claimed(routed: RoutedStore, admission: Admission) -> Stored[AttemptRecord]:
    created = first_attempt(routed, admission)
    return routed.transact(
        lambda r: r.claim_attempt(created.record.attempt_id, created.generation, LEASE_MS)
    )


def control(
    routed: RoutedStore,
    workflow_id: WorkflowID,
    command: ControlCommand,
    key: str | None = None,
    scope: AuthorityScope = AuthorityScope.CONTROL,
    **changes: Any,
) -> ControlRequest:
    generation = routed.view(lambda r: r.get_workflow(workflow_id)).generation
    req = ControlRequest(
        control_request_id=ControlRequestID.new(),
        workflow_id=workflow_id,
        command=command,
        expected_generation=generation,
        actor_identity="op",
        authority_scope=scope,
        idempotency_key=key or f"{command.name}-{generation}",
    )
    return dataclasses.replace(req, **changes)


def send(routed: RoutedStore, req: ControlRequest) -> ControlOutcome:
    """Send ``req`` in a transaction of its own: ``control`` built it beforehand,
    reading the workflow's generation in a View (never inside the transaction)."""
    return routed.transact(lambda r: r.request_control(req))


def checkpoint(attempt: AttemptRecord, sequence: int = 1, safe: bool = True) -> SemanticCheckpoint:
    assert attempt.lease is not None
    cp = SemanticCheckpoint(
        checkpoint_id=CheckpointID.new(),
        attempt_id=attempt.attempt_id,
        run_id=attempt.run_id,
        workflow_id=attempt.workflow_id,
        lease_id=attempt.lease.lease_id,
        phase=f"phase-{sequence}",
        completed_work=("a",),
        remaining_work=("b",),
        artifact_references=(),
        last_committed_action="wrote a",
        safe_to_resume=safe,
        checkpoint_digest="",
        artifact_meta_digest="sha256:none",
        sequence=sequence,
    )
    return dataclasses.replace(cp, checkpoint_digest=checkpoint_digest(cp))


def force(rules: RoutedRules, spec: Spec[Any], record: Any) -> Stored[Any]:
    """Write ``record`` over its row, bypassing every rule (test setup only): the row's
    generation moves on by one, as a real write would."""
    current = rules._require(spec, spec.key(record))
    generation = current.generation + 1
    if hasattr(record, "generation"):
        record = dataclasses.replace(record, generation=generation)
    row: Row = rules._row(spec, record, generation)
    assert rules.rows.update(spec.table, row, current.generation)
    return Stored(record, generation)


class Rollback(Exception):
    """Raised to end a probing transaction without committing it."""


def probe(routed: RoutedStore, body: Any) -> Any:
    """Run ``body(rules)`` in a transaction that never commits; returns its result."""
    box: list[Any] = []

    def run(rules: RoutedRules) -> None:
        box.append(body(rules))
        raise Rollback

    with contextlib.suppress(Rollback):
        routed.transact(run)
    return box[0]


def snapshot(routed: RoutedStore) -> dict[str, list[tuple[str, str, int]]]:
    """Every routed row (key, body, generation) by table: equal before and after a
    refused call proves it recorded nothing."""
    return routed.view(
        lambda r: {t: [(x.key, x.body, x.generation) for x in r.rows.scan(t)] for t in TABLES}
    )


def written(store: Any) -> object:
    """What a write would change, to compare before and after a read: the double's
    published state (a commit replaces it, whatever it wrote) or, on the ORM, the
    contract's metadata rows (every commit moves the clock row) and the routed ones."""
    from storage.memory import MemoryStore

    if isinstance(store, MemoryStore):
        state = store._state
        return (id(state), state.version, state.last_now)
    from django.db import connections

    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT key, value FROM conduit_meta ORDER BY key")
        meta = cursor.fetchall()
        cursor.execute("SELECT key, body, generation FROM conduit_routed_meta ORDER BY key")
        return (meta, cursor.fetchall())


SPEC: dict[str, tuple[type[Enum], dict[str, set[str]]]] = {
    "attempt": (
        enums.AttemptStatus,
        {
            "PENDING": {"RUNNING", "CANCELLED", "FAILED"},
            "RUNNING": {"NEEDS_REPLAN", "SUCCEEDED", "FAILED", "FENCED", "CANCELLED"},
            "NEEDS_REPLAN": {"RUNNING", "CANCELLED", "FAILED"},
        },
    ),
    "child_batch": (
        enums.ChildBatchStatus,
        {
            "INTENT": {"ALLOCATED", "CANCELLED"},
            "ALLOCATED": {"RUNNING", "CANCELLED"},
            "RUNNING": {"PAUSE_REQUESTED", "JOINING", "FAILED", "CANCELLED"},
            "PAUSE_REQUESTED": {"PAUSED", "RUNNING", "STOPPING", "CANCELLED"},
            "PAUSED": {"RUNNING", "STOPPING", "CANCELLED"},
            "JOINING": {"SUCCEEDED", "FAILED", "CANCELLED"},
            "STOPPING": {"STOPPED", "FAILED", "CANCELLED"},
        },
    ),
    "node": (
        enums.NodeStatus,
        {
            "PENDING": {"READY", "CANCELLED", "SKIPPED"},
            "READY": {"LAUNCHING", "CANCELLED", "SKIPPED"},
            "LAUNCHING": {"RUNNING", "FAILED", "CANCELLED"},
            "RUNNING": {"PAUSE_REQUESTED", "SUCCEEDED", "FAILED", "CANCELLED"},
            "PAUSE_REQUESTED": {"PAUSED", "RUNNING", "CANCELLED", "FAILED"},
            "PAUSED": {"RUNNING", "NEEDS_REPLAN", "CANCELLED"},
            "NEEDS_REPLAN": {"RUNNING", "CANCELLED"},
        },
    ),
    "run": (
        enums.RunStatus,
        {
            "PENDING": {"RUNNING", "CANCELLED", "FAILED"},
            "RUNNING": {
                "PAUSE_REQUESTED",
                "SUCCEEDED",
                "FAILED",
                "CANCELLED",
                "BUDGET_EXCEEDED",
                "EXPIRED",
            },
            "PAUSE_REQUESTED": {
                "PAUSED",
                "RUNNING",
                "CANCELLED",
                "FAILED",
                "BUDGET_EXCEEDED",
                "EXPIRED",
            },
            "PAUSED": {"RUNNING", "NEEDS_REPLAN", "CANCELLED", "FAILED", "EXPIRED"},
            "NEEDS_REPLAN": {"RUNNING", "CANCELLED", "FAILED", "EXPIRED"},
        },
    ),
    "service": (
        enums.ServiceStatus,
        {
            "DECLARED": {"STARTING", "FAILED"},
            "STARTING": {"READY", "FAILED", "STOPPED"},
            "READY": {"UNHEALTHY", "STOPPING", "FAILED"},
            "UNHEALTHY": {"READY", "FENCED", "STOPPING", "FAILED"},
            "FENCED": {"STOPPING", "FAILED"},
            "STOPPING": {"STOPPED", "FAILED"},
        },
    ),
    "workflow": (
        enums.WorkflowStatus,
        {
            "PENDING": {"RUNNING", "CANCELLED", "FAILED"},
            "RUNNING": {
                "PAUSE_REQUESTED",
                "SUCCEEDED",
                "FAILED",
                "CANCELLED",
                "BUDGET_EXCEEDED",
                "EXPIRED",
            },
            "PAUSE_REQUESTED": {
                "PAUSED",
                "RUNNING",
                "CANCELLED",
                "FAILED",
                "BUDGET_EXCEEDED",
                "EXPIRED",
            },
            "PAUSED": {"RUNNING", "NEEDS_REPLAN", "CANCELLED", "FAILED", "EXPIRED"},
            "NEEDS_REPLAN": {"RUNNING", "CANCELLED", "FAILED", "EXPIRED"},
        },
    ),
}


def _service(wf_id: Any) -> MCPServiceBinding:
    return MCPServiceBinding(ServiceID.new(), wf_id, "svc.pkg", "1.0", "search")


def _batch(wf_id: Any, node_id: Any) -> ChildBatch:
    return ChildBatch(
        child_batch_id=ChildBatchID.new(),
        workflow_id=wf_id,
        parent_node_id=node_id,
        spawn_request=ChildSpawnRequest("child.pkg", "1.0", 4, 2, "{}"),
        join_policy=JoinPolicy("join_all"),
    )


def counts(routed: RoutedStore) -> dict[str, int]:
    return routed.view(lambda r: {t: len(r.rows.scan(t)) for t in TABLES})


STEPS = ["receipt", "idempotency", "workflow", "run", "node", "envelope"]


class Boom(Exception):
    pass


# The cases below are test bodies shared by their test (test_store_writes, test_admission)
# and by the negative controls, which run them against a cheating store.


def check_spec_transitions(
    routed: RoutedStore, world: dict[str, Stored[Any]], resource: str
) -> None:
    kind, allowed = SPEC[resource]
    spec, write = WRITERS[resource]
    start = world[resource].record
    if resource == "attempt":  # forced into each state with a live lease to write under
        start = dataclasses.replace(start, lease=live_lease(start))
    for a in kind:
        for b in kind:
            if a is b:
                continue

            def attempt(rules: RoutedRules, a: Enum = a, b: Enum = b) -> tuple[object, ...]:
                forced = force(rules, spec, dataclasses.replace(start, status=a))
                try:
                    write(rules, dataclasses.replace(forced.record, status=b), forced.generation)
                except TransitionError as exc:
                    return ("refused", exc.resource, exc.from_state, exc.to_state)
                return ("allowed",)

            ok = b.name in allowed.get(a.name, set())
            expected = ("allowed",) if ok else ("refused", resource, a, b)
            assert probe(routed, attempt) == expected, f"{resource} {a.name} -> {b.name}"


def check_stale_generations(
    routed: RoutedStore, world: dict[str, Stored[Any]], resource: str
) -> None:
    _spec, write = WRITERS[resource]
    stored = world[resource]
    before = snapshot(routed)
    for stale in (stored.generation - 1, stored.generation + 1, 0):
        with pytest.raises(CASConflict):
            routed.transact(lambda r, g=stale: write(r, stored.record, g))
    assert snapshot(routed) == before
    # The current generation writes, and the generation moves on by one.
    fresh = routed.transact(lambda r: write(r, stored.record, stored.generation))
    assert fresh.generation == stored.generation + 1


def check_replay(
    routed: RoutedStore,
) -> None:
    dep = setup_deployment(routed)
    first = routed.transact(
        lambda r: r.admit_invocation(request(dep.record.deployment_id), dep.generation)
    )
    before = counts(routed)
    again = routed.transact(
        lambda r: r.admit_invocation(request(dep.record.deployment_id), dep.generation)
    )
    assert again.outcome is AdmissionOutcome.IDEMPOTENT_REPLAY
    assert again.receipt == first.receipt
    assert counts(routed) == before


def make_world(routed: RoutedStore) -> dict[str, Stored[Any]]:
    """One of every mutable record, freshly created (under a fresh key each time)."""
    admission = admit(routed, f"world-{secrets.token_hex(8)}")
    receipt = admission.receipt
    attempt = first_attempt(routed, admission)
    [node] = routed.view(lambda r: r.list_nodes(receipt.workflow_id))
    service = routed.transact(lambda r: r.register_service(_service(receipt.workflow_id)))
    batch = routed.transact(
        lambda r: r.create_child_batch(_batch(receipt.workflow_id, node.record.node_id))
    )
    return {
        "deployment": routed.view(lambda r: r.get_deployment(receipt.resolved_deployment_id)),
        "workflow": routed.view(lambda r: r.get_workflow(receipt.workflow_id)),
        "run": routed.view(lambda r: r.get_run(receipt.run_id)),
        "attempt": attempt,
        "node": node,
        "service": service,
        "child_batch": batch,
        "envelope": routed.view(lambda r: r.get_time_envelope(receipt.workflow_id)),
    }


# resource -> (spec, store write taking (rules, record, expected))
WRITERS: dict[str, tuple[Any, Callable[[RoutedRules, Any, int], Any]]] = {
    "run": (S.RUN, lambda r, rec, g: r.update_run(rec, g)),
    # An attempt writes under its lease (one that runs must hold one: live_lease).
    "attempt": (
        S.ATTEMPT,
        lambda r, rec, g: r.update_attempt(rec, g, rec.lease.lease_id if rec.lease else None),
    ),
    "workflow": (S.WORKFLOW, lambda r, rec, g: r.update_workflow(rec, g)),
    "node": (S.NODE, lambda r, rec, g: r.update_node(rec, g)),
    "service": (S.SERVICE, lambda r, rec, g: r.update_service(rec, g)),
    "child_batch": (S.CHILD_BATCH, lambda r, rec, g: r.update_child_batch(rec, g)),
}


def live_lease(attempt: AttemptRecord) -> AttemptLease:
    """A lease that never expires in a test, for records forced past the rules (the
    transition maps' tests write attempts in every state, RUNNING ones included)."""
    far = 2**62
    return AttemptLease(
        lease_id=LeaseID.new(),
        attempt_id=attempt.attempt_id,
        run_id=attempt.run_id,
        duration_ms=LEASE_MS,
        acquired_at=0,
        expires_at=far,
        lease_token="forced",
        acquired_monotonic_ns=0,
        expires_monotonic_ns=far,
    )

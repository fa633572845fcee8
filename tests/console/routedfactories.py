"""Routed runs for console tests, built through the public store (``storage.default.
default_routed_store``: the stores' methods, never the ORM), with artifacts through
the artifact workspace and journals through the control journal under the test's
``ROUTED_STATE_DIR``.

Shapes: a standalone deployment (with an MCP service and a child allowlist, so a
workflow can have services and child batches), a two-stage pipeline, aliases over
them, invocations by caller and key, and workflows moved on by the supervisor's own
writes: claimed (running under a lease), failed with a reason, succeeded, paused or
cancelled by a control request, an expired lease.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

from django.conf import settings

from storage.default import default_routed_store
from storage.routed.enums import (
    AttemptStatus,
    AuthorityScope,
    ChildBatchStatus,
    ControlCommand,
    DataClassification,
    FailureReason,
    FailureScope,
    InvokeJobEventKind,
    RecoveryDisposition,
    ResumeCapability,
    RunStatus,
    WorkflowStatus,
)
from storage.routed.ids import (
    AttemptID,
    ChildBatchID,
    ChildResultID,
    ControlRequestID,
    DeploymentID,
    HandoffID,
    RunID,
    ServiceID,
    WorkflowID,
)
from storage.routed.journal import InvokeJobEvent, open_control_journal
from storage.routed.records import (
    AliasRecord,
    ArtifactMetadata,
    AttemptRecord,
    ChildBatch,
    ChildResult,
    ChildSpawnRequest,
    ControlRequest,
    DeploymentRecord,
    HandoffEnvelope,
    InvocationRequest,
    JoinPolicy,
    MCPServiceBinding,
    Stored,
)
from storage.routed.rules import Admission, ControlOutcome, input_digest
from storage.routed.store import RoutedStore
from storage.routed.workspace import new_artifact_workspace

LEASE_MS = 60_000
_keys = itertools.count(1)


def routed() -> RoutedStore:
    return default_routed_store()


def deployment(
    name: str = "pkg.checkout",
    version: str = "1.0.0",
    *,
    stages: int = 1,
    max_runs: int = 0,
    service: bool = True,
    children: bool = True,
) -> DeploymentRecord:
    """A deployment: ``stages`` > 1 is a pipeline (no service or children); else a
    standalone package, with a search service and a child allowlist when asked."""
    digests = {f"stage:{n}": f"sha256:{name}-{version}-stage{n}" for n in range(stages)}
    if stages == 1 and service:
        digests["service:search:svc.search@1.0"] = "sha256:svc-search"
    if stages == 1 and children:
        digests["child:child.pkg@1.0"] = "sha256:child"
    dep = DeploymentRecord(
        deployment_id=DeploymentID.new(),
        package_name=name,
        package_version=version,
        max_concurrent_runs=max_runs,
        bundle_digest=f"sha256:bundle-{name}-{version}",
        policy_digest="sha256:policy",
        image_lock_digest="sha256:image",
        provenance_digest="sha256:prov",
        created_by="alice",
        nested_package_digests=digests,
    )
    return routed().transact(lambda r: r.create_deployment(dep)).record


def alias(name: str, dep: DeploymentRecord) -> AliasRecord:
    """Point alias ``name`` at ``dep`` (creating it, or repointing it: a new generation)."""
    store = routed()
    current = next(
        (a.record for a in store.view(lambda r: r.list_aliases()) if a.record.alias == name), None
    )
    generation = current.generation if current else 0
    record = AliasRecord(name, dep.deployment_id, dep.package_version, "alice", generation)
    return store.transact(lambda r: r.compare_and_swap_alias(record)).record


def invoke(
    ref: str,
    *,
    key: str = "",
    caller: str = "svc:shop",
    payload: object = None,
    max_active_ms: int = 3_600_000,
) -> Admission:
    """Admit an invocation of ``ref`` (a deployment ID or an alias)."""
    store = routed()
    text = json.dumps(payload if payload is not None else {"order": next(_keys)})
    request = InvocationRequest(
        requested_deployment_ref=ref,
        input_json=text,
        input_digest=input_digest(text),
        initial_max_active_duration_ms=max_active_ms,
        initial_attempt_lease_ms=LEASE_MS,
        initial_max_cost_usd_decimal="5.00",
        creation_options_digest="sha256:opts",
        idempotency_key=key or f"key-{next(_keys)}",
        caller_identity=caller,
    )
    dep_id = (
        ref
        if ref.startswith(DeploymentID.prefix)
        else store.view(lambda r: r.resolve_alias(ref)).record.target_deployment_id
    )
    generation = store.view(lambda r: r.get_deployment(DeploymentID(dep_id))).generation
    return store.transact(lambda r: r.admit_invocation(request, generation))


def claim(admission: Admission, lease_ms: int = LEASE_MS) -> Stored[AttemptRecord]:
    """The top-level run's next attempt, claimed: the workflow is RUNNING under a lease."""
    store = routed()
    r = admission.receipt
    number = len(store.view(lambda rules: rules.list_attempts(r.run_id))) + 1
    created = store.transact(
        lambda rules: rules.create_attempt(
            AttemptRecord(AttemptID.new(), r.run_id, r.workflow_id, number)
        )
    )
    return store.transact(
        lambda r: r.claim_attempt(created.record.attempt_id, created.generation, lease_ms)
    )


def running(
    ref: str | None = None, **invoke_args: object
) -> tuple[Admission, Stored[AttemptRecord]]:
    """A workflow running its first attempt (of a fresh deployment unless ``ref``)."""
    admission = invoke(ref or deployment().deployment_id, **invoke_args)  # type: ignore[arg-type]
    return admission, claim(admission)


def end_attempt(
    attempt: Stored[AttemptRecord],
    status: AttemptStatus = AttemptStatus.FAILED,
    *,
    reason: FailureReason | None = FailureReason.MODEL_TIMEOUT,
    scope: FailureScope | None = FailureScope.MODEL_CALL,
    disposition: RecoveryDisposition | None = RecoveryDisposition.NOT_NEEDED,
    resume: ResumeCapability | None = ResumeCapability.NONE,
) -> Stored[AttemptRecord]:
    """The supervisor's write ending an attempt under its lease."""
    record = attempt.record
    assert record.lease is not None
    failed = status is not AttemptStatus.SUCCEEDED
    ended = dataclasses.replace(
        record,
        status=status,
        failure_reason=reason if failed else None,
        failure_scope=scope if failed else None,
        recovery_disposition=disposition,
        resume_capability=resume,
    )
    return routed().transact(
        lambda r: r.update_attempt(ended, attempt.generation, record.lease.lease_id)
    )


def finish(
    admission: Admission,
    status: WorkflowStatus,
    reason: FailureReason | None = None,
) -> None:
    """The supervisor ends the top-level run and the workflow (after its attempt)."""
    store = routed()
    r = admission.receipt
    run = store.view(lambda rules: rules.get_run(r.run_id))
    run_status = RunStatus[status.name]
    store.transact(
        lambda r: r.update_run(dataclasses.replace(run.record, status=run_status), run.generation)
    )
    wf = store.view(lambda rules: rules.get_workflow(r.workflow_id))
    store.transact(
        lambda r: r.update_workflow(
            dataclasses.replace(wf.record, status=status, terminal_reason=reason), wf.generation
        )
    )


def failed(
    ref: str | None = None, reason: FailureReason = FailureReason.MODEL_TIMEOUT
) -> tuple[Admission, Stored[AttemptRecord]]:
    """A workflow whose one attempt failed with ``reason``, ended FAILED with it."""
    admission, attempt = running(ref)
    ended = end_attempt(attempt, reason=reason)
    finish(admission, WorkflowStatus.FAILED, reason)
    return admission, ended


def control(
    workflow_id: WorkflowID,
    command: ControlCommand,
    *,
    actor: str = "operator:alice",
    key: str = "",
) -> ControlOutcome:
    store = routed()
    req = ControlRequest(
        control_request_id=ControlRequestID.new(),
        workflow_id=workflow_id,
        command=command,
        expected_generation=store.view(lambda r: r.get_workflow(workflow_id)).generation,
        actor_identity=actor,
        authority_scope=AuthorityScope.CONTROL,
        idempotency_key=key or f"{command.name}-{next(_keys)}",
    )
    return store.transact(lambda r: r.request_control(req))


def state_dir() -> Path:
    return Path(settings.ROUTED_STATE_DIR)


def artifact(attempt: AttemptRecord, rel_path: str, content: bytes) -> ArtifactMetadata:
    """A worker's file written into the run's workspace and accepted (hashed, recorded)."""
    root = state_dir() / "runs" / attempt.run_id / "artifacts"
    ws = new_artifact_workspace(root, attempt.run_id, store=routed())
    target = ws.root / rel_path
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    target.write_bytes(content)
    target.chmod(0o600)
    return ws.validate_and_accept(rel_path, attempt.attempt_id)


def journal(attempt: AttemptRecord, events: int = 2) -> None:
    """``events`` journal events of the attempt (accepted, then progress heartbeats)."""
    with open_control_journal(state_dir(), attempt.run_id, attempt.attempt_id) as j:
        for n in range(1, events + 1):
            kind = InvokeJobEventKind.ACCEPTED if n == 1 else InvokeJobEventKind.PROGRESS_REF
            j.append(InvokeJobEvent(n, 0, kind, json.dumps({"n": n})))


def service(workflow_id: WorkflowID) -> Stored[MCPServiceBinding]:
    """The workflow's declared search service (admission declares it), as stored."""
    found = routed().view(lambda r: r.list_services(workflow_id))
    if found:
        return found[0]
    svc = MCPServiceBinding(ServiceID.new(), workflow_id, "svc.search", "1.0", "search")
    return routed().transact(lambda r: r.register_service(svc))


def child_batch(admission: Admission, results: int = 1) -> Stored[ChildBatch]:
    """A join-all batch of two children under the workflow's node, ``results`` of them
    reported succeeded."""
    store = routed()
    wf_id = admission.receipt.workflow_id
    [node] = store.view(lambda r: r.list_nodes(wf_id))
    batch = store.transact(
        lambda r: r.create_child_batch(
            ChildBatch(
                child_batch_id=ChildBatchID.new(),
                workflow_id=wf_id,
                parent_node_id=node.record.node_id,
                spawn_request=ChildSpawnRequest("child.pkg", "1.0", 4, 2, "{}"),
                join_policy=JoinPolicy("join_all"),
            )
        )
    )
    children = (RunID.new(), RunID.new())
    batch = store.transact(
        lambda r: r.update_child_batch(
            dataclasses.replace(
                batch.record, status=ChildBatchStatus.ALLOCATED, child_run_ids=children
            ),
            batch.generation,
        )
    )
    for child in children[:results]:
        store.transact(
            lambda r, child=child: r.commit_child_result(
                ChildResult(
                    ChildResultID.new(),
                    batch.record.child_batch_id,
                    child,
                    RunStatus.SUCCEEDED,
                    '{"ok":1}',
                )
            )
        )
    return batch


def pipeline(stages: int = 2) -> tuple[Admission, Stored[AttemptRecord]]:
    """A pipeline workflow whose first stage succeeded and handed off to the second."""
    dep = deployment("pkg.etl", stages=stages)
    admission, attempt = running(dep.deployment_id)
    store = routed()
    nodes = sorted(
        store.view(lambda r: r.list_nodes(admission.receipt.workflow_id)),
        key=lambda n: n.record.stage_order,
    )
    end_attempt(attempt, AttemptStatus.SUCCEEDED)
    store.transact(
        lambda r: r.commit_handoff(
            HandoffEnvelope(
                HandoffID.new(),
                admission.receipt.workflow_id,
                nodes[0].record.node_id,
                nodes[1].record.node_id,
                '{"rows": 10}',
                DataClassification.INTERNAL,
            )
        )
    )
    return admission, attempt


def paused(ref: str | None = None) -> Admission:
    """A workflow paused at a boundary: pause asked while its attempt ran, then the
    attempt stopped (the store pauses it in that transaction and freezes the envelope)."""
    admission, attempt = running(ref)
    control(admission.receipt.workflow_id, ControlCommand.PAUSE)
    end_attempt(attempt, AttemptStatus.CANCELLED, reason=None, scope=None)
    return admission


def needs_replan(ref: str | None = None) -> Admission:
    """A paused workflow the supervisor marked NEEDS_REPLAN (the map allows it from
    PAUSED only)."""
    admission = paused(ref)
    wf = routed().view(lambda r: r.get_workflow(admission.receipt.workflow_id))
    routed().transact(
        lambda r: r.update_workflow(
            dataclasses.replace(wf.record, status=WorkflowStatus.NEEDS_REPLAN), wf.generation
        )
    )
    return admission

"""Routed-run records: frozen dataclasses with the spec's JSON field names.

Differences from the Go structs, each deliberate:

- Times are integer UTC nanoseconds (``Nanos``), the contract's clock; a store sets
  them from the transaction's trusted ``now``, never from the caller.
- Every record carries ``schema_version`` ("0.3.0", resolution 16), last so that it can
  default.
- Lists are tuples (records are immutable); maps are ``dict[str, str]``.
- ``generation`` stays a field where Go has one (deployment, alias, workflow, desired
  state); the store keeps it equal to the row's generation. The other mutable records
  carry their generation beside the record (``Stored.generation``, resolution 3).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TypeVar

from .codec import SCHEMA_VERSION, marshal_canonical
from .enums import (
    AdmissionOutcome,
    AttemptStatus,
    AuthorityScope,
    ChildBatchStatus,
    ControlCommand,
    DataClassification,
    DeploymentStatus,
    FailureReason,
    FailureScope,
    NodeStatus,
    RecoveryDisposition,
    ResumeCapability,
    ResumeReason,
    RunStatus,
    ServiceStatus,
    WorkflowStatus,
)
from .errors import InvalidArgument
from .ids import (
    ArtifactID,
    AttemptID,
    CheckpointID,
    ChildBatchID,
    ChildResultID,
    ControlRequestID,
    DeploymentID,
    HandoffID,
    InvocationID,
    LeaseID,
    LimitAmendmentID,
    NodeID,
    RunID,
    ServiceID,
    WorkflowID,
)

R = TypeVar("R")
Nanos = int


@dataclass(frozen=True)
class Stored[R]:
    """A record as read: the record and its row generation (1 on create)."""

    record: R
    generation: int


# -- deployments and admission -----------------------------------------------------
@dataclass(frozen=True)
class DeploymentRecord:
    deployment_id: DeploymentID
    package_name: str
    package_version: str
    max_concurrent_runs: int
    bundle_digest: str
    policy_digest: str
    image_lock_digest: str
    provenance_digest: str
    created_by: str
    status: DeploymentStatus = DeploymentStatus.ACTIVE
    generation: int = 0
    nested_package_digests: dict[str, str] = field(default_factory=dict)
    created_at: Nanos = 0
    activated_at: Nanos | None = None
    deactivated_at: Nanos | None = None
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class AliasRecord:
    alias: str
    target_deployment_id: DeploymentID
    target_version: str
    updated_by: str
    generation: int = 0
    updated_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class InvocationRequest:
    requested_deployment_ref: str
    input_json: str
    input_digest: str
    initial_max_active_duration_ms: int
    initial_attempt_lease_ms: int
    initial_max_cost_usd_decimal: str
    creation_options_digest: str
    idempotency_key: str
    caller_identity: str
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class InvocationReceipt:
    invocation_id: InvocationID
    workflow_id: WorkflowID
    run_id: RunID
    resolved_deployment_id: DeploymentID
    resolved_deployment_version: str
    resolved_deployment_digest: str
    requested_deployment_ref: str
    invocation_intent_digest: str
    caller_identity: str
    initial_max_active_duration_ms: int
    initial_attempt_lease_ms: int
    initial_max_cost_usd_decimal: str
    admitted_at: Nanos
    nested_package_digests: dict[str, str] = field(default_factory=dict)
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class DurableIdempotencyRecord:
    invocation_id: InvocationID
    caller_identity: str
    idempotency_key: str
    invocation_intent_digest: str
    outcome: AdmissionOutcome
    created_at: Nanos
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class RestartProvenance:
    source_run_id: RunID
    source_workflow_id: WorkflowID
    source_invocation_id: InvocationID
    source_deployment_id: DeploymentID
    source_deployment_version: str
    original_input_digest: str
    restarted_at: Nanos
    schema_version: str = SCHEMA_VERSION


# -- workflows and their graph -----------------------------------------------------
@dataclass(frozen=True)
class WorkflowRecord:
    workflow_id: WorkflowID
    workflow_kind: str  # standalone, pipeline, parent_child
    invocation_id: InvocationID
    deployment_id: DeploymentID
    policy_digest: str
    max_active_duration_ms: int
    max_attempt_lease_ms: int
    max_llm_spend_decimal: str
    status: WorkflowStatus = WorkflowStatus.PENDING
    generation: int = 0
    catalog_snapshot_ref: str | None = None
    authority_generation: int = 1
    created_at: Nanos = 0
    updated_at: Nanos = 0
    terminated_at: Nanos | None = None
    terminal_reason: FailureReason | None = None
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class PipelineNode:
    node_id: NodeID
    workflow_id: WorkflowID
    stage_order: int
    package_name: str
    package_version: str
    status: NodeStatus = NodeStatus.PENDING
    run_id: RunID | None = None
    incoming_handoff_id: HandoffID | None = None
    created_at: Nanos = 0
    updated_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class NodeStateTransition:
    node_id: NodeID
    from_state: NodeStatus
    to_state: NodeStatus
    timestamp: Nanos
    reason: str | None = None
    # Not in the Go struct: the transition's number within its node (1, 2, ...), so
    # two transitions of one node in one transaction keep their order and keys.
    sequence: int = 1
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class MCPServiceBinding:
    service_id: ServiceID
    workflow_id: WorkflowID
    package_name: str
    package_version: str
    service_name: str
    status: ServiceStatus = ServiceStatus.DECLARED
    created_at: Nanos = 0
    updated_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class ArtifactRef:
    artifact_id: str
    workflow_id: WorkflowID
    run_id: RunID
    attempt_id: AttemptID
    logical_ref: str
    digest: str
    byte_size: int
    media_type: str
    classification: DataClassification
    created_at: Nanos
    node_id: NodeID | None = None
    schema: str | None = None
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class HandoffEnvelope:
    handoff_id: HandoffID
    workflow_id: WorkflowID
    source_node_id: NodeID
    target_node_id: NodeID
    context_json: str
    classification: DataClassification
    artifact_refs: tuple[ArtifactRef, ...] = ()
    created_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class ChildSpawnRequest:
    child_package_name: str
    child_package_version: str
    max_fan_out: int
    max_concurrency: int
    input_json_template: str
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class JoinPolicy:
    mode: str  # join_all, all_first
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class ChildBatch:
    child_batch_id: ChildBatchID
    workflow_id: WorkflowID
    parent_node_id: NodeID
    spawn_request: ChildSpawnRequest
    join_policy: JoinPolicy
    status: ChildBatchStatus = ChildBatchStatus.INTENT
    child_run_ids: tuple[RunID, ...] = ()
    created_at: Nanos = 0
    updated_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class ChildResult:
    child_result_id: ChildResultID
    child_batch_id: ChildBatchID
    child_run_id: RunID
    status: RunStatus
    output_json: str | None = None
    failure_reason: FailureReason | None = None
    created_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


# -- runs and attempts ---------------------------------------------------------------
@dataclass(frozen=True)
class RunRecord:
    run_id: RunID
    workflow_id: WorkflowID
    run_kind: str  # standalone, pipeline_stage, parent, child, mcp_service
    policy_digest: str
    max_active_duration_ms: int
    max_attempt_lease_ms: int
    max_llm_spend_decimal: str
    status: RunStatus = RunStatus.PENDING
    catalog_snapshot_ref: str | None = None
    node_id: NodeID | None = None
    created_at: Nanos = 0
    updated_at: Nanos = 0
    terminated_at: Nanos | None = None
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class AttemptLease:
    lease_id: LeaseID
    attempt_id: AttemptID
    run_id: RunID
    duration_ms: int
    acquired_at: Nanos
    expires_at: Nanos
    lease_token: str
    # The lease on the store's monotonic axis (``storage.routed.clock``): what expiry
    # is decided on; ``acquired_at``/``expires_at`` are the wall-time evidence. None
    # only on a lease minted before record format 8, decided on wall time.
    acquired_monotonic_ns: int | None = None
    expires_monotonic_ns: int | None = None
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class AttemptRecord:
    attempt_id: AttemptID
    run_id: RunID
    workflow_id: WorkflowID
    attempt_number: int
    status: AttemptStatus = AttemptStatus.PENDING
    failure_reason: FailureReason | None = None
    failure_scope: FailureScope | None = None
    recovery_disposition: RecoveryDisposition | None = None
    resume_capability: ResumeCapability | None = None
    lease: AttemptLease | None = None
    created_at: Nanos = 0
    updated_at: Nanos = 0
    terminated_at: Nanos | None = None
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class LedgerEntry:
    """One ``append_ledger`` entry: free text from the caller, numbered per run."""

    run_id: RunID
    sequence: int
    entry: str
    created_at: Nanos
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class SemanticCheckpoint:
    checkpoint_id: CheckpointID
    attempt_id: AttemptID
    run_id: RunID
    workflow_id: WorkflowID
    lease_id: LeaseID
    phase: str
    completed_work: tuple[str, ...]
    remaining_work: tuple[str, ...]
    artifact_references: tuple[str, ...]
    last_committed_action: str
    safe_to_resume: bool
    checkpoint_digest: str
    artifact_meta_digest: str
    sequence: int
    node_id: NodeID | None = None
    created_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION

    def compute_digest(self) -> str:
        """SHA-256 hex of the canonical semantic content (Go ``ComputeDigest``): phase,
        completed and remaining work, last committed action, safe-to-resume and the
        artifact references, as sorted-key JSON. IDs, sequence and times are not
        content: the same work resumed under another attempt digests the same."""
        content = {
            "phase": self.phase,
            "completed_work": list(self.completed_work),
            "remaining_work": list(self.remaining_work),
            "last_committed_action": self.last_committed_action,
            "safe_to_resume": self.safe_to_resume,
            "artifact_references": list(self.artifact_references),
        }
        return hashlib.sha256(marshal_canonical(content)).hexdigest()

    def verify_digest(self) -> None:
        """``InvalidArgument`` unless the stored digest is non-empty and matches."""
        if not self.checkpoint_digest or self.checkpoint_digest != self.compute_digest():
            raise InvalidArgument(f"checkpoint {self.checkpoint_id} digest is empty or wrong")


# -- the artifact workspace and attempt progress (issue 17) ---------------------------
@dataclass(frozen=True)
class ArtifactMetadata:
    """An accepted artifact: a file beneath its run's workspace, hashed as opened.
    ``attempt_id`` accepted it last; ``creating_attempt`` first."""

    artifact_id: ArtifactID
    run_id: RunID
    attempt_id: AttemptID
    relative_path: str
    byte_size: int
    digest: str  # SHA-256 hex
    media_type: str
    creating_attempt: AttemptID
    updated_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


def artifact_meta_digest(artifacts: tuple[ArtifactMetadata, ...] | list[ArtifactMetadata]) -> str:
    """SHA-256 hex over the path, digest and size of each artifact, by path: what a
    checkpoint's ``artifact_meta_digest`` binds (content by digest, not the IDs)."""
    content = sorted(
        ({"path": a.relative_path, "digest": a.digest, "size": a.byte_size} for a in artifacts),
        key=lambda a: str(a["path"]),
    )
    return hashlib.sha256(marshal_canonical(content)).hexdigest()


@dataclass(frozen=True)
class AttemptProgress:
    """The live progress of an attempt, as the tailer last ingested it from the
    journal: ``last_sequence`` is the journal's last verified event. ``journal_error``
    is set once, on the first journal error (and ``resume_capability`` is then NONE)."""

    attempt_id: AttemptID
    run_id: RunID
    last_phase: str
    last_heartbeat: Nanos
    last_sequence: int
    latest_checkpoint_id: CheckpointID | None = None
    resume_capability: ResumeCapability | None = None
    journal_error: str | None = None
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class ResumeCheckpointData:
    """What a resumed attempt's harness is given (never the trigger payload): the
    checkpoint's semantic fields and the metadata of the artifacts it references, with
    the run's policy and image digests when it was taken, which
    ``validate_resume_checkpoint`` compares with the resuming attempt's."""

    checkpoint_id: CheckpointID
    source_attempt_id: AttemptID
    run_id: RunID
    workflow_id: WorkflowID
    phase: str
    completed_work: tuple[str, ...]
    remaining_work: tuple[str, ...]
    artifact_references: tuple[str, ...]
    last_committed_action: str
    checkpoint_digest: str
    artifact_meta_digest: str
    resume_reason: ResumeReason
    policy_digest: str
    image_digest: str
    artifacts: tuple[ArtifactMetadata, ...] = ()
    node_id: NodeID | None = None
    created_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class ActiveTimeLedger:
    consumed_ms: int
    updated_at: Nanos
    running_segment_start_ms: int | None = None
    segment_start_wall_ms: int | None = None
    frozen_consumed_ms: int = 0
    schema_version: str = SCHEMA_VERSION


# -- control -------------------------------------------------------------------------
@dataclass(frozen=True)
class ControlRequest:
    control_request_id: ControlRequestID
    workflow_id: WorkflowID
    command: ControlCommand
    expected_generation: int
    actor_identity: str
    authority_scope: AuthorityScope
    idempotency_key: str
    target_deployment_ref: str | None = None
    recovery_action: str | None = None
    created_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class DesiredState:
    workflow_id: WorkflowID
    desired_command: ControlCommand
    control_request_id: ControlRequestID
    cancel_precedence: bool
    generation: int = 0
    created_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class ControlResult:
    """What a control request did (``append_control_result``; the Go ``interface{}``
    result becomes a typed record). ``applied`` is False for a superseded request."""

    control_request_id: ControlRequestID
    workflow_id: WorkflowID
    command: ControlCommand
    applied: bool
    detail: str
    new_workflow_id: WorkflowID | None = None
    new_run_id: RunID | None = None
    new_attempt_id: AttemptID | None = None
    resume_reason: ResumeReason | None = None
    resume_checkpoint_id: CheckpointID | None = None
    created_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class LimitAmendment:
    amendment_id: LimitAmendmentID
    workflow_id: WorkflowID
    expected_authority_generation: int
    reason: str
    actor_identity: str
    idempotency_key: str
    new_max_active_duration_ms: int = 0
    new_current_attempt_lease_ms: int = 0
    new_max_llm_spend_decimal: str = ""
    before_max_active_duration_ms: int = 0
    before_max_attempt_lease_ms: int = 0
    before_max_llm_spend_decimal: str = ""
    after_max_active_duration_ms: int = 0
    after_max_attempt_lease_ms: int = 0
    after_max_llm_spend_decimal: str = ""
    consumed_active_time_ms: int = 0
    reserved_spend_decimal: str = ""
    new_authority_generation: int = 0
    created_at: Nanos = 0
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class JournalAnchoring:
    """The ``meta`` row ``journal_anchoring``: journals written before the tail anchor
    (record format 9) were anchored once, at ``anchored_at`` (``storage.routed.anchoring``);
    from then on a journal without its tail is never trusted."""

    anchored_at: Nanos
    journals_anchored: int
    journals_refused: int
    schema_version: str = SCHEMA_VERSION

"""Which table each record lives in, under which key, with which indexed columns."""

from __future__ import annotations

from dataclasses import dataclass

from ..codec import SCHEMA_VERSION
from ..envelope import TimeEnvelope
from ..ids import InvocationID, WorkflowID
from ..records import (
    ActiveTimeLedger,
    AliasRecord,
    AttemptRecord,
    ChildBatch,
    ChildResult,
    ControlRequest,
    ControlResult,
    DeploymentRecord,
    DesiredState,
    DurableIdempotencyRecord,
    HandoffEnvelope,
    InvocationReceipt,
    InvocationRequest,
    LedgerEntry,
    LimitAmendment,
    MCPServiceBinding,
    Nanos,
    NodeStateTransition,
    PipelineNode,
    RestartProvenance,
    RunRecord,
    SemanticCheckpoint,
    WorkflowRecord,
)
from .base import Spec, digest_key


@dataclass(frozen=True)
class SchemaStamp:
    """The ``meta`` row: the schema version the routed-run data is written with."""

    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class TimeEnvelopeRow:
    """A workflow's time envelope, keyed by its workflow."""

    workflow_id: WorkflowID
    envelope: TimeEnvelope
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class TimeLedgerRow:
    workflow_id: WorkflowID
    ledger: ActiveTimeLedger
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class TransitionRecord:
    """One applied ``apply_transition`` command, kept for its idempotency key."""

    workflow_id: WorkflowID
    command: str
    idempotency_key: str
    workflow_generation: int
    created_at: Nanos
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class RequestRow:
    """The admitted request, kept for its input (a restart and the supervisor's job
    envelope need it; the receipt carries only digests)."""

    invocation_id: InvocationID
    request: InvocationRequest
    schema_version: str = SCHEMA_VERSION


@dataclass(frozen=True)
class RestartRow:
    """The provenance of a restarted workflow, keyed by the new workflow."""

    workflow_id: WorkflowID
    provenance: RestartProvenance
    schema_version: str = SCHEMA_VERSION


def control_key(workflow_id: str, idempotency_key: str) -> str:
    return digest_key("control", workflow_id, idempotency_key)


def amendment_key(workflow_id: str, idempotency_key: str) -> str:
    return digest_key("amend", workflow_id, idempotency_key)


def idempotency_key(caller: str, key: str) -> str:
    return digest_key("admit", caller, key)


META = Spec("meta", SchemaStamp, key=lambda _r: "schema")
DEPLOYMENT = Spec(
    "deployment", DeploymentRecord, key=lambda r: r.deployment_id, status=lambda r: r.status.name
)
ALIAS = Spec("alias", AliasRecord, key=lambda r: r.alias, parent=lambda r: r.target_deployment_id)
INVOCATION = Spec(
    "invocation",
    InvocationReceipt,
    key=lambda r: r.invocation_id,
    parent=lambda r: r.resolved_deployment_id,
)
INVOCATION_REQUEST = Spec("invocation_request", RequestRow, key=lambda r: r.invocation_id)
IDEMPOTENCY = Spec(
    "idempotency",
    DurableIdempotencyRecord,
    key=lambda r: idempotency_key(r.caller_identity, r.idempotency_key),
    parent=lambda r: r.invocation_id,
)
WORKFLOW = Spec(
    "workflow",
    WorkflowRecord,
    key=lambda r: r.workflow_id,
    parent=lambda r: r.deployment_id,
    status=lambda r: r.status.name,
    kind=lambda r: r.workflow_kind,
    reason=lambda r: r.terminal_reason.name if r.terminal_reason is not None else "",
)
NODE = Spec(
    "node",
    PipelineNode,
    key=lambda r: r.node_id,
    parent=lambda r: r.workflow_id,
    status=lambda r: r.status.name,
)
NODE_TRANSITION = Spec(
    "node_transition",
    NodeStateTransition,
    key=lambda r: f"{r.node_id}#{r.sequence:08d}",
    parent=lambda r: r.node_id,
)
RUN = Spec(
    "run",
    RunRecord,
    key=lambda r: r.run_id,
    parent=lambda r: r.workflow_id,
    status=lambda r: r.status.name,
)
ATTEMPT = Spec(
    "attempt",
    AttemptRecord,
    key=lambda r: r.attempt_id,
    parent=lambda r: r.run_id,
    status=lambda r: r.status.name,
)
RUN_LEDGER = Spec(
    "run_ledger",
    LedgerEntry,
    key=lambda r: f"{r.run_id}#{r.sequence:012d}",
    parent=lambda r: r.run_id,
)
SERVICE = Spec(
    "service",
    MCPServiceBinding,
    key=lambda r: r.service_id,
    parent=lambda r: r.workflow_id,
    status=lambda r: r.status.name,
)
HANDOFF = Spec(
    "handoff", HandoffEnvelope, key=lambda r: r.handoff_id, parent=lambda r: r.workflow_id
)
CHILD_BATCH = Spec(
    "child_batch",
    ChildBatch,
    key=lambda r: r.child_batch_id,
    parent=lambda r: r.workflow_id,
    status=lambda r: r.status.name,
)
CHILD_RESULT = Spec(
    "child_result",
    ChildResult,
    key=lambda r: r.child_result_id,
    parent=lambda r: r.child_batch_id,
    status=lambda r: r.status.name,
)
CONTROL = Spec(
    "control",
    ControlRequest,
    key=lambda r: control_key(r.workflow_id, r.idempotency_key),
    parent=lambda r: r.workflow_id,
    status=lambda r: r.command.name,
)
CONTROL_RESULT = Spec(
    "control_result",
    ControlResult,
    key=lambda r: r.control_request_id,
    parent=lambda r: r.workflow_id,
    status=lambda r: r.command.name,
)
DESIRED_STATE = Spec("desired_state", DesiredState, key=lambda r: r.workflow_id)
AMENDMENT = Spec(
    "amendment",
    LimitAmendment,
    key=lambda r: amendment_key(r.workflow_id, r.idempotency_key),
    parent=lambda r: r.workflow_id,
)
ENVELOPE = Spec("envelope", TimeEnvelopeRow, key=lambda r: r.workflow_id)
TIME_LEDGER = Spec("time_ledger", TimeLedgerRow, key=lambda r: r.workflow_id)
CHECKPOINT = Spec(
    "checkpoint", SemanticCheckpoint, key=lambda r: r.checkpoint_id, parent=lambda r: r.attempt_id
)
RESTART = Spec(
    "restart",
    RestartRow,
    key=lambda r: r.workflow_id,
    parent=lambda r: r.provenance.source_workflow_id,
)
TRANSITION = Spec(
    "transition",
    TransitionRecord,
    key=lambda r: digest_key("transition", r.workflow_id, r.idempotency_key),
    parent=lambda r: r.workflow_id,
)

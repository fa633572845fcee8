"""Workflows, nodes, MCP services, handoffs and child batches (the spec's
WorkflowStore without control), over ``Rows``."""

from __future__ import annotations

import dataclasses

from ..codec import check_record
from ..enums import ChildBatchStatus, NodeStatus, ServiceStatus, WorkflowStatus, max_classification
from ..errors import AlreadyExists, InvalidArgument, RoutedNotFound, TransitionError
from ..ids import ChildBatchID, HandoffID, NodeID, WorkflowID
from ..records import (
    ChildBatch,
    ChildResult,
    HandoffEnvelope,
    MCPServiceBinding,
    NodeStateTransition,
    PipelineNode,
    Stored,
    WorkflowRecord,
)
from ..transitions import is_terminal
from .base import check_payload, check_text
from .runs import RunRules
from .specs import (
    CHILD_BATCH,
    CHILD_RESULT,
    HANDOFF,
    INVOCATION,
    NODE,
    NODE_TRANSITION,
    SERVICE,
    WORKFLOW,
)
from .topology import declared_children

JOIN_MODES = frozenset({"join_all", "all_first"})
WORKFLOW_KINDS = frozenset({"standalone", "pipeline", "parent_child"})


class WorkflowRules(RunRules):
    # -- workflows -----------------------------------------------------------------------
    def create_workflow(self, wf: WorkflowRecord) -> Stored[WorkflowRecord]:
        check_record(wf)
        if wf.workflow_kind not in WORKFLOW_KINDS:
            raise InvalidArgument(f"workflow kind {wf.workflow_kind!r}")
        if wf.status is not WorkflowStatus.PENDING:
            raise InvalidArgument("a workflow is created PENDING")
        self.get_deployment(wf.deployment_id)
        stamped = dataclasses.replace(
            wf, authority_generation=1, created_at=self.now, updated_at=self.now
        )
        return self._create(WORKFLOW, stamped)

    def get_workflow(self, workflow_id: WorkflowID) -> Stored[WorkflowRecord]:
        return self._require(WORKFLOW, workflow_id)

    def list_workflows(self) -> list[Stored[WorkflowRecord]]:
        return self._list(WORKFLOW)

    def update_workflow(
        self, wf: WorkflowRecord, expected_generation: int
    ) -> Stored[WorkflowRecord]:
        """Status and terminal reason through the map; ceilings and the authority
        generation change only by amendment."""
        check_record(wf)
        current = self.get_workflow(wf.workflow_id).record
        fixed = ("max_active_duration_ms", "max_attempt_lease_ms", "max_llm_spend_decimal")
        for name in (*fixed, "authority_generation", "deployment_id", "invocation_id"):
            if getattr(wf, name) != getattr(current, name):
                raise InvalidArgument(f"workflow {name} changes only through its own operation")
        return self._replace(WORKFLOW, self._stamp_wf(wf), expected_generation)

    def _stamp_wf(self, wf: WorkflowRecord) -> WorkflowRecord:
        terminated = self.now if is_terminal(wf.status) else None
        return dataclasses.replace(wf, updated_at=self.now, terminated_at=terminated)

    # -- nodes ---------------------------------------------------------------------------
    def create_node(self, node: PipelineNode) -> Stored[PipelineNode]:
        check_record(node)
        self._live_workflow(node.workflow_id)
        if node.status is not NodeStatus.PENDING:
            raise InvalidArgument("a node is created PENDING")
        if node.stage_order < 0:
            raise InvalidArgument("stage order is 0-based")
        stamped = dataclasses.replace(node, created_at=self.now, updated_at=self.now)
        return self._create(NODE, stamped)

    def get_node(self, node_id: NodeID) -> Stored[PipelineNode]:
        return self._require(NODE, node_id)

    def list_nodes(self, workflow_id: WorkflowID) -> list[Stored[PipelineNode]]:
        return self._list(NODE, workflow_id)

    def list_node_transitions(self, node_id: NodeID) -> list[NodeStateTransition]:
        return [s.record for s in self._list(NODE_TRANSITION, node_id)]

    def update_node(
        self, node: PipelineNode, expected_generation: int, reason: str = ""
    ) -> Stored[PipelineNode]:
        """CAS; a status change is recorded as a NodeStateTransition in the same
        transaction."""
        check_record(node)
        current = self.get_node(node.node_id)
        if node.workflow_id != current.record.workflow_id:
            raise InvalidArgument("a node's workflow is fixed")
        stored = self._replace(
            NODE, dataclasses.replace(node, updated_at=self.now), expected_generation
        )
        if node.status is not current.record.status:
            self._node_transition(current.record, node.status, reason or "update_node")
        return stored

    # -- services ------------------------------------------------------------------------
    def register_service(self, svc: MCPServiceBinding) -> Stored[MCPServiceBinding]:
        check_record(svc)
        self._live_workflow(svc.workflow_id)
        if svc.status is not ServiceStatus.DECLARED:
            raise InvalidArgument("a service binding is registered DECLARED")
        check_text("service_name", svc.service_name)
        stamped = dataclasses.replace(svc, created_at=self.now, updated_at=self.now)
        return self._create(SERVICE, stamped)

    def update_service(
        self, svc: MCPServiceBinding, expected_generation: int
    ) -> Stored[MCPServiceBinding]:
        check_record(svc)
        current = self._require(SERVICE, svc.service_id).record
        if (svc.workflow_id, svc.created_at) != (current.workflow_id, current.created_at):
            raise InvalidArgument("a service's workflow and creation time are fixed")
        return self._replace(
            SERVICE, dataclasses.replace(svc, updated_at=self.now), expected_generation
        )

    def get_service(self, service_id: str) -> Stored[MCPServiceBinding]:
        return self._require(SERVICE, service_id)

    def list_services(self, workflow_id: WorkflowID) -> list[Stored[MCPServiceBinding]]:
        return self._list(SERVICE, workflow_id)

    # -- handoffs ------------------------------------------------------------------------
    def commit_handoff(self, handoff: HandoffEnvelope) -> HandoffEnvelope:
        """One commit: the envelope and the target node's incoming reference. The
        classification must be at least that of every referenced artifact."""
        check_record(handoff)
        self._live_workflow(handoff.workflow_id)
        check_payload("context_json", handoff.context_json)
        for node_id in (handoff.source_node_id, handoff.target_node_id):
            node = self.get_node(node_id).record
            if node.workflow_id != handoff.workflow_id:
                raise InvalidArgument(f"node {node_id} is not in workflow {handoff.workflow_id}")
        source = self.get_node(handoff.source_node_id).record
        target = self.get_node(handoff.target_node_id)
        if self.get_workflow(handoff.workflow_id).record.workflow_kind == "pipeline" and (
            target.record.stage_order != source.stage_order + 1
        ):
            raise InvalidArgument(
                f"a pipeline hands off from a stage to the next: {source.stage_order} -> "
                f"{target.record.stage_order}"
            )
        floor = handoff.classification
        for ref in handoff.artifact_refs:
            floor = max_classification(floor, ref.classification)
        if floor is not handoff.classification:
            raise InvalidArgument(f"handoff classification must be at least {floor.value}")
        stored = self._create(HANDOFF, dataclasses.replace(handoff, created_at=self.now)).record
        if target.record.incoming_handoff_id is not None:
            raise AlreadyExists(f"node {handoff.target_node_id} already has its handoff")
        received = self._replace(
            NODE,
            dataclasses.replace(
                target.record, incoming_handoff_id=handoff.handoff_id, updated_at=self.now
            ),
            target.generation,
        )
        if received.record.status is NodeStatus.PENDING:
            # The stage has its input: its launch intent, as admission's first stage.
            self._move_node(received, NodeStatus.READY, "handoff committed: launch intent")
        return stored

    def get_handoff(self, handoff_id: HandoffID) -> HandoffEnvelope:
        return self._require(HANDOFF, handoff_id).record

    def list_handoffs(self, workflow_id: WorkflowID) -> list[HandoffEnvelope]:
        return [s.record for s in self._list(HANDOFF, workflow_id)]

    # -- child batches -------------------------------------------------------------------
    def create_child_batch(self, batch: ChildBatch) -> Stored[ChildBatch]:
        check_record(batch)
        self._live_workflow(batch.workflow_id)
        parent = self.get_node(batch.parent_node_id).record
        if parent.workflow_id != batch.workflow_id:
            raise InvalidArgument(f"node {parent.node_id} is not in workflow {batch.workflow_id}")
        if batch.status is not ChildBatchStatus.INTENT:
            raise InvalidArgument("a child batch is created as INTENT")
        receipt = self._require(
            INVOCATION, self.get_workflow(batch.workflow_id).record.invocation_id
        )
        spawn = batch.spawn_request
        child = (spawn.child_package_name, spawn.child_package_version)
        if child not in declared_children(receipt.record.nested_package_digests):
            raise InvalidArgument(
                f"{child[0]}@{child[1]} is not in the child allowlist workflow "
                f"{batch.workflow_id} was admitted with"
            )
        if batch.join_policy.mode not in JOIN_MODES:
            raise InvalidArgument(f"join mode {batch.join_policy.mode!r}")
        if spawn.max_fan_out < 1 or not 1 <= spawn.max_concurrency <= spawn.max_fan_out:
            raise InvalidArgument("need 1 <= max_concurrency <= max_fan_out")
        stamped = dataclasses.replace(batch, created_at=self.now, updated_at=self.now)
        return self._create(CHILD_BATCH, stamped)

    def update_child_batch(self, batch: ChildBatch, expected_generation: int) -> Stored[ChildBatch]:
        check_record(batch)
        current = self._require(CHILD_BATCH, batch.child_batch_id).record
        if (batch.workflow_id, batch.parent_node_id) != (
            current.workflow_id,
            current.parent_node_id,
        ):
            raise InvalidArgument("a child batch's workflow and parent are fixed")
        if len(batch.child_run_ids) > batch.spawn_request.max_fan_out:
            raise InvalidArgument("more children than max_fan_out")
        return self._replace(
            CHILD_BATCH, dataclasses.replace(batch, updated_at=self.now), expected_generation
        )

    def get_child_batch(self, child_batch_id: ChildBatchID) -> Stored[ChildBatch]:
        return self._require(CHILD_BATCH, child_batch_id)

    def list_child_batches(self, workflow_id: WorkflowID) -> list[Stored[ChildBatch]]:
        return self._list(CHILD_BATCH, workflow_id)

    def commit_child_result(self, result: ChildResult) -> ChildResult:
        """One result per child run of a live batch, with a terminal run status."""
        check_record(result)
        batch = self.get_child_batch(result.child_batch_id).record
        if is_terminal(batch.status):
            raise TransitionError("child_batch", batch.status, batch.status, "batch is terminal")
        if result.child_run_id not in batch.child_run_ids:
            raise RoutedNotFound(
                f"run {result.child_run_id} is not a child of {batch.child_batch_id}"
            )
        if not is_terminal(result.status):
            raise InvalidArgument(
                f"a child result needs a terminal status, not {result.status.name}"
            )
        if result.output_json is not None:
            check_payload("output_json", result.output_json)
        if any(
            r.child_run_id == result.child_run_id
            for r in self.list_child_results(batch.child_batch_id)
        ):
            raise AlreadyExists(f"run {result.child_run_id} already has its result")
        return self._create(CHILD_RESULT, dataclasses.replace(result, created_at=self.now)).record

    def list_child_results(self, child_batch_id: ChildBatchID) -> list[ChildResult]:
        return [s.record for s in self._list(CHILD_RESULT, child_batch_id)]

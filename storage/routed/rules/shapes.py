"""What an admission (or a restart) creates under its receipt: the workflow in the
shape its deployment declares (``topology``), in one transaction with the receipt.

- every stage's node, in stage order, each with its run (``RUN_KIND``): the first
  stage's run is the receipt's, its node READY with its PENDING->READY transition
  record (the first durable launch intent); later stages wait PENDING for the
  handoff from the stage before (``commit_handoff`` makes them READY);
- a DECLARED binding per declared MCP service;
- the workflow's time envelope.

A parent/child workflow's child batches are not created here: their fan-out is the
parent's decision at run time; ``create_child_batch`` holds them to the allowlist the
receipt snapshotted.
"""

from __future__ import annotations

from collections.abc import Callable

from ..enums import NodeStatus
from ..envelope import time_envelope_from_receipt
from ..errors import InvalidArgument
from ..ids import NodeID, RunID, ServiceID
from ..records import (
    DeploymentRecord,
    InvocationReceipt,
    MCPServiceBinding,
    NodeStateTransition,
    PipelineNode,
    RunRecord,
    WorkflowRecord,
)
from .base import RulesBase
from .specs import ENVELOPE, NODE, NODE_TRANSITION, RUN, SERVICE, WORKFLOW, TimeEnvelopeRow
from .topology import RUN_KIND, topology_of

# A hook between admission's steps; tests raise from it to prove nothing is left.
Fault = Callable[[str], None]


def _no_fault(step: str) -> None:
    del step


class AdmissionShapes(RulesBase):
    fault: Fault = staticmethod(_no_fault)

    def start_workflow(self, receipt: InvocationReceipt, dep: DeploymentRecord) -> WorkflowRecord:
        """The workflow of an admitted or restarted receipt, in the shape of the
        receipt's snapshot of its deployment's declarations."""
        shape = topology_of(receipt.nested_package_digests, (dep.package_name, dep.package_version))
        now = self.now
        workflow = self._create(
            WORKFLOW,
            WorkflowRecord(
                workflow_id=receipt.workflow_id,
                workflow_kind=shape.kind,
                invocation_id=receipt.invocation_id,
                deployment_id=dep.deployment_id,
                policy_digest=dep.policy_digest,
                max_active_duration_ms=receipt.initial_max_active_duration_ms,
                max_attempt_lease_ms=receipt.initial_attempt_lease_ms,
                max_llm_spend_decimal=receipt.initial_max_cost_usd_decimal,
                created_at=now,
                updated_at=now,
            ),
        ).record
        self.fault("workflow")
        stages = [
            (NodeID.new(), receipt.run_id if order == 0 else RunID.new(), package)
            for order, package in enumerate(shape.stages)
        ]
        for node_id, run_id, _ in stages:
            self._create(
                RUN,
                RunRecord(
                    run_id=run_id,
                    workflow_id=receipt.workflow_id,
                    run_kind=RUN_KIND[shape.kind],
                    node_id=node_id,
                    policy_digest=dep.policy_digest,
                    max_active_duration_ms=receipt.initial_max_active_duration_ms,
                    max_attempt_lease_ms=receipt.initial_attempt_lease_ms,
                    max_llm_spend_decimal=receipt.initial_max_cost_usd_decimal,
                    created_at=now,
                    updated_at=now,
                ),
            )
        self.fault("run")
        for order, (node_id, run_id, (name, version)) in enumerate(stages):
            first = order == 0
            node = PipelineNode(
                node_id=node_id,
                workflow_id=receipt.workflow_id,
                stage_order=order,
                package_name=name,
                package_version=version,
                status=NodeStatus.READY if first else NodeStatus.PENDING,
                run_id=run_id,
                created_at=now,
                updated_at=now,
            )
            self._create(NODE, node)
            if first:
                self._create(
                    NODE_TRANSITION,
                    NodeStateTransition(
                        node_id=node_id,
                        from_state=NodeStatus.PENDING,
                        to_state=NodeStatus.READY,
                        timestamp=self.now,
                        reason="admitted: launch intent",
                    ),
                )
        self.fault("node")
        for service_name, (name, version) in shape.services:
            binding = MCPServiceBinding(
                service_id=ServiceID.new(),
                workflow_id=receipt.workflow_id,
                package_name=name,
                package_version=version,
                service_name=service_name,
                created_at=now,
                updated_at=now,
            )
            self._create(SERVICE, binding)
        envelope = time_envelope_from_receipt(receipt)
        if envelope is None:  # _check_request refused a non-positive ceiling
            raise InvalidArgument("receipt carries no active-time ceiling")
        self._create(ENVELOPE, TimeEnvelopeRow(receipt.workflow_id, envelope))
        self.fault("envelope")
        return workflow

"""Admission in the shape the deployment declares (issue 16), on every backend: a
pipeline's stages in order with a run each, the first READY and the rest waiting for
the handoff from the stage before; a parent with its child allowlist; declared MCP
services; a map no shape fits refused at deployment; a failure at any step leaves
nothing; cancel and restart keep to the shape."""

from __future__ import annotations

from typing import Any

import pytest

from storage.routed.enums import (
    ControlCommand,
    DataClassification,
    NodeStatus,
    RunStatus,
    ServiceStatus,
    WorkflowStatus,
)
from storage.routed.errors import InvalidArgument
from storage.routed.ids import ChildBatchID, HandoffID
from storage.routed.records import ChildBatch, ChildSpawnRequest, HandoffEnvelope, JoinPolicy
from storage.routed.rules import Admission
from storage.routed.store import RoutedStore

from .support import STEPS, Boom, admit, control, counts, deployment, request, send

PIPELINE = {
    "stage:0:fetch@1.0": "sha256:a",
    "stage:1:summarise@2.1": "sha256:b",
    "stage:2:publish@0.3": "sha256:c",
    "service:search:mcp.search@4.0": "sha256:s",
}


def _pipeline(routed: RoutedStore, key: str = "key-1") -> Admission:
    return admit(routed, key, nested_package_digests=PIPELINE)


def _stages(routed: RoutedStore, admission: Admission) -> list[Any]:
    nodes = routed.view(lambda r: r.list_nodes(admission.receipt.workflow_id))
    return sorted((n.record for n in nodes), key=lambda n: n.stage_order)


def test_a_pipeline_is_admitted_with_every_stage_in_order_and_the_first_ready(
    routed: RoutedStore,
) -> None:
    admission = _pipeline(routed)
    r = admission.receipt

    assert (
        routed.view(lambda rules: rules.get_workflow(r.workflow_id)).record.workflow_kind
        == "pipeline"
    )
    stages = _stages(routed, admission)
    assert [(n.stage_order, n.package_name, n.package_version) for n in stages] == [
        (0, "fetch", "1.0"),
        (1, "summarise", "2.1"),
        (2, "publish", "0.3"),
    ]
    assert [n.status for n in stages] == [NodeStatus.READY, NodeStatus.PENDING, NodeStatus.PENDING]
    assert stages[0].run_id == r.run_id
    assert [
        len(routed.view(lambda r, n=n: r.list_node_transitions(n.node_id))) for n in stages
    ] == [
        1,
        0,
        0,
    ]
    runs = {
        s.record.run_id: s.record for s in routed.view(lambda rules: rules.list_runs(r.workflow_id))
    }
    assert set(runs) == {n.run_id for n in stages}
    for node in stages:
        run = runs[node.run_id]  # type: ignore[index]
        assert (run.run_kind, run.node_id, run.status) == (
            "pipeline_stage",
            node.node_id,
            RunStatus.PENDING,
        )
    [service] = routed.view(lambda rules: rules.list_services(r.workflow_id))
    assert (service.record.service_name, service.record.package_name) == ("search", "mcp.search")
    assert service.record.status is ServiceStatus.DECLARED


def _handoff(admission: Admission, source: Any, target: Any) -> HandoffEnvelope:
    return HandoffEnvelope(
        handoff_id=HandoffID.new(),
        workflow_id=admission.receipt.workflow_id,
        source_node_id=source.node_id,
        target_node_id=target.node_id,
        context_json='{"summary": "done"}',
        classification=DataClassification.INTERNAL,
    )


def test_a_stage_takes_its_handoff_from_the_stage_before_and_becomes_ready(
    routed: RoutedStore,
) -> None:
    admission = _pipeline(routed)
    first, second, third = _stages(routed, admission)
    before = counts(routed)
    for source, target in ((first, third), (second, first), (third, second)):
        with pytest.raises(InvalidArgument):
            routed.transact(
                lambda r, source=source, target=target: r.commit_handoff(
                    _handoff(admission, source, target)
                )
            )
    assert counts(routed) == before

    handoff = routed.transact(lambda r: r.commit_handoff(_handoff(admission, first, second)))

    now = {n.stage_order: n for n in _stages(routed, admission)}
    assert now[1].incoming_handoff_id == handoff.handoff_id
    assert now[1].status is NodeStatus.READY
    [ready] = routed.view(lambda r: r.list_node_transitions(second.node_id))
    assert (ready.from_state, ready.to_state) == (NodeStatus.PENDING, NodeStatus.READY)
    assert now[2].status is NodeStatus.PENDING


def _batch(admission: Admission, node: Any, package: str, version: str) -> ChildBatch:
    return ChildBatch(
        child_batch_id=ChildBatchID.new(),
        workflow_id=admission.receipt.workflow_id,
        parent_node_id=node.node_id,
        spawn_request=ChildSpawnRequest(package, version, 4, 2, "{}"),
        join_policy=JoinPolicy("join_all"),
    )


def test_a_parent_spawns_only_what_its_admitted_allowlist_holds(routed: RoutedStore) -> None:
    parent = admit(routed, nested_package_digests={"child:worker@2.0": "sha256:w"})
    [node] = _stages(routed, parent)
    run = routed.view(lambda r: r.get_run(parent.receipt.run_id)).record
    assert (
        routed.view(lambda r: r.get_workflow(parent.receipt.workflow_id)).record.workflow_kind
        == "parent_child"
    )
    assert (run.run_kind, node.status) == ("parent", NodeStatus.READY)
    routed.transact(lambda r: r.create_child_batch(_batch(parent, node, "worker", "2.0")))
    before = counts(routed)

    for package, version in (("worker", "2.1"), ("other", "2.0")):
        with pytest.raises(InvalidArgument, match="allowlist"):
            routed.transact(
                lambda r, package=package, version=version: r.create_child_batch(
                    _batch(parent, node, package, version)
                )
            )
    alone = admit(routed, "key-2", nested_package_digests={})
    [only] = _stages(routed, alone)
    after_alone = counts(routed)
    with pytest.raises(InvalidArgument, match="allowlist"):
        routed.transact(lambda r: r.create_child_batch(_batch(alone, only, "worker", "2.0")))

    assert (
        routed.view(lambda r: r.get_workflow(alone.receipt.workflow_id)).record.workflow_kind
        == "standalone"
    )
    assert routed.view(lambda r: r.get_run(alone.receipt.run_id)).record.run_kind == "standalone"
    assert counts(routed)["child_batch"] == before["child_batch"] == after_alone["child_batch"]


@pytest.mark.parametrize(
    "digests",
    [
        {"stage:1:b@1": "x"},
        {"stage:0:a@1": "x", "stage:2:c@1": "x"},
        {"stage:x:a@1": "x"},
        {"stage:²:a@1": "x"},
        {"stage:0:no-version": "x"},
        {"stage:0:a@": "x"},
        {"service::mcp@1": "x"},
        {"child:kid": "x"},
        {"something:else": "x"},
        {"stage:0:a@1": "x", "stage:1:b@1": "x", "child:kid@1": "x"},
        {"child:kid\x00@1": "x"},
    ],
)
def test_a_deployment_whose_declarations_fit_no_shape_is_refused(
    routed: RoutedStore, digests: dict[str, str]
) -> None:
    before = counts(routed)
    with pytest.raises(InvalidArgument):
        routed.transact(lambda r: r.create_deployment(deployment(nested_package_digests=digests)))
    assert counts(routed) == before


@pytest.mark.parametrize("step", STEPS)
def test_a_failure_at_any_step_of_a_pipeline_admission_creates_nothing(
    store: Any, step: str
) -> None:
    def fault(at: str) -> None:
        if at == step:
            raise Boom(at)

    plain = RoutedStore(store)
    dep = plain.transact(lambda r: r.create_deployment(deployment(nested_package_digests=PIPELINE)))
    before = counts(plain)
    with pytest.raises(Boom):
        RoutedStore(store, fault=fault).transact(
            lambda r: r.admit_invocation(request(dep.record.deployment_id), dep.generation)
        )
    assert counts(plain) == before


def test_cancel_and_restart_keep_to_the_pipeline(routed: RoutedStore) -> None:
    admission = _pipeline(routed)
    wf_id = admission.receipt.workflow_id

    send(routed, control(routed, wf_id, ControlCommand.CANCEL))
    assert {n.status for n in _stages(routed, admission)} == {NodeStatus.CANCELLED}
    assert {r.record.status for r in routed.view(lambda r: r.list_runs(wf_id))} == {
        RunStatus.CANCELLED
    }
    assert routed.view(lambda r: r.get_workflow(wf_id)).record.status is WorkflowStatus.CANCELLED

    outcome = send(routed, control(routed, wf_id, ControlCommand.RESTART))
    new_wf = outcome.result.new_workflow_id
    assert new_wf is not None
    nodes = sorted(
        (n.record for n in routed.view(lambda r: r.list_nodes(new_wf))), key=lambda n: n.stage_order
    )
    assert [(n.package_name, n.status) for n in nodes] == [
        ("fetch", NodeStatus.READY),
        ("summarise", NodeStatus.PENDING),
        ("publish", NodeStatus.PENDING),
    ]
    assert len(routed.view(lambda r: r.list_runs(new_wf))) == 3
    assert routed.view(lambda r: r.get_workflow(new_wf)).record.workflow_kind == "pipeline"

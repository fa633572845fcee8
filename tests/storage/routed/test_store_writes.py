"""Every store write on every backend: the transition map decides every status change
(all pairs of all six maps), a stale generation is ``CASConflict`` with the row
unchanged, and a wrong ID prefix is ``InvalidArgument`` with nothing written."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from storage.routed import transitions
from storage.routed.enums import (
    AttemptStatus,
    ChildBatchStatus,
    DataClassification,
    DeploymentStatus,
    NodeStatus,
    RunStatus,
    ServiceStatus,
    WorkflowStatus,
)
from storage.routed.errors import AlreadyExists, CASConflict, InvalidArgument
from storage.routed.ids import HandoffID, NodeID, RunID
from storage.routed.records import (
    ChildBatch,
    HandoffEnvelope,
    MCPServiceBinding,
    PipelineNode,
    Stored,
)
from storage.routed.store import RoutedStore

from .support import (
    SPEC,
    WRITERS,
    _batch,
    _service,
    check_spec_transitions,
    check_stale_generations,
    deployment,
    make_world,
    setup_deployment,
)
from .support import snapshot as bodies


@pytest.fixture
def world(routed: RoutedStore) -> dict[str, Stored[Any]]:
    return make_world(routed)


@pytest.mark.parametrize("resource", list(SPEC))
def test_store_writes_allow_exactly_the_spec_transitions(
    routed: RoutedStore, world: dict[str, Stored[Any]], resource: str
) -> None:
    check_spec_transitions(routed, world, resource)


@pytest.mark.parametrize("resource", list(WRITERS))
def test_a_stale_generation_is_refused_and_the_row_is_unchanged(
    routed: RoutedStore, world: dict[str, Stored[Any]], resource: str
) -> None:
    check_stale_generations(routed, world, resource)


def test_deployment_status_alias_and_envelope_writes_are_cas_too(
    routed: RoutedStore, world: dict[str, Stored[Any]]
) -> None:
    dep = world["deployment"]
    before = bodies(routed)
    with pytest.raises(CASConflict):
        routed.transact(
            lambda r: r.set_deployment_status(
                dep.record.deployment_id, DeploymentStatus.INACTIVE, dep.generation + 1
            )
        )
    env = world["envelope"]
    wf_id = world["workflow"].record.workflow_id
    with pytest.raises(CASConflict):
        routed.transact(lambda r: r.put_time_envelope(wf_id, env.record, env.generation + 5))
    with pytest.raises(AlreadyExists):  # 0 creates; the envelope exists (resolution 4)
        routed.transact(lambda r: r.put_time_envelope(wf_id, env.record, 0))
    assert bodies(routed) == before
    moved = routed.transact(
        lambda r: r.set_deployment_status(
            dep.record.deployment_id, DeploymentStatus.INACTIVE, dep.generation
        )
    )
    assert (moved.generation, moved.record.generation) == (dep.generation + 1,) * 2
    assert moved.record.deactivated_at is not None


def test_reads_return_the_generation_beside_every_mutable_record(
    world: dict[str, Stored[Any]],
) -> None:
    for stored in world.values():
        assert stored.generation >= 1
        if hasattr(stored.record, "generation"):
            assert stored.record.generation == stored.generation


@pytest.mark.parametrize(
    ("build", "label"),
    [
        (lambda w: dataclasses.replace(_service(w), service_id="node-x"), "service"),
        (lambda w: dataclasses.replace(_service(w), workflow_id="run-x"), "service wf"),
        (lambda w: PipelineNode(NodeID("wf-bad"), w, 1, "p", "1"), "node"),
        (lambda w: _batch(w, NodeID("cb-bad")), "batch parent"),
    ],
)
def test_a_wrong_prefix_is_invalid_and_writes_nothing(
    routed: RoutedStore, world: dict[str, Stored[Any]], build: Any, label: str
) -> None:
    wf_id = world["workflow"].record.workflow_id
    record = build(wf_id)
    before = bodies(routed)
    write = {
        MCPServiceBinding: lambda r: r.register_service(record),
        PipelineNode: lambda r: r.create_node(record),
        ChildBatch: lambda r: r.create_child_batch(record),
    }[type(record)]
    with pytest.raises(InvalidArgument):
        routed.transact(write)
    assert bodies(routed) == before, label


def test_updates_with_a_wrong_prefix_write_nothing(
    routed: RoutedStore, world: dict[str, Stored[Any]]
) -> None:
    run = world["run"]
    before = bodies(routed)
    with pytest.raises(InvalidArgument):
        routed.transact(
            lambda r: r.update_run(
                dataclasses.replace(run.record, node_id=RunID("run-x")), run.generation
            )
        )
    assert bodies(routed) == before


def test_handoffs_commit_once_and_respect_classification(
    routed: RoutedStore, world: dict[str, Stored[Any]]
) -> None:
    wf_id = world["workflow"].record.workflow_id
    source = world["node"].record
    target = routed.transact(
        lambda r: r.create_node(PipelineNode(NodeID.new(), wf_id, 1, "p2", "1"))
    ).record
    handoff = HandoffEnvelope(
        HandoffID.new(),
        wf_id,
        source.node_id,
        target.node_id,
        '{"k":1}',
        DataClassification.INTERNAL,
    )
    routed.transact(lambda r: r.commit_handoff(handoff))
    assert (
        routed.view(lambda r: r.get_node(target.node_id)).record.incoming_handoff_id
        == handoff.handoff_id
    )
    with pytest.raises(AlreadyExists):
        routed.transact(lambda r: r.commit_handoff(handoff))
    assert [h.handoff_id for h in routed.view(lambda r: r.list_handoffs(wf_id))] == [
        handoff.handoff_id
    ]


def test_node_status_changes_are_recorded_as_transitions(
    routed: RoutedStore, world: dict[str, Stored[Any]]
) -> None:
    node = world["node"]
    moved = routed.transact(
        lambda r: r.update_node(
            dataclasses.replace(node.record, status=NodeStatus.LAUNCHING), node.generation
        )
    )
    routed.transact(
        lambda r: r.update_node(
            dataclasses.replace(moved.record, status=NodeStatus.RUNNING), moved.generation
        )
    )
    got = [
        (t.from_state, t.to_state)
        for t in routed.view(lambda r: r.list_node_transitions(node.record.node_id))
    ]
    assert got == [
        (NodeStatus.PENDING, NodeStatus.READY),
        (NodeStatus.READY, NodeStatus.LAUNCHING),
        (NodeStatus.LAUNCHING, NodeStatus.RUNNING),
    ]


def test_terminal_statuses_of_the_store_are_the_maps_terminals() -> None:
    for status in (
        RunStatus.EXPIRED,
        AttemptStatus.FENCED,
        WorkflowStatus.BUDGET_EXCEEDED,
        NodeStatus.SKIPPED,
        ServiceStatus.STOPPED,
        ChildBatchStatus.STOPPED,
    ):
        assert transitions.is_terminal(status)


def test_a_view_refuses_writes(routed: RoutedStore) -> None:
    from storage.errors import ReadOnly

    setup_deployment(routed)
    with pytest.raises(ReadOnly):
        routed.view(lambda r: r.create_deployment(deployment()))

"""Services, handoffs, child batches and their results, and the active-time ledger on
every backend."""

from __future__ import annotations

import dataclasses

import pytest

from storage.routed.enums import ChildBatchStatus, DataClassification, RunStatus, ServiceStatus
from storage.routed.errors import (
    AlreadyExists,
    CASConflict,
    InvalidArgument,
    RoutedNotFound,
    TransitionError,
)
from storage.routed.ids import AttemptID, ChildResultID, HandoffID, NodeID, RunID
from storage.routed.records import (
    ActiveTimeLedger,
    ArtifactRef,
    ChildResult,
    HandoffEnvelope,
    PipelineNode,
)
from storage.routed.store import RoutedStore

from .support import _batch, _service, admit
from .support import snapshot as bodies


def test_child_results_commit_once_per_child_of_a_live_batch(routed: RoutedStore) -> None:
    receipt = admit(routed).receipt
    [node] = routed.view(lambda r: r.list_nodes(receipt.workflow_id))
    batch = routed.transact(
        lambda r: r.create_child_batch(_batch(receipt.workflow_id, node.record.node_id))
    )
    children = (RunID.new(), RunID.new())
    batch = routed.transact(
        lambda r: r.update_child_batch(
            dataclasses.replace(
                batch.record, status=ChildBatchStatus.ALLOCATED, child_run_ids=children
            ),
            batch.generation,
        )
    )
    result = ChildResult(
        ChildResultID.new(),
        batch.record.child_batch_id,
        children[0],
        RunStatus.SUCCEEDED,
        '{"ok":1}',
    )
    routed.transact(lambda r: r.commit_child_result(result))
    with pytest.raises(AlreadyExists):
        routed.transact(
            lambda r: r.commit_child_result(
                dataclasses.replace(result, child_result_id=ChildResultID.new())
            )
        )
    with pytest.raises(RoutedNotFound):  # not a child of this batch
        routed.transact(
            lambda r: r.commit_child_result(
                dataclasses.replace(
                    result, child_result_id=ChildResultID.new(), child_run_id=RunID.new()
                )
            )
        )
    with pytest.raises(InvalidArgument):  # a child result reports a finished run
        routed.transact(
            lambda r: r.commit_child_result(
                dataclasses.replace(
                    result,
                    child_result_id=ChildResultID.new(),
                    child_run_id=children[1],
                    status=RunStatus.RUNNING,
                )
            )
        )
    [stored] = routed.view(lambda r: r.list_child_results(batch.record.child_batch_id))
    assert stored.child_run_id == children[0]
    cancelled = routed.transact(
        lambda r: r.update_child_batch(
            dataclasses.replace(batch.record, status=ChildBatchStatus.CANCELLED), batch.generation
        )
    )
    with pytest.raises(TransitionError):  # the batch is over
        routed.transact(
            lambda r: r.commit_child_result(
                dataclasses.replace(
                    result, child_result_id=ChildResultID.new(), child_run_id=children[1]
                )
            )
        )
    assert cancelled.record.status is ChildBatchStatus.CANCELLED


def test_a_batch_cannot_hold_more_children_than_its_fan_out(routed: RoutedStore) -> None:
    receipt = admit(routed).receipt
    [node] = routed.view(lambda r: r.list_nodes(receipt.workflow_id))
    batch = routed.transact(
        lambda r: r.create_child_batch(_batch(receipt.workflow_id, node.record.node_id))
    )
    too_many = tuple(RunID.new() for _ in range(5))
    with pytest.raises(InvalidArgument):
        routed.transact(
            lambda r: r.update_child_batch(
                dataclasses.replace(batch.record, child_run_ids=too_many), batch.generation
            )
        )


def test_services_move_through_their_map(routed: RoutedStore) -> None:
    receipt = admit(routed).receipt
    svc = routed.transact(lambda r: r.register_service(_service(receipt.workflow_id)))
    for status in (
        ServiceStatus.STARTING,
        ServiceStatus.READY,
        ServiceStatus.UNHEALTHY,
        ServiceStatus.FENCED,
    ):
        svc = routed.transact(
            lambda r, status=status, svc=svc: r.update_service(
                dataclasses.replace(svc.record, status=status), svc.generation
            )
        )
    with pytest.raises(TransitionError):
        routed.transact(
            lambda r: r.update_service(
                dataclasses.replace(svc.record, status=ServiceStatus.READY), svc.generation
            )
        )
    assert [
        s.record.status for s in routed.view(lambda r: r.list_services(receipt.workflow_id))
    ] == [ServiceStatus.FENCED]


def test_a_handoff_must_be_at_least_as_restricted_as_its_artifacts(routed: RoutedStore) -> None:
    receipt = admit(routed).receipt
    wf_id = receipt.workflow_id
    [source] = routed.view(lambda r: r.list_nodes(wf_id))
    target = routed.transact(
        lambda r: r.create_node(PipelineNode(NodeID.new(), wf_id, 1, "p2", "1"))
    ).record
    ref = ArtifactRef(
        artifact_id="art-1",
        workflow_id=wf_id,
        run_id=receipt.run_id,
        attempt_id=AttemptID.new(),
        logical_ref="out.json",
        digest="sha256:x",
        byte_size=10,
        media_type="application/json",
        classification=DataClassification.CONFIDENTIAL,
        created_at=0,
    )
    handoff = HandoffEnvelope(
        HandoffID.new(),
        wf_id,
        source.record.node_id,
        target.node_id,
        "{}",
        DataClassification.INTERNAL,
        (ref,),
    )
    before = bodies(routed)
    with pytest.raises(InvalidArgument):
        routed.transact(lambda r: r.commit_handoff(handoff))
    with pytest.raises(InvalidArgument):
        routed.transact(
            lambda r: r.commit_handoff(
                dataclasses.replace(
                    handoff, classification=DataClassification.RESTRICTED, context_json="nope"
                )
            )
        )
    assert bodies(routed) == before
    routed.transact(
        lambda r: r.commit_handoff(
            dataclasses.replace(handoff, classification=DataClassification.RESTRICTED)
        )
    )
    assert routed.view(lambda r: r.get_handoff(handoff.handoff_id)).artifact_refs == (ref,)


def test_the_active_time_ledger_is_cas_and_zero_only_creates(routed: RoutedStore) -> None:
    wf_id = admit(routed).receipt.workflow_id
    ledger = ActiveTimeLedger(consumed_ms=10, updated_at=0, running_segment_start_ms=5)
    created = routed.transact(lambda r: r.put_active_time_ledger(wf_id, ledger, 0))
    assert created.generation == 1
    with pytest.raises(CASConflict):  # resolution 4: 0 never bypasses
        routed.transact(lambda r: r.put_active_time_ledger(wf_id, ledger, 0))
    with pytest.raises(CASConflict):
        routed.transact(lambda r: r.put_active_time_ledger(wf_id, ledger, 5))
    moved = routed.transact(
        lambda r: r.put_active_time_ledger(wf_id, dataclasses.replace(ledger, consumed_ms=20), 1)
    )
    assert moved.generation == 2
    assert routed.view(lambda r: r.get_active_time_ledger(wf_id)).record.consumed_ms == 20

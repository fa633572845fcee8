"""Admission (resolution 6) on every backend: the five outcomes, nothing created by
any failure, alias moves after admission, and what one admission creates."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from storage.routed.enums import (
    AdmissionOutcome,
    DeploymentStatus,
    NodeStatus,
    RunStatus,
    WorkflowStatus,
)
from storage.routed.errors import (
    AlreadyRunning,
    CASConflict,
    DeploymentInactive,
    IdempotencyConflict,
    InvalidArgument,
    RoutedNotFound,
    UnknownSchemaVersion,
)
from storage.routed.rules import RoutedRules
from storage.routed.store import RoutedStore

from .support import STEPS, Boom, admit, alias, check_replay, counts, request, setup_deployment


def test_an_accepted_admission_creates_receipt_workflow_node_run_and_envelope(
    routed: RoutedStore,
) -> None:
    dep = setup_deployment(routed)
    admission = routed.transact(
        lambda r: r.admit_invocation(request(dep.record.deployment_id), dep.generation)
    )
    receipt = admission.receipt
    assert admission.outcome is AdmissionOutcome.ACCEPTED
    assert receipt.resolved_deployment_id == dep.record.deployment_id
    assert receipt.resolved_deployment_digest == dep.record.bundle_digest
    assert receipt.nested_package_digests == dep.record.nested_package_digests
    wf = routed.view(lambda r: r.get_workflow(receipt.workflow_id))
    assert (wf.record.status, wf.generation, wf.record.generation) == (WorkflowStatus.PENDING, 1, 1)
    assert wf.record.invocation_id == receipt.invocation_id
    run = routed.view(lambda r: r.get_run(receipt.run_id))
    assert run.record.status is RunStatus.PENDING
    assert run.generation == 1
    [node] = routed.view(lambda r: r.list_nodes(receipt.workflow_id))
    assert node.record.status is NodeStatus.READY  # the first READY launch intent
    assert node.record.run_id == receipt.run_id
    [transition] = routed.view(lambda r: r.list_node_transitions(node.record.node_id))
    assert (transition.from_state, transition.to_state) == (NodeStatus.PENDING, NodeStatus.READY)
    env = routed.view(lambda r: r.get_time_envelope(receipt.workflow_id)).record
    assert env.current_max_active_duration_ms == receipt.initial_max_active_duration_ms
    assert (env.lifecycle_authority_generation, env.cancellation_generation) == (1, 0)
    assert routed.view(lambda r: r.get_invocation_by_idempotency("alice", "key-1")) == receipt
    assert routed.view(lambda r: r.list_invocations()) == [receipt]


def test_the_same_key_and_intent_replays_the_original_receipt_creating_nothing(
    routed: RoutedStore,
) -> None:
    check_replay(routed)


def test_the_same_key_with_another_intent_is_an_idempotency_conflict(routed: RoutedStore) -> None:
    dep = setup_deployment(routed)
    routed.transact(lambda r: r.admit_invocation(request(dep.record.deployment_id), dep.generation))
    before = counts(routed)
    changed = request(dep.record.deployment_id, input_json='{"q": "other"}')
    with pytest.raises(IdempotencyConflict) as caught:
        routed.transact(lambda r: r.admit_invocation(changed, dep.generation))
    assert AdmissionOutcome.from_name(caught.value.outcome_name) is (
        AdmissionOutcome.IDEMPOTENCY_CONFLICT
    )
    assert counts(routed) == before


def test_idempotency_is_scoped_by_caller(routed: RoutedStore) -> None:
    dep = setup_deployment(routed)
    a = routed.transact(
        lambda r: r.admit_invocation(
            request(dep.record.deployment_id, caller="alice"), dep.generation
        )
    )
    b = routed.transact(
        lambda r: r.admit_invocation(
            request(dep.record.deployment_id, caller="bob"), dep.generation
        )
    )
    assert b.outcome is AdmissionOutcome.ACCEPTED
    assert a.receipt.invocation_id != b.receipt.invocation_id


def test_an_inactive_deployment_admits_nothing(routed: RoutedStore) -> None:
    dep = setup_deployment(routed)
    off = routed.transact(
        lambda r: r.set_deployment_status(
            dep.record.deployment_id, DeploymentStatus.INACTIVE, dep.generation
        )
    )
    before = counts(routed)
    with pytest.raises(DeploymentInactive) as caught:
        routed.transact(
            lambda r: r.admit_invocation(request(dep.record.deployment_id), off.generation)
        )
    assert caught.value.outcome_name == "DEPLOYMENT_INACTIVE"
    assert counts(routed) == before


def test_at_max_concurrent_runs_a_new_admission_is_already_running(routed: RoutedStore) -> None:
    dep = setup_deployment(routed, max_runs=2)
    for key in ("k1", "k2"):
        routed.transact(
            lambda r, key=key: r.admit_invocation(
                request(dep.record.deployment_id, key), dep.generation
            )
        )
    before = counts(routed)
    with pytest.raises(AlreadyRunning) as caught:
        routed.transact(
            lambda r: r.admit_invocation(request(dep.record.deployment_id, "k3"), dep.generation)
        )
    assert caught.value.outcome_name == "ALREADY_RUNNING"
    assert counts(routed) == before
    # A replay of an admitted key is not a new run: it still answers.
    replay = routed.transact(
        lambda r: r.admit_invocation(request(dep.record.deployment_id, "k1"), dep.generation)
    )
    assert replay.outcome is AdmissionOutcome.IDEMPOTENT_REPLAY


def test_a_finished_run_frees_its_concurrency_slot(routed: RoutedStore) -> None:
    first = admit(routed, "k1", max_runs=1)
    dep_id = first.receipt.resolved_deployment_id
    generation = routed.view(lambda r: r.get_deployment(dep_id)).generation
    wf = routed.view(lambda r: r.get_workflow(first.receipt.workflow_id))
    routed.transact(
        lambda r: r.update_workflow(
            dataclasses.replace(wf.record, status=WorkflowStatus.CANCELLED), 1
        )
    )
    second = routed.transact(lambda r: r.admit_invocation(request(dep_id, "k2"), generation))
    assert second.outcome is AdmissionOutcome.ACCEPTED


def test_a_stale_deployment_generation_is_a_cas_conflict(routed: RoutedStore) -> None:
    dep = setup_deployment(routed)
    before = counts(routed)
    with pytest.raises(CASConflict):
        routed.transact(
            lambda r: r.admit_invocation(request(dep.record.deployment_id), dep.generation + 1)
        )
    assert counts(routed) == before


def test_admission_through_an_alias_keeps_its_resolution_when_the_alias_moves(
    routed: RoutedStore,
) -> None:
    v1 = setup_deployment(routed, version="1.0.0")
    v2 = setup_deployment(routed, version="2.0.0")
    routed.transact(lambda r: r.compare_and_swap_alias(alias("prod", v1.record)))
    admitted = routed.transact(lambda r: r.admit_invocation(request("prod"), v1.generation))
    assert admitted.receipt.resolved_deployment_id == v1.record.deployment_id
    moved = routed.transact(
        lambda r: r.compare_and_swap_alias(alias("prod", v2.record, generation=1))
    )
    assert moved.generation == 2
    assert (
        routed.view(lambda r: r.resolve_alias("prod")).record.target_deployment_id
        == v2.record.deployment_id
    )
    replay = routed.transact(lambda r: r.admit_invocation(request("prod"), v2.generation))
    assert replay.receipt.resolved_deployment_id == v1.record.deployment_id
    assert routed.view(
        lambda r: r.get_invocation_by_idempotency("alice", "key-1")
    ).resolved_deployment_version == ("1.0.0")


def test_alias_cas_refuses_a_stale_generation_and_creates_only_at_zero(routed: RoutedStore) -> None:
    v1 = setup_deployment(routed, version="1.0.0")
    v2 = setup_deployment(routed, version="2.0.0")
    routed.transact(lambda r: r.compare_and_swap_alias(alias("prod", v1.record)))
    with pytest.raises(CASConflict):
        routed.transact(lambda r: r.compare_and_swap_alias(alias("prod", v2.record, generation=0)))
    with pytest.raises(CASConflict):
        routed.transact(lambda r: r.compare_and_swap_alias(alias("prod", v2.record, generation=7)))
    assert (
        routed.view(lambda r: r.resolve_alias("prod")).record.target_deployment_id
        == v1.record.deployment_id
    )
    with pytest.raises(InvalidArgument):  # the version must be the target's
        routed.transact(
            lambda r: r.compare_and_swap_alias(
                dataclasses.replace(alias("prod", v2.record, 1), target_version="9")
            )
        )
    with pytest.raises(RoutedNotFound):
        routed.view(lambda r: r.resolve_alias("nope"))
    assert [a.record.alias for a in routed.view(lambda r: r.list_aliases())] == ["prod"]


@pytest.mark.parametrize(
    "change",
    [
        {"idempotency_key": ""},
        {"caller_identity": ""},
        {"input_digest": "sha256:forged"},
        {"input_json": "not json"},
        {"input_json": '"' + "x" * 70_000 + '"'},
        {"initial_max_active_duration_ms": 0},
        {"requested_deployment_ref": "dep-missing"},
        {"requested_deployment_ref": "no-such-alias"},
        {"schema_version": "0.4.0"},
    ],
)
def test_bad_requests_are_refused_with_nothing_created(
    routed: RoutedStore, change: dict[str, Any]
) -> None:
    change = dict(change)  # the parameter is shared by every backend's run
    dep = setup_deployment(routed)
    before = counts(routed)
    base = request(dep.record.deployment_id)
    if "input_json" in change:
        base = dataclasses.replace(base, input_json=change.pop("input_json"))
    with pytest.raises((InvalidArgument, RoutedNotFound, UnknownSchemaVersion)):
        routed.transact(
            lambda r: r.admit_invocation(dataclasses.replace(base, **change), dep.generation)
        )
    assert counts(routed) == before


@pytest.mark.parametrize("step", STEPS)
def test_a_failure_at_any_step_of_admission_creates_nothing(store: Any, step: str) -> None:
    def fault(at: str) -> None:
        if at == step:
            raise Boom(at)

    plain = RoutedStore(store)
    faulty = RoutedStore(store, fault=fault)
    dep = setup_deployment(plain)
    before = counts(plain)
    with pytest.raises(Boom):
        faulty.transact(
            lambda r: r.admit_invocation(request(dep.record.deployment_id), dep.generation)
        )
    assert counts(plain) == before
    # And the key is still free: the same request is admitted afterwards.
    assert plain.transact(
        lambda r: r.admit_invocation(request(dep.record.deployment_id), dep.generation)
    ).outcome is (AdmissionOutcome.ACCEPTED)


def test_every_fault_step_is_reached_by_an_admission(store: Any) -> None:
    seen: list[str] = []
    routed = RoutedStore(store, fault=seen.append)
    dep = setup_deployment(routed)
    routed.transact(lambda r: r.admit_invocation(request(dep.record.deployment_id), dep.generation))
    assert seen == STEPS


def test_rules_are_one_class_over_the_rows(routed: RoutedStore) -> None:
    assert routed.transact(lambda r: isinstance(r, RoutedRules))


@pytest.mark.parametrize(
    "bad", ["a\x00b", "half \ud800", "€" * 85 + "x"], ids=["nul", "surrogate", "256-bytes"]
)
def test_caller_chosen_text_follows_the_identifier_rule_with_nothing_written(
    routed: RoutedStore, bad: str
) -> None:
    # Issue 20: PostgreSQL cannot hold a NUL, a surrogate failed in the key's digest,
    # and either reached the database as something other than InvalidArgument.
    dep = setup_deployment(routed)
    before = counts(routed)

    with pytest.raises(InvalidArgument):
        routed.transact(lambda r: r.compare_and_swap_alias(alias(bad, dep.record)))
    for field in ("idempotency_key", "caller_identity"):
        with pytest.raises(InvalidArgument):
            routed.transact(
                lambda r, field=field: r.admit_invocation(
                    request(dep.record.deployment_id, **{field: bad}), 1
                )
            )

    assert counts(routed) == before

"""Typed IDs and enums of the routed-run domain: prefixes, random minting and the
strict JSON round trip of every enum (names and Go numbers, nothing else)."""

from __future__ import annotations

import json

import pytest

from storage.errors import Invalid, StorageError
from storage.routed import enums, ids
from storage.routed.enums import (
    CodedEnum,
    DataClassification,
    FailureReason,
    FailureScope,
    RunStatus,
    TextEnum,
    WorkflowStatus,
    max_classification,
)
from storage.routed.errors import InvalidArgument

PREFIXES = {
    ids.DeploymentID: "dep-",
    ids.InvocationID: "inv-",
    ids.WorkflowID: "wf-",
    ids.NodeID: "node-",
    ids.RunID: "run-",
    ids.AttemptID: "at-",
    ids.LeaseID: "ls-",
    ids.ControlRequestID: "ctrl-",
    ids.LimitAmendmentID: "amend-",
    ids.ServiceID: "svc-",
    ids.HandoffID: "ho-",
    ids.ChildBatchID: "cb-",
    ids.ChildResultID: "cr-",
    ids.IdempotencyID: "idem-",
}


@pytest.mark.parametrize(("kind", "prefix"), PREFIXES.items(), ids=lambda v: str(v))
def test_it_mints_random_ids_with_the_spec_prefix(kind: type[ids.RoutedID], prefix: str) -> None:
    minted = {kind.new() for _ in range(200)}
    assert len(minted) == 200
    for value in minted:
        assert isinstance(value, kind)
        assert value.startswith(prefix)
        assert len(value) == len(prefix) + 32  # 128 random bits in hex
        assert kind.parse(value) == value


@pytest.mark.parametrize("kind", PREFIXES, ids=lambda k: k.__name__)
def test_it_refuses_a_wrong_or_empty_prefix(kind: type[ids.RoutedID]) -> None:
    other = next(p for k, p in PREFIXES.items() if k is not kind and not p.startswith(kind.prefix))
    for bad in ("", kind.prefix, other + "abc", "x" + kind.prefix + "abc", 7, None):
        with pytest.raises(InvalidArgument):
            kind.parse(bad)


def test_it_refuses_ids_with_spaces_slashes_or_past_the_length_bound() -> None:
    for bad in ("run-a b", "run-a/b", "run-" + "a" * 200, "run-\u00e9"):
        assert not ids.RunID.valid(bad)


def test_invalid_argument_sits_under_the_storage_root_and_invalid() -> None:
    assert issubclass(InvalidArgument, Invalid)
    assert issubclass(InvalidArgument, StorageError)


ALL_CODED = [e for e in enums.ALL_ENUMS if issubclass(e, CodedEnum)]
ALL_TEXT = [e for e in enums.ALL_ENUMS if issubclass(e, TextEnum)]


@pytest.mark.parametrize("kind", ALL_CODED, ids=lambda k: k.__name__)
def test_coded_enums_round_trip_by_name_and_by_go_number(kind: type[CodedEnum]) -> None:
    for member in kind:
        text = json.dumps(member.to_json())
        assert kind.from_json(json.loads(text)) is member
        assert kind.from_json(member.value) is member
        assert kind.from_name(member.name) is member
    # Numbers are the Go iota order: 0..n-1 without gaps.
    assert [m.value for m in kind] == list(range(len(kind)))


@pytest.mark.parametrize("kind", ALL_CODED, ids=lambda k: k.__name__)
def test_coded_enums_refuse_unknown_names_numbers_and_other_types(kind: type[CodedEnum]) -> None:
    for bad in (len(kind), -1, "NOPE", "pending", True, False, 1.0, None, [0]):
        with pytest.raises(InvalidArgument):
            kind.from_json(bad)


@pytest.mark.parametrize("kind", ALL_TEXT, ids=lambda k: k.__name__)
def test_text_enums_round_trip_only_by_their_string(kind: type[TextEnum]) -> None:
    for member in kind:
        assert kind.from_json(json.loads(json.dumps(member.to_json()))) is member
        with pytest.raises(InvalidArgument):
            kind.from_json(member.name)  # the Python name is not the wire value
    for bad in (0, "", "unknown", None, True):
        with pytest.raises(InvalidArgument):
            kind.from_json(bad)


def test_the_enums_have_the_spec_sizes_and_exact_numbers() -> None:
    assert len(FailureReason) == 31
    assert len(FailureScope) == 11
    assert FailureReason.DAEMON_RESTARTED.value == 21
    assert FailureReason.PAUSE_BOUNDARY_UNAVAILABLE.value == 30
    assert FailureScope.CHILD_BATCH.value == 10
    assert enums.ChildBatchStatus.CANCELLED.value == 10
    assert enums.NodeStatus.SKIPPED.value == 10
    assert enums.ServiceStatus.FAILED.value == 7
    assert enums.AttemptStatus.CANCELLED.value == 6
    assert enums.ControlCommand.AMEND_LIMITS.value == 5
    assert enums.AdmissionOutcome.DEPLOYMENT_INACTIVE.value == 4
    assert enums.ResumeCapability.NONE.value == 2
    assert enums.RecoveryDisposition.TERMINAL.value == 3
    assert enums.AuthorityScope.CONTROL.value == "runs:control"
    assert enums.AuthorityScope.AMEND_LIMITS.value == "runs:amend_limits"
    assert enums.ResumeReason.FAILURE_CONTINUATION.value == "failure_continuation"


def test_run_and_workflow_statuses_compare_by_name_not_number() -> None:
    # Resolution 1: BudgetExceeded and Expired swap numbers between the two enums.
    assert RunStatus.BUDGET_EXCEEDED.value == WorkflowStatus.EXPIRED.value == 8
    assert RunStatus.BUDGET_EXCEEDED != WorkflowStatus.EXPIRED  # type: ignore[comparison-overlap]
    assert RunStatus.EXPIRED.name == WorkflowStatus.EXPIRED.name
    assert RunStatus.from_json("EXPIRED").value == 9
    assert WorkflowStatus.from_json("EXPIRED").value == 8


def test_max_classification_picks_the_more_restrictive() -> None:
    order = list(DataClassification)
    assert [c.level for c in order] == [0, 1, 2, 3]
    for a in order:
        for b in order:
            assert max_classification(a, b) is (a if a.level >= b.level else b)


def test_every_routed_error_maps_to_an_http_status_in_the_console() -> None:
    from console.errors import STATUS
    from storage.routed import errors

    classes = [
        c
        for c in vars(errors).values()
        if isinstance(c, type) and issubclass(c, errors.RoutedError) and c is not errors.RoutedError
    ]
    assert len(classes) >= 14
    for cls in classes:
        assert any(issubclass(cls, base) for base, _status, _title in STATUS), cls.__name__

"""The six transition maps, every (from, to) pair against a copy of the spec's maps.

The copy below is typed in again from the spec text by status *name*, independently of
storage.routed.transitions, so a typo in either shows up as a failing pair.
"""

from __future__ import annotations

from enum import Enum

import pytest

from storage.routed import enums, transitions
from storage.routed.errors import TransitionError

from .support import SPEC

VALIDATORS = {
    "attempt": transitions.validate_attempt_transition,
    "child_batch": transitions.validate_child_batch_transition,
    "node": transitions.validate_node_transition,
    "run": transitions.validate_run_transition,
    "service": transitions.validate_service_transition,
    "workflow": transitions.validate_workflow_transition,
}

PAIRS = [
    pytest.param(resource, a, b, id=f"{resource}-{a.name}-{b.name}")
    for resource, (kind, _) in SPEC.items()
    for a in kind
    for b in kind
]


@pytest.mark.parametrize(("resource", "from_", "to"), PAIRS)
def test_every_pair_is_allowed_exactly_when_the_spec_map_allows_it(
    resource: str, from_: Enum, to: Enum
) -> None:
    allowed = to.name in SPEC[resource][1].get(from_.name, set())
    for validate in (VALIDATORS[resource], transitions.validate_transition):
        if allowed:
            validate(from_, to)  # type: ignore[operator]
        else:
            with pytest.raises(TransitionError) as caught:
                validate(from_, to)  # type: ignore[operator]
            assert caught.value.resource == resource
            assert caught.value.from_state is from_
            assert caught.value.to_state is to
            assert from_.name in caught.value.message
            assert to.name in caught.value.message


@pytest.mark.parametrize("resource", SPEC)
def test_terminal_means_no_outgoing_transition(resource: str) -> None:
    kind, spec = SPEC[resource]
    for status in kind:
        assert transitions.is_terminal(status) == (not spec.get(status.name))


def test_stopped_child_batches_are_terminal_though_the_go_map_omits_them() -> None:
    assert transitions.is_terminal(enums.ChildBatchStatus.STOPPED)
    with pytest.raises(TransitionError):
        transitions.validate_child_batch_transition(
            enums.ChildBatchStatus.STOPPED, enums.ChildBatchStatus.RUNNING
        )


def test_apply_run_transition_returns_the_target_or_raises() -> None:
    R = enums.RunStatus
    assert transitions.apply_run_transition(R.PENDING, R.RUNNING) is R.RUNNING
    with pytest.raises(TransitionError):
        transitions.apply_run_transition(R.SUCCEEDED, R.RUNNING)


def test_a_status_of_another_resource_is_refused_not_compared_by_number() -> None:
    with pytest.raises(TransitionError):
        transitions.validate_run_transition(
            enums.WorkflowStatus.PENDING,  # type: ignore[arg-type]
            enums.RunStatus.RUNNING,
        )

"""Negative controls: broken rules the suite must catch. Each control runs real tests
of this suite against a store that cheats in one way and expects them to fail; a
suite that passed on a cheating store would prove nothing."""

from __future__ import annotations

from enum import Enum
from typing import Any

import pytest

from storage import Store
from storage.routed.records import DurableIdempotencyRecord, Stored
from storage.routed.rows import Row
from storage.routed.rules import RoutedRules
from storage.routed.rules import specs as S
from storage.routed.rules.base import Spec
from storage.routed.store import RoutedStore

from .support import (
    WRITERS,
    check_replay,
    check_spec_transitions,
    check_stale_generations,
    make_world,
)

CAUGHT = (AssertionError, pytest.fail.Exception)


class SkipsTransitionCheck(RoutedRules):
    def _check_transition(self, old: Enum, new: Any) -> None:
        """Writes any status, whatever the map says."""


class IgnoresGeneration(RoutedRules):
    def _check_generation(self, spec: Spec[Any], current: Stored[Any], expected: int) -> None:
        """Writes over whatever generation the row has reached."""


class AdmitsTwice(RoutedRules):
    def _find_idempotent(self, caller: str, key: str) -> DurableIdempotencyRecord | None:
        return None  # never sees an earlier admission of the key

    def _create(self, spec: Spec[Any], record: Any) -> Stored[Any]:
        if spec is S.IDEMPOTENCY:  # and overwrites its idempotency record
            row: Row = self._row(spec, record, 1)
            if not self.rows.insert(spec.table, row):
                old = self.rows.get(spec.table, row.key)
                assert old is not None
                self.rows.update(spec.table, row, old.generation)
            return Stored(record, 1)
        return super()._create(spec, record)


def test_the_transition_pairs_catch_a_store_that_skips_the_check(store: Store) -> None:
    routed = RoutedStore(store, rules=SkipsTransitionCheck)
    world = make_world(routed)
    for resource in ("run", "attempt", "workflow", "node", "service", "child_batch"):
        with pytest.raises(CAUGHT):
            check_spec_transitions(routed, world, resource)


def test_the_cas_cases_catch_a_store_that_ignores_the_generation(store: Store) -> None:
    routed = RoutedStore(store, rules=IgnoresGeneration)
    for resource in WRITERS:
        world = make_world(routed)
        with pytest.raises(CAUGHT):
            check_stale_generations(routed, world, resource)


def test_the_replay_case_catches_a_store_that_admits_twice(store: Store) -> None:
    routed = RoutedStore(store, rules=AdmitsTwice)
    with pytest.raises(CAUGHT):
        check_replay(routed)


def test_the_honest_rules_pass_the_same_cases(store: Store) -> None:
    # The controls above fail for the cheat, not for the setup: the real rules pass.
    routed = RoutedStore(store)
    world = make_world(routed)
    check_spec_transitions(routed, world, "run")
    check_stale_generations(routed, make_world(routed), "run")
    check_replay(routed)

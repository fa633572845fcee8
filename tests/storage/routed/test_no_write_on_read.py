"""Opening the routed store and reading through it write nothing, on every backend: a
page that only reads must work on a read-only database (a full disk answered 503 on
the Workflows pages while the other reads answered 200, because opening the store
stamped it and moved the contract's clock row)."""

from __future__ import annotations

from typing import Any

from storage.routed.rules.specs import META
from storage.routed.store import RoutedStore

from ..support import FakeClock
from .support import admit, claimed, written


def test_opening_a_fresh_store_writes_nothing_and_the_first_write_stamps_it(
    store: Any,
) -> None:
    before = written(store)
    routed = RoutedStore(store)
    routed.view(lambda r: r.list_workflows())
    assert written(store) == before
    admit(routed)
    assert routed.view(lambda r: r._read(META, "schema")) is not None


def test_opening_a_used_store_and_reading_it_write_nothing(store: Any, clock: FakeClock) -> None:
    routed = RoutedStore(store)
    admission = admit(routed)
    workflow_id = admission.receipt.workflow_id
    claimed(routed, admission)
    clock.advance(seconds=5)  # a commit now would move the clock row
    before = written(store)
    again = RoutedStore(store)
    again.view(lambda r: r.get_workflow(workflow_id))
    again.view(lambda r: r.get_time_envelope(workflow_id))
    again.view(lambda r: r.list_attempts(admission.receipt.run_id))
    assert written(store) == before

"""Two Wait rules of the contract the shared cases did not hold (issue 20), on every
backend: a Wait must join the transaction that parks its attempt, and a Wait keeps its
progress when its state changes (spec "Waits")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from storage import Invalid, Store, Wait, WaitState

from ..support import FakeClock, make_event, make_wait, park, start_attempt, tx


def test_it_refuses_a_wait_registered_after_the_transaction_that_parked_its_attempt(
    store: Store, clock: FakeClock
) -> None:
    lease = start_attempt(store)
    tx(store, lambda t: park(t, "x1"), lease=lease)  # parked, Work waiting, no Wait

    with pytest.raises(Invalid, match="registered in the transaction that parks"):
        tx(store, lambda t: t.put_wait(make_wait("wt1")))
    assert tx(store, lambda t: t.waits("w1")) == []


def test_a_wait_registered_in_the_parking_transaction_is_accepted(
    store: Store, clock: FakeClock
) -> None:
    lease = start_attempt(store)

    tx(store, lambda t: park(t, "x1", make_wait("wt1")), lease=lease)

    assert tx(store, lambda t: t.wait("wt1").state) is WaitState.ACTIVE


@pytest.mark.parametrize("state", [WaitState.WOKEN, WaitState.CANCELLED])
def test_a_state_change_of_an_owned_wait_keeps_its_progress(
    store: Store, clock: FakeClock, state: WaitState
) -> None:
    lease = start_attempt(store)
    tx(store, lambda t: park(t, "x1", make_wait("wt1", owner="ext.review")), lease=lease)
    wait = tx(store, lambda t: t.put_wait(replace(t.wait("wt1"), progress="1 of 2")))
    tx(store, lambda t: t.accept_event(make_event("wake")))
    woken_by = "wake" if state is WaitState.WOKEN else ""

    def change(progress: str) -> Wait:
        changed = replace(wait, state=state, woken_by=woken_by, progress=progress)
        return tx(store, lambda t: t.put_wait(changed))

    with pytest.raises(Invalid, match="keeps its progress"):
        change("2 of 2")
    assert tx(store, lambda t: t.wait("wt1")) == wait
    assert change("1 of 2").progress == "1 of 2"

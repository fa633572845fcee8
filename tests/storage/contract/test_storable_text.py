"""Free text that cannot be stored is refused the same way on every backend: a NUL or
an unpaired surrogate anywhere in a record's text (a Wait's description and progress,
a Scope's name and config, an Event's type and actor, an attempt's trace ID, a
Timer's purpose) is ``Invalid`` before anything is written. On PostgreSQL a NUL failed
at commit as ``Unavailable`` (its JSON cannot hold ``\\u0000``), which tells a client
to retry a write that can never succeed; SQLite and the double stored it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from storage import Binding, Invalid, Store, Tx, WaitState

from ..support import (
    FakeClock,
    make_event,
    make_execution,
    make_scope,
    make_timer,
    make_wait,
    make_work,
    park,
    start_attempt,
    tx,
)

BAD = {"nul": "a\x00b", "surrogate": "a\ud800b"}

Write = Callable[[Tx, str], object]
Written = Callable[[Tx], object]

# record field -> (the write carrying ``bad`` there, what that write would change)
CASES: dict[str, tuple[Write, Written]] = {
    "work-latest_executor": (
        lambda t, bad: t.put_work(replace(make_work("w3"), latest_executor=bad)),
        lambda t: [w.id for w in t.works()],
    ),
    "event-actor": (
        lambda t, bad: t.accept_event(make_event("e2", source="core.action", actor=f"x:{bad}")),
        lambda t: [s.event.id for s in t.events()],
    ),
    "scope-name": (
        lambda t, bad: t.put_scope(make_scope("s2", name=bad)),
        lambda t: [s.id for s in t.scopes()],
    ),
    "scope-config-value": (
        lambda t, bad: t.put_scope(replace(make_scope("s2"), config={"region": [bad]})),
        lambda t: [s.id for s in t.scopes()],
    ),
    "scope-config-key": (
        lambda t, bad: t.put_scope(replace(make_scope("s2"), config={bad: 1})),
        lambda t: [s.id for s in t.scopes()],
    ),
    "scope-binding-pass_env": (
        lambda t, bad: t.put_scope(
            replace(make_scope("s2"), bindings=(Binding("b", "python", (bad,)),))
        ),
        lambda t: [s.id for s in t.scopes()],
    ),
    "execution-trace_id": (
        lambda t, bad: t.put_execution(replace(make_execution("x2", "w2"), trace_id=bad)),
        lambda t: [x.id for x in t.executions()],
    ),
    "timer-purpose": (
        lambda t, bad: t.put_timer(replace(make_timer("t2"), purpose=bad)),
        lambda t: [timer.id for timer in t.timers()],
    ),
    "wait-description": (
        lambda t, bad: park(t, "x1", replace(make_wait("wt2"), description=bad)),
        lambda t: ([w.id for w in t.waits()], t.execution("x1").state),
    ),
    "wait-types": (
        lambda t, bad: park(t, "x1", make_wait("wt2", types=(f"push.{bad}",))),
        lambda t: ([w.id for w in t.waits()], t.execution("x1").state),
    ),
}


def _records(store: Store) -> None:
    """w1 with a claimed attempt x1 (for Waits), Work w2."""
    start_attempt(store)
    tx(store, lambda t: t.put_work(make_work("w2")))


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
@pytest.mark.parametrize("field", CASES, ids=CASES.keys())
def test_it_refuses_text_that_cannot_be_stored_with_nothing_written(
    store: Store, clock: FakeClock, field: str, bad: str
) -> None:
    write, written = CASES[field]
    _records(store)
    before = tx(store, written)

    with pytest.raises(Invalid, match=r"NUL|surrogate"):
        tx(store, lambda t: write(t, bad))

    assert tx(store, written) == before


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
def test_it_refuses_unstorable_progress_on_an_owned_wait(
    store: Store, clock: FakeClock, bad: str
) -> None:
    _records(store)
    tx(store, lambda t: park(t, "x1", make_wait("wt1")))
    wait = tx(store, lambda t: t.wait("wt1"))

    with pytest.raises(Invalid):
        tx(store, lambda t: t.put_wait(replace(wait, progress=bad)))

    assert tx(store, lambda t: (t.wait("wt1").progress, t.wait("wt1").state)) == (
        wait.progress,
        WaitState.ACTIVE,
    )


def test_it_keeps_every_other_character_in_free_text(store: Store, clock: FakeClock) -> None:
    # Control characters, bidi overrides, U+FFFF and astral characters are storable.
    text = "\x01\x1f\u202e\uffff𝄞 é"
    _records(store)

    def fn(t: Tx) -> None:
        t.put_scope(replace(make_scope("s2", name=text), config={text: [text]}))
        park(t, "x1", replace(make_wait("wt2"), description=text))

    tx(store, fn)
    scope = tx(store, lambda t: t.scope("s2"))
    assert (scope.name, dict(scope.config)) == (text, {text: [text]})
    assert tx(store, lambda t: t.wait("wt2").description) == text

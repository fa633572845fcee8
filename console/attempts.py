"""What a Work's attempts and Waits say, in words that match what happened.

A row that shows a retry decision needs three things about its Work: the latest
attempt (its number, state and outcome text), whether a retry Timer will run it again
(and when), and whether it is exhausted. ``read_last_tries`` reads them for a whole
list in three queries (``latest_executions``, ``timers_of``, ``waits_of``), whatever
the list's length.

The store does not know the runtime's retry policy (how many attempts it allows is
runtime policy, the contract says, and the demo counts failures, timeouts included,
not attempts), so a row says "attempt 3" and what comes next: "retry at 14:02
(timer)", "no retry scheduled", or "exhausted" — never an "of max" it would guess.

Labels never use a live-sounding word for a finished thing: an attempt that ended
waiting reads "timed out waiting for …", "woken by <Event>" or "cancelled" once its
Wait has ended, and only an active Wait reads "waiting for …". A cancelled Wait of a
Work that is not cancelled, with a timeout Timer, is read as timed out: a Wait's record
does not say who cancelled it, and the runtime cancels a Wait when its timeout fires.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from storage import Execution, ExecutionState, Timer, Tx, Wait, WaitState, Work, WorkState

# Outcome text shown in full on hover/expand beyond this many characters.
SHORT = 80


def wait_target(wait: Wait) -> str:
    """What a Wait waits for, in a few words."""
    parts = list(wait.types) + [f"{k.source}/{k.external_id}" for k in wait.keys]
    return " or ".join(parts) or wait.description or "any Event"


def wait_label(wait: Wait, work_state: WorkState | None = None) -> str:
    """An active Wait waits; an ended one says how it ended."""
    if wait.state is WaitState.ACTIVE:
        return f"waiting for {wait_target(wait)}"
    if wait.state is WaitState.WOKEN:
        return f"woken by {wait.woken_by}" if wait.woken_by else "woken"
    if work_state is None:
        # Without its Work's state, an operator's cancel and a timeout look the same.
        return "ended (timed out or cancelled)"
    if work_state is not WorkState.CANCELLED and wait.timeout_timer_id:
        return f"timed out waiting for {wait_target(wait)}"
    return "cancelled"


def attempt_label(x: Execution, waits: Iterable[Wait], work_state: WorkState | None) -> str:
    """The attempt's state in words; for one that parked or ended waiting, what became
    of its Wait (``waits``: any Waits, the attempt's are picked out)."""
    mine = sorted((w for w in waits if w.execution_id == x.id), key=lambda w: w.created_at)
    wait = mine[-1] if mine else None
    if x.state in (ExecutionState.PARKED, ExecutionState.WAITING):
        if wait is None:
            return "parked" if x.state is ExecutionState.PARKED else "ended waiting"
        label = wait_label(wait, work_state)
        if x.state is ExecutionState.PARKED or wait.state is not WaitState.ACTIVE:
            return label
        return f"ended; the Work is {label}"
    if x.state is ExecutionState.HANDOFF:
        return "handed off"
    return x.state.value


@dataclass(frozen=True, slots=True)
class LastTry:
    """A Work's latest attempt and what comes next, as its row shows it."""

    work_id: str
    attempt: int  # the latest attempt's number, 0 when never attempted
    state: str  # its ExecutionState value, "" when never attempted
    label: str  # ``attempt_label``
    message: str  # its outcome text ("" when none, or when the label says it all)
    retry_at: int  # fire time of the Work's earliest Timer, 0 when it has none
    retry_purpose: str  # that Timer's purpose ("retry", "timeout", ...)
    exhausted: bool  # ready, attempted, nothing live, no Timer: needs an operator
    next: str  # "exhausted", "timer" (retry_at), "none" (nothing scheduled) or "" (live/ended)

    @property
    def short(self) -> str:
        return self.message if len(self.message) <= SHORT else self.message[: SHORT - 1] + "…"

    @property
    def truncated(self) -> bool:
        return len(self.message) > SHORT

    @property
    def tone(self) -> str:
        """The badge colour: a timed-out Wait reads as the failure it counts as."""
        return "failed" if self.label.startswith("timed out") else self.state


def last_try(
    work: Work, x: Execution | None, timers: Sequence[Timer], waits: Sequence[Wait]
) -> LastTry:
    """One Work's ``LastTry`` from records already read."""
    live = x is not None and not x.terminal
    first = min(timers, key=lambda t: (t.fire_at, t.id), default=None)
    message = ""
    if x is not None and x.outcome is not None and x.state is not ExecutionState.WAITING:
        # A waiting outcome's text ("waiting for ...") is what the label restates
        # truthfully; any other outcome's text is the failure (or result) itself.
        message = x.outcome.message
    exhausted = work.state is WorkState.READY and x is not None and not live and first is None
    if work.terminal or live or x is None:
        upcoming = ""
    elif first is not None:
        upcoming = "timer"
    else:
        upcoming = "exhausted" if exhausted else "none"
    return LastTry(
        work_id=work.id,
        attempt=x.attempt if x else 0,
        state=x.state.value if x else "",
        label=attempt_label(x, waits, work.state) if x else "",
        message=message,
        retry_at=first.fire_at if first else 0,
        retry_purpose=first.purpose if first else "",
        exhausted=exhausted,
        next=upcoming,
    )


def read_last_tries(tx: Tx, works: Sequence[Work]) -> dict[str, LastTry]:
    """The ``LastTry`` of each Work in ``works``: three queries for any number of Work
    (none for an empty list)."""
    if not works:
        return {}
    ids = [w.id for w in works]
    latest = tx.latest_executions(ids)
    timers: dict[str, list[Timer]] = {}
    for t in tx.timers_of(ids):
        timers.setdefault(t.work_id, []).append(t)
    waits: dict[str, list[Wait]] = {}
    for w in tx.waits_of(ids):
        waits.setdefault(w.work_id, []).append(w)
    return {
        w.id: last_try(w, latest.get(w.id), timers.get(w.id, []), waits.get(w.id, []))
        for w in works
    }

"""What the operator actions' confirmation pages show: one ``storage.view`` each."""

from __future__ import annotations

from dataclasses import dataclass

from console.attempts import LastTry, last_try, read_last_tries
from console.polling import read
from storage import Execution, NotFound, Timer, Tx, Wait, WaitState, Work, WorkState, from_ns
from storage.ops.control import cancel_refusal, next_attempt, retry_refusal
from storage.ops.manual import Action


@dataclass(frozen=True, slots=True)
class ActionPreview:
    """What the confirmation page of one action shows."""

    now: int
    work: Work
    refusal: str
    live: list[Execution]
    active_waits: list[Wait]
    timers: list[Timer]
    next_attempt: int
    last_try: LastTry


def read_action_preview(work_id: str, action: Action) -> ActionPreview:
    def build(tx: Tx) -> ActionPreview:
        work = tx.work(work_id)
        live = tx.live_executions(work.id)
        attempts = tx.executions(work.id)
        waits, timers = tx.waits(work.id), tx.timers(work.id)
        refusal = (
            cancel_refusal(work) if action is Action.CANCEL else retry_refusal(work, len(live))
        )
        latest = max(attempts, key=lambda x: x.attempt, default=None)
        return ActionPreview(
            now=tx.now,
            work=work,
            refusal=refusal,
            live=live,
            active_waits=[w for w in waits if w.state is WaitState.ACTIVE],
            timers=timers,
            next_attempt=next_attempt(attempts),
            last_try=last_try(work, latest, timers, waits),
        )

    return read(build)


# Why a bulk retry skips Work in backoff (ready, idle, a Timer will run it): a retry
# removes the Work's Timers (``storage.ops.control.retry_work``), so sweeping it in
# would replace the runtime's own schedule. One Work's page still retries it.
BACKOFF = (
    "in backoff: its retry Timer runs it at {at:%H:%M:%S} UTC; a bulk retry leaves it and "
    "its Timer alone (retry it from its own page to run it now)"
)


def timed_work(tx: Tx, action: Action, works: list[Work]) -> dict[str, int]:
    """The first fire time of the Timers of each ready, not exhausted Work among
    ``works`` that has one, read at once (retry only: backoff is what a bulk retry
    must not sweep in)."""
    if action is not Action.RETRY:
        return {}
    ready = [w.id for w in works if w.state is WorkState.READY and not w.exhausted]
    first: dict[str, int] = {}
    for t in tx.timers_of(ready) if ready else []:
        first[t.work_id] = min(t.fire_at, first.get(t.work_id, t.fire_at))
    return first


def bulk_refusal(action: Action, work: Work, live: set[str], timed: dict[str, int]) -> str:
    """Why ``action`` does not apply to ``work`` in a bulk action ("" when it does);
    ``live`` holds the IDs of Work with a live attempt (read once for the action),
    ``timed`` what ``timed_work`` found."""
    if action is Action.CANCEL:
        return cancel_refusal(work)
    why = retry_refusal(work, 1 if work.id in live else 0)
    if not why and work.state is WorkState.READY and not work.exhausted and work.id in timed:
        return BACKOFF.format(at=from_ns(timed[work.id]))
    return why


@dataclass(frozen=True, slots=True)
class Gone:
    """A Work a bulk confirmation promised that the action's re-read no longer found
    under the filter: someone or something changed it in between."""

    work_id: str
    work: Work | None  # as it is now (None: deleted)
    by: str  # who changed it ("operator:bob", an Event's source) or "" (not known)


# Work of a bulk result whose changer is looked up (one Event read each); the rest
# say when they changed, not who.
GONE_NAMED = 200


def read_gone(work_ids: list[str], since: int) -> list[Gone]:
    """What became of ``work_ids`` (promised, no longer matching): each Work now and
    who changed it, from the latest Event naming it when that was accepted at or
    after ``since`` (the confirmation's time). Queries: the Work (1), one Event read
    for each of the first ``GONE_NAMED``."""

    def build(tx: Tx) -> list[Gone]:
        works = {w.id: w for w in tx.works_of(work_ids)} if work_ids else {}
        out = []
        for n, work_id in enumerate(work_ids):
            work, by = works.get(work_id), ""
            if work is not None and n < GONE_NAMED:
                latest = tx.find_events(work_id=work_id, newest_first=True, limit=1)
                if latest and latest[0].event.received_at >= since:
                    event = latest[0].event
                    by = event.actor or f"an Event from {event.source}"
            out.append(Gone(work_id, work, by))
        return out

    return read(build)


@dataclass(frozen=True, slots=True)
class BulkPlan:
    """Selected rows (by ID) split into eligible and excluded-with-reason."""

    action: Action
    eligible: list[Work]
    excluded: list[tuple[str, Work | None, str]]  # (Work ID, Work if it exists, reason)
    tries: dict[str, LastTry]  # the eligible Work's last tries
    now: int

    @property
    def shown(self) -> list[Work]:
        return self.eligible  # "selected" is at most a page of rows


def read_bulk_plan(action: Action, work_ids: list[str]) -> BulkPlan:
    """Split the selected Works into eligible and excluded-with-reason (what the filter
    matches is ``console.operate.sweep``'s). Live attempts are read once."""

    def build(tx: Tx) -> BulkPlan:
        excluded: list[tuple[str, Work | None, str]] = []
        works: list[Work] = []
        for work_id in dict.fromkeys(work_ids):
            try:
                works.append(tx.work(work_id))
            except NotFound:
                excluded.append((work_id, None, "no such Work"))
        live = {x.work_id for x in tx.live_executions()} if action is Action.RETRY else set()
        eligible = []
        timed = timed_work(tx, action, works)
        for work in works:
            why = bulk_refusal(action, work, live, timed)
            if why:
                excluded.append((work.id, work, why))
            else:
                eligible.append(work)
        return BulkPlan(action, eligible, excluded, read_last_tries(tx, eligible), tx.now)

    return read(build)

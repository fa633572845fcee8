"""What the operator actions' confirmation pages show: one ``storage.view`` each."""

from __future__ import annotations

from dataclasses import dataclass

from console.actions import BULK_CAP
from console.polling import read
from console.works.filters import WorkFilter
from console.works.reads import within
from storage import Execution, NotFound, Timer, Tx, Wait, Work
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


def read_action_preview(work_id: str, action: Action) -> ActionPreview:
    def build(tx: Tx) -> ActionPreview:
        work = tx.work(work_id)
        live = tx.live_executions(work.id)
        attempts = tx.executions(work.id)
        refusal = (
            cancel_refusal(work) if action is Action.CANCEL else retry_refusal(work, len(live))
        )
        return ActionPreview(
            now=tx.now,
            work=work,
            refusal=refusal,
            live=live,
            active_waits=tx.active_waits(work.id),
            timers=tx.timers(work.id),
            next_attempt=next_attempt(attempts),
        )

    return read(build)


@dataclass(frozen=True, slots=True)
class BulkPlan:
    action: Action
    eligible: list[Work]
    excluded: list[tuple[str, Work | None, str]]  # (Work ID, Work if it exists, reason)
    truncated: bool  # the filter matched more than ``cap`` Works
    cap: int


def read_bulk_plan(
    action: Action, *, work_ids: list[str] | None = None, f: WorkFilter | None = None
) -> BulkPlan:
    """Split the selected Works (by ID, or the first BULK_CAP the filter matches, in
    its order) into eligible and excluded-with-reason. Live attempts are read once."""

    def build(tx: Tx) -> BulkPlan:
        excluded: list[tuple[str, Work | None, str]] = []
        works: list[Work] = []
        truncated = False
        if work_ids is not None:
            for work_id in dict.fromkeys(work_ids):
                try:
                    works.append(tx.work(work_id))
                except NotFound:
                    excluded.append((work_id, None, "no such Work"))
        elif f is not None:
            works = tx.query_works(f.query(limit=BULK_CAP + 1, scope_ids=within(tx, f)))
            truncated, works = len(works) > BULK_CAP, works[:BULK_CAP]
        live = {x.work_id for x in tx.live_executions()} if action is Action.RETRY else set()
        eligible = []
        for work in works:
            if action is Action.CANCEL:
                why = cancel_refusal(work)
            else:
                why = retry_refusal(work, 1 if work.id in live else 0)
            if why:
                excluded.append((work.id, work, why))
            else:
                eligible.append(work)
        return BulkPlan(action, eligible, excluded, truncated, BULK_CAP)

    return read(build)

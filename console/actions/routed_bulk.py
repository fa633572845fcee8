"""Bulk pause, resume and cancel of routed-run workflows: ``do_bulk_control``, shared
by the bulk confirmation (``console.routed.bulk``) and the tests.

As the Work bulk (``console.actions.work.do_bulk``): batched, the write lock yielded
between batches, done / skipped (with reasons) in the summary. Each batch is one
routed transaction with its workflows' notes inside it (``console.actions.routed``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from console.actions.common import BULK_YIELD_MAX, check_request
from console.actions.observed import bulk_label, observed
from console.actions.routed import (
    BULK_ACTIONS,
    RoutedAction,
    RoutedResult,
    control_request,
    note_db,
    note_token,
    write_note,
)
from console.models import RoutedActionNote
from console.routed.previews import allowed_actions
from storage import Invalid, StorageError
from storage.routed.errors import InvalidArgument, RoutedNotFound
from storage.routed.ids import WorkflowID
from storage.routed.rules import RoutedRules
from storage.routed.store import RoutedStore

# Workflows per bulk transaction. Measured on SQLite under a load of 15 (2 cores
# shared): a pause costs about 33 ms per workflow (its runs, nodes, batches, envelope,
# desired state, request and result), so the Work bulk's 25 would hold the write lock
# for about 0.8 s; 5 keeps a transaction near 150 ms there (tens of ms when idle).
BULK_BATCH = 5
# Workflows per bulk request: at that cost 1,000 take 5-35 s in one request (the
# Work bulk's 10,000 would outlast the server's worker timeout); the confirmation
# says when there are more, and acting again takes the next ones.
BULK_CAP = 1000

__all__ = ["BULK_BATCH", "BULK_CAP", "BulkControlSummary", "do_bulk_control"]


@dataclass(frozen=True, slots=True)
class BulkControlSummary:
    action: RoutedAction
    done: tuple[RoutedResult, ...]
    skipped: tuple[tuple[str, str], ...]  # (workflow ID, why)


Outcome = RoutedResult | tuple[str, str]


@observed(bulk_label("workflow", frozenset(a.value for a in BULK_ACTIONS)))
def do_bulk_control(
    routed: RoutedStore,
    *,
    username: str,
    action: RoutedAction,
    workflow_ids: Sequence[str],
    reason: str,
    token: str,
) -> BulkControlSummary:
    """Pause, resume or cancel many workflows, ``BULK_BATCH`` per transaction, each at
    its generation as read in the transaction that acts on it (a bulk form has no
    per-row generation: what the filter matched is re-checked against the status map
    instead, and skipped with its status when the action no longer applies). Each
    workflow's note is written in its batch's transaction. One token for the run:
    each workflow's control request is keyed by it and its note is looked for first,
    so a resubmitted bulk form replays."""
    if action not in BULK_ACTIONS:
        raise Invalid(f"bulk {action.value} is not offered")
    reason = check_request(username, reason, token)
    ids = list(dict.fromkeys(workflow_ids))
    if len(ids) > BULK_CAP:
        raise Invalid(f"a bulk action takes at most {BULK_CAP} workflows, not {len(ids)}")
    notes = RoutedActionNote.objects.using(note_db(routed))

    def one(r: RoutedRules, raw: str, noted: RoutedActionNote | None) -> Outcome:
        if noted is not None:
            return RoutedResult(action, raw, noted.done, noted.detail, duplicate=True)
        try:
            wf = r.get_workflow(WorkflowID.parse(raw))
        except (RoutedNotFound, InvalidArgument) as exc:
            return (raw, str(exc))
        try:
            desired = r.get_desired_state(wf.record.workflow_id).record.cancel_precedence
        except RoutedNotFound:
            desired = False
        status = wf.record.status
        if action not in allowed_actions(status, cancel_desired=desired):
            return (raw, f"{status.name.lower()}: {action.value} does not apply")
        req = control_request(action, username, wf.record.workflow_id, wf.generation, token)
        outcome = r.request_control(req)
        res = outcome.result
        result = RoutedResult(action, raw, res.applied, res.detail, duplicate=outcome.replay)
        write_note(routed, token, raw, username, reason, result)
        return result

    def each(chunk: list[str]) -> Callable[[RoutedRules], list[Outcome]]:
        def batch(r: RoutedRules) -> list[Outcome]:
            # A resubmitted bulk form: what it did is noted (one query a batch).
            keys = [note_token(token, raw) for raw in chunk]
            noted = {n.target: n for n in notes.filter(token__in=keys)}
            return [one(r, raw, noted.get(raw)) for raw in chunk]

        return batch

    results: list[Outcome] = []
    for start in range(0, len(ids), BULK_BATCH):
        chunk = ids[start : start + BULK_BATCH]
        began = time.monotonic()
        try:
            results += routed.transact(each(chunk))
        except StorageError:
            # One workflow refused mid-batch (it moved under us): the batch rolled
            # back, notes with it, so take its workflows one transaction each.
            for raw in chunk:
                try:
                    results += routed.transact(each([raw]))
                except StorageError as exc:
                    results.append((raw, str(exc)))
        # As the Work bulk does: yield the write lock as long as this batch held it,
        # so a waiting writer (the supervisor, another operator) gets its turn.
        time.sleep(min(time.monotonic() - began, BULK_YIELD_MAX))
    done = tuple(x for x in results if isinstance(x, RoutedResult))
    skipped = tuple(x for x in results if not isinstance(x, RoutedResult))
    return BulkControlSummary(action, done, skipped)

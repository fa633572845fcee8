"""A parent stage's child batch, driven one boundary per ``advance``: after the
parent's first step it fans out (the batch as INTENT, its child runs, ALLOCATED,
RUNNING); then one child runs start to result per advance; when every child has its
result (or, with ``all_first``, at the first failed one) the batch joins, and a failed
batch fails the parent and its workflow (CHILD_BATCH_FAILED).

Our reading of the two join policies, which the spec names but does not define:
``join_all`` waits for every child and fails if any failed; ``all_first`` fails the
batch at its first failed child and cancels the children not run yet."""

from __future__ import annotations

from collections.abc import Callable

from storage.routed.enums import ChildBatchStatus, FailureReason, FailureScope, RunStatus
from storage.routed.ids import AttemptID, ChildBatchID, ChildResultID, LeaseID, RunID
from storage.routed.store import RoutedStore

from . import catalog, moves
from .reading import Seen


def drive_batch(
    routed: RoutedStore,
    seen: Seen,
    run_id: RunID,
    held: dict[AttemptID, LeaseID],
    new_hex: Callable[[], str],
) -> str | None:
    """A parent stage: after its first step it fans out; while the batch runs, one
    child runs per advance; a failed batch fails the parent. None: no batch work."""
    if seen.wf.record.workflow_kind != "parent_child" or seen.done.get(run_id, 0) < 1:
        return None
    plan = catalog.plan_for(seen.receipt.invocation_intent_digest, seen.restarted)
    if not seen.batches:
        batch_id = ChildBatchID(f"cb-{new_hex()}")
        run_ids = [RunID(f"run-{new_hex()}") for _ in range(plan.children)]
        parent = seen.runs[run_id].record
        routed.transact(lambda r: moves.spawn_batch(r, parent, batch_id, run_ids, plan.join))
        return "spawned"
    batch = seen.batches[0].record
    if batch.status is ChildBatchStatus.SUCCEEDED:
        return None
    if batch.status is ChildBatchStatus.FAILED:
        attempt = seen.live_attempt(run_id)
        lease = held.pop(attempt.record.attempt_id, None) if attempt else None
        if attempt is None or lease is None:
            return "waiting"
        failing = attempt.record.attempt_id
        routed.transact(
            lambda r: moves.fail_workflow(
                r, failing, lease, FailureReason.CHILD_BATCH_FAILED, FailureScope.CHILD_BATCH
            )
        )
        return "failed"
    if batch.status is not ChildBatchStatus.RUNNING:
        return "waiting"
    results = {r.child_run_id: r for r in seen.results.get(batch.child_batch_id, [])}
    pending = [c for c in batch.child_run_ids if c not in results]
    failed = any(r.status is not RunStatus.SUCCEEDED for r in results.values())
    if not pending or (failed and batch.join_policy.mode == "all_first"):
        routed.transact(lambda r: moves.join_batch(r, batch.child_batch_id, failed))
        return "joined"
    child = pending[0]
    fails = plan.child_fails and len(pending) == 1
    attempt_id, result_id = AttemptID(f"at-{new_hex()}"), ChildResultID(f"cr-{new_hex()}")
    routed.transact(
        lambda r: moves.run_child(r, batch.child_batch_id, child, attempt_id, result_id, fails)
    )
    return "child"

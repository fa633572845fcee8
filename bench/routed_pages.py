"""Benchmark 9: the routed-run console's Workflows list and workflow page against the
Work list, at the same count of workflows as of Work.

The Work history is a realistic one (``history.amplify(proportional=True)``); into
a copy of it the child admits a seed of real routed workflows through
``RoutedStore`` (three deployments, attempts claimed, some failed with a reason,
some paused), then clones the seed's workflow rows in plain SQL under new IDs up
to the count (admission runs at tens of transactions a second, so 100,000 through
the store would take most of an hour). The Workflows list reads only the workflow
and deployment tables, so the clones are what it pages over; the workflow page is
timed on a seed workflow, which has every record.

In-process with django.test.Client as a signed-in superuser, DEBUG off, as in
benchmarks 3 and 7; the pages are requested in turn, so each sees the same machine.
"""

from __future__ import annotations

from typing import Any

from .config import Sizes
from .inproc import get_ok
from .proc import DataDir, Workspace, child, log
from .report import Section, Target, ms, ratio, table
from .stats import Spread, rounds

SEED = 60
CLONE_BATCH = 5_000


def _seed_workflows() -> dict[str, str]:
    """Real workflows through the store: IDs of a running one (with an attempt under a
    lease) and of a failed one."""
    import dataclasses
    import functools
    import json

    from storage.default import default_routed_store
    from storage.routed.enums import (
        AttemptStatus,
        AuthorityScope,
        ControlCommand,
        FailureReason,
        FailureScope,
        RunStatus,
        WorkflowStatus,
    )
    from storage.routed.ids import AttemptID, ControlRequestID, DeploymentID
    from storage.routed.records import (
        AttemptRecord,
        ControlRequest,
        DeploymentRecord,
        InvocationRequest,
    )
    from storage.routed.rules import RoutedRules, input_digest

    reasons = [
        FailureReason.MODEL_TIMEOUT,
        FailureReason.STALL_TIMEOUT,
        FailureReason.POLICY_DENIED,
    ]

    def deploy(r: RoutedRules, name: str) -> Any:
        return r.create_deployment(
            DeploymentRecord(
                deployment_id=DeploymentID.new(),
                package_name=name,
                package_version="1.0.0",
                max_concurrent_runs=0,
                bundle_digest=f"sha256:{name}",
                policy_digest="sha256:p",
                image_lock_digest="sha256:i",
                provenance_digest="sha256:v",
                created_by="bench",
                nested_package_digests={"stage:0": f"sha256:{name}-0"},
            )
        )

    def admit(r: RoutedRules, i: int, dep: Any) -> Any:
        """Admit workflow ``i`` and claim its first attempt."""
        text = json.dumps({"order": i})
        receipt = r.admit_invocation(
            InvocationRequest(
                requested_deployment_ref=dep.record.deployment_id,
                input_json=text,
                input_digest=input_digest(text),
                initial_max_active_duration_ms=3_600_000,
                initial_attempt_lease_ms=60_000,
                initial_max_cost_usd_decimal="5.00",
                creation_options_digest="sha256:opts",
                idempotency_key=f"bench-{i}",
                caller_identity="bench",
            ),
            dep.generation,
        ).receipt
        created = r.create_attempt(
            AttemptRecord(AttemptID.new(), receipt.run_id, receipt.workflow_id, 1)
        )
        return receipt, r.claim_attempt(created.record.attempt_id, created.generation, 60_000)

    def fail(r: RoutedRules, i: int, receipt: Any, attempt: Any) -> None:
        """Fail the attempt, its run and its workflow with a reason."""
        lease = attempt.record.lease
        if lease is None:
            raise RuntimeError("a claimed attempt without a lease")
        failed = dataclasses.replace(
            attempt.record,
            status=AttemptStatus.FAILED,
            failure_reason=reasons[i % len(reasons)],
            failure_scope=FailureScope.MODEL_CALL,
        )
        r.update_attempt(failed, attempt.generation, lease.lease_id)
        run = r.get_run(receipt.run_id)
        r.update_run(dataclasses.replace(run.record, status=RunStatus.FAILED), run.generation)
        wf = r.get_workflow(receipt.workflow_id)
        r.update_workflow(
            dataclasses.replace(
                wf.record, status=WorkflowStatus.FAILED, terminal_reason=reasons[i % len(reasons)]
            ),
            wf.generation,
        )

    def pause(r: RoutedRules, i: int, receipt: Any) -> None:
        r.request_control(
            ControlRequest(
                control_request_id=ControlRequestID.new(),
                workflow_id=receipt.workflow_id,
                command=ControlCommand.PAUSE,
                expected_generation=r.get_workflow(receipt.workflow_id).generation,
                actor_identity="bench",
                authority_scope=AuthorityScope.CONTROL,
                idempotency_key=f"pause-{i}",
            )
        )

    routed = default_routed_store()
    names = ("bench.checkout", "bench.search", "bench.mail")
    deployments = [routed.transact(functools.partial(deploy, name=name)) for name in names]
    picked: dict[str, str] = {}
    for i in range(SEED):
        # Admitted and claimed in one transaction, failed or paused in the next.
        dep = deployments[i % len(deployments)]
        receipt, attempt = routed.transact(functools.partial(admit, i=i, dep=dep))
        if i % 3 == 1:  # failed with a reason
            routed.transact(functools.partial(fail, i=i, receipt=receipt, attempt=attempt))
            picked.setdefault("failed", receipt.workflow_id)
        elif i % 3 == 2:  # pause requested while it runs
            routed.transact(functools.partial(pause, i=i, receipt=receipt))
        else:
            picked["running"] = receipt.workflow_id
    return picked


def _clone(total: int) -> int:
    """Clone the seed's workflow rows under new IDs (the ID inside the JSON too) until
    the table holds ``total``: the table the Workflows list pages over; then count the
    workflow tally again from them."""
    import secrets

    from django.db import connections, transaction

    from storage.routed.models import RoutedWorkflowRow
    from storage.routed.rows_orm import rebuild_workflow_tally

    table = RoutedWorkflowRow._meta.db_table
    columns = '"key", "body", "generation", "parent", "status", "kind", "reason"'
    with connections["default"].cursor() as cursor:
        cursor.execute(f'SELECT {columns} FROM "{table}" ORDER BY "id"')  # noqa: S608
        seed = cursor.fetchall()
    have = len(seed)
    while have < total:
        rows = []
        for n in range(min(CLONE_BATCH, total - have)):
            key, body, generation, parent, status, kind, reason = seed[(have + n) % len(seed)]
            new = "wf-" + secrets.token_hex(16)
            rows.append([new, body.replace(key, new), generation, parent, status, kind, reason])
        with transaction.atomic(using="default"), connections["default"].cursor() as cursor:
            cursor.executemany(
                f'INSERT INTO "{table}" ({columns}) VALUES (%s, %s, %s, %s, %s, %s, %s)',  # noqa: S608
                rows,
            )
        have += len(rows)
    # The clones went in past the rules that keep the workflow tally beside the rows
    # (storage/routed/tally.py): count it again, or the list's facets and counts would
    # read the seed's alone.
    with transaction.atomic(using="default"), connections["default"].cursor() as cursor:
        rebuild_workflow_tally(cursor)
    return have


def measure(workflows: int, reps: int) -> dict[str, Any]:
    """(child) Seconds per request of each page, interleaved, after one warm-up round."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from storage import WorkQuery, view
    from storage.default import default_routed_store, default_store
    from storage.routed.rules import WorkflowQuery

    picked = _seed_workflows()
    count = _clone(workflows)
    routed = default_routed_store()
    counted = routed.view(lambda r: r.count_workflows(WorkflowQuery()))
    if counted != count:  # the list would time a tally that missed the clones
        raise RuntimeError(f"the workflow tally counts {counted:,} of {count:,} workflows")
    works = view(default_store(), None, lambda tx: tx.count_works(WorkQuery()))
    first_page = routed.view(lambda r: r.page_workflows(WorkflowQuery(), None, 500))
    middle = first_page.rows[-1].record.workflow_id
    user = get_user_model().objects.create_superuser("bench", "bench@example.com", "bench-pass")
    client = Client()
    client.force_login(user)
    running = picked["running"]
    pages = {
        "work_list": "/",
        "workflows": "/routed/workflows",
        "workflows_failed": "/routed/workflows?status=FAILED&reason=STALL_TIMEOUT",
        "workflows_search": f"/routed/workflows?q={running[:9]}",
        "workflows_page_11": f"/routed/workflows?after={middle}",
        "workflow_page": f"/routed/workflows/{running}",
    }
    calls = {name: lambda url=url: get_ok(client, url) for name, url in pages.items()}
    return {"times": rounds(calls, reps), "workflows": count, "works": works}


def run(ws: Workspace, history: DataDir, sizes: Sizes) -> Section:
    log(f"benchmark 9: routed-run pages at {sizes.routed_workflows:,} workflows and Work")
    copy = ws.copy_of(history, "routed-pages")
    r = child(copy, "routed_pages.measure", workflows=sizes.routed_workflows, reps=sizes.page_reps)
    ws.discard(copy)
    section = Section(
        "9",
        "Routed runs: the Workflows list and the workflow page",
        f"SQLite. {SEED} workflows admitted through `RoutedStore` (three deployments, an "
        "attempt claimed on each; a third failed with a reason, a third with a pause "
        "requested), their workflow rows then cloned in plain SQL under new IDs up to the "
        "count, beside a realistic Work history of the same count. Server time "
        "in-process with `django.test.Client` as a signed-in superuser, DEBUG off, "
        f"{sizes.page_reps} requests per page after one warm-up round, the pages in turn.",
    )
    t = {k: Spread.of(v) for k, v in r["times"].items()}
    base = t["work_list"].median
    labels = {
        "workflows": "Workflows list `/routed/workflows`",
        "workflows_failed": "filtered (status and reason)",
        "workflows_search": "searched by an ID prefix",
        "workflows_page_11": "the 11th page (keyset)",
        "workflow_page": "a workflow page",
    }
    rows = [[f"Work list `/` ({r['works']:,} Work)", ms(t["work_list"]), "1"]]
    rows += [[label, ms(t[key]), ratio(t[key].median / base)] for key, label in labels.items()]
    section.add(
        table([f"Page ({r['workflows']:,} workflows)", "Server time", "vs Work list"], rows)
    )
    cost = t["workflows"].median / base
    section.targets.append(
        Target(
            f"Workflows list at {r['workflows']:,} workflows vs the Work list at "
            f"{r['works']:,} Work",
            ratio(cost),
            "<= 1.00x",
            cost <= 1.0,
        )
    )
    page = t["workflow_page"].median / base
    section.targets.append(
        Target(
            f"A workflow page at {r['workflows']:,} workflows vs the Work list",
            ratio(page),
            "<= 1.00x",
            page <= 1.0,
        )
    )
    return section

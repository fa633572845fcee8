"""Benchmark 6: routed-run admission and control transactions against the contract's
own ``transact`` doing the same number of row writes, in the same run.

Each measurement is one transaction per operation, committed durably, in a child
process with the project's settings. **Admission**: ``admit_invocation`` in one
``RoutedStore.transact`` (idempotency probe, alias-free resolution, concurrency count,
then receipt, request, idempotency record, workflow, run, node, node transition and
envelope). **Control**:
``request_control`` pausing a running workflow (request, run, node and its transition,
workflow, desired state, result). **Baseline**: ``store.transact`` writing as many KV
rows as the routed transaction wrote routed rows (counted from its SQL, not assumed),
so the difference is what the routed rules cost over the contract's transaction
boundary: reads, validation, canonical JSON.
"""

from __future__ import annotations

import time
from typing import Any

from .config import Sizes
from .pg import Postgres
from .proc import Workspace, child, log
from .report import Section, per_s, ratio, table
from .stats import Spread

LEASE_MS = 60_000
_WRITES = ("INSERT", "UPDATE", "DELETE")


def _writes(statements: list[str], prefix: str) -> int:
    return sum(
        1 for sql in statements if sql.lstrip().upper().startswith(_WRITES) and prefix in sql
    )


def measure(txs: int, reps: int) -> dict[str, Any]:
    """(child) Seconds per repetition of ``txs`` transactions of each kind."""
    import json
    import secrets

    from django.db import connections

    from storage import Guard, Tx
    from storage.default import default_store
    from storage.routed.enums import AuthorityScope, ControlCommand
    from storage.routed.ids import AttemptID, ControlRequestID, DeploymentID
    from storage.routed.records import (
        AttemptRecord,
        ControlRequest,
        DeploymentRecord,
        InvocationRequest,
    )
    from storage.routed.rules import input_digest
    from storage.routed.store import RoutedStore

    store = default_store()
    routed = RoutedStore(store)
    dep = routed.transact(
        lambda r: r.create_deployment(
            DeploymentRecord(
                deployment_id=DeploymentID.new(),
                package_name="bench.pkg",
                package_version="1.0.0",
                max_concurrent_runs=0,
                bundle_digest="sha256:b",
                policy_digest="sha256:p",
                image_lock_digest="sha256:i",
                provenance_digest="sha256:v",
                created_by="bench",
            )
        )
    )
    text = json.dumps({"order": "ord_0001", "amount": 12300})
    digest = input_digest(text)
    serial = iter(range(10**9))
    run = secrets.token_hex(4)  # keys of this run only, whatever the database holds

    def request() -> InvocationRequest:
        return InvocationRequest(
            requested_deployment_ref=dep.record.deployment_id,
            input_json=text,
            input_digest=digest,
            initial_max_active_duration_ms=3_600_000,
            initial_attempt_lease_ms=LEASE_MS,
            initial_max_cost_usd_decimal="5.00",
            creation_options_digest="sha256:opts",
            idempotency_key=f"bench-{run}-{next(serial)}",
            caller_identity="bench",
        )

    def admit() -> Any:
        return routed.transact(lambda r: r.admit_invocation(request(), dep.generation)).receipt

    def running() -> Any:
        """An admitted workflow with its attempt claimed (set-up, not timed)."""
        receipt = admit()
        attempt = AttemptRecord(AttemptID.new(), receipt.run_id, receipt.workflow_id, 1)
        created = routed.transact(lambda r: r.create_attempt(attempt))
        routed.transact(lambda r: r.claim_attempt(attempt.attempt_id, created.generation, LEASE_MS))
        return receipt.workflow_id

    def pause(workflow_id: Any) -> None:
        generation = routed.view(lambda r: r.get_workflow(workflow_id)).generation
        routed.transact(
            lambda r: r.request_control(
                ControlRequest(
                    control_request_id=ControlRequestID.new(),
                    workflow_id=workflow_id,
                    command=ControlCommand.PAUSE,
                    expected_generation=generation,
                    actor_identity="bench",
                    authority_scope=AuthorityScope.CONTROL,
                    idempotency_key=f"pause-{workflow_id}",
                )
            )
        )

    def kv(writes: int) -> None:
        def body(tx: Tx) -> None:
            n = next(serial)
            for j in range(writes):
                tx.kv_put("bench", f"k{run}-{n}-{j}", b'{"v": 1}')

        store.transact(Guard(), body)

    def counted(fn: Any) -> list[str]:
        statements: list[str] = []

        def spy(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            statements.append(" ".join(sql.split()))
            return execute(sql, params, many, context)

        with connections[store.using].execute_wrapper(spy):
            fn()
        return statements

    admit()  # warm-up: connections, caches
    admission_sql = counted(admit)
    admission_writes = _writes(admission_sql, "conduit_routed_")
    warm = running()
    # The pause is counted on its own (the workflow's generation is read in a View).
    control_sql = counted(lambda: pause(warm))
    control_writes = _writes(control_sql, "conduit_routed_")
    kv_sql = counted(lambda: kv(admission_writes))
    targets = [running() for _ in range(txs * reps)]

    def timed(fn: Any) -> list[float]:
        runs = []
        for _ in range(reps):
            started = time.perf_counter()
            for _ in range(txs):
                fn()
            runs.append(time.perf_counter() - started)
        return runs

    pauses = iter(targets)
    times = {
        "admission": timed(admit),
        "kv_admission": timed(lambda: kv(admission_writes)),
        # request_control alone: the View reading the expected generation is outside.
        "control": timed(lambda: pause(next(pauses))),
        "kv_control": timed(lambda: kv(control_writes)),
    }
    return {
        "times": times,
        "writes": {"admission": admission_writes, "control": control_writes},
        "statements": {
            "admission": len(admission_sql),
            "control": len(control_sql),
            "kv": len(kv_sql),
        },
        "vendor": connections[store.using].vendor,
    }


def run(ws: Workspace, sizes: Sizes, pg: Postgres | None) -> Section:
    section = Section("6", "Routed runs: admission and control", __doc__.split("\n\n", 1)[1])
    txs, reps = sizes.tx_plan[0][2], sizes.tx_plan[0][1]
    engines: list[tuple[str, Postgres | None]] = [("SQLite", None)]
    if pg is not None:
        engines.append(("PostgreSQL", pg))
    for label, server in engines:
        log(f"benchmark 6 on {label}")
        url = server.database("routed_bench") if server is not None else ""
        data = ws.migrated(f"routed-{label.lower()}", url)
        result = child(data, "routed.measure", txs=txs, reps=reps)
        if server is not None:
            server.drop(data.database_url)
        ws.discard(data)
        _add(section, label, txs, result)
    return section


def _add(section: Section, label: str, txs: int, result: dict[str, Any]) -> None:
    rates = {k: Spread.of(v).rates(txs) for k, v in result["times"].items()}
    writes = result["writes"]
    rows = []
    for kind, name in (("admission", "admission"), ("control", "control (pause)")):
        base = rates[f"kv_{kind}"]
        cost = base.median / rates[kind].median
        n = str(writes[kind])
        rows.append([name, n, per_s(rates[kind], "tx"), ratio(cost)])
        rows.append([f"contract transact, {n} KV writes", n, per_s(base, "tx"), "1 (baseline)"])
    headers = ["Transaction", "Row writes", "Throughput", "Time vs baseline"]
    section.add(f"**{label}**\n\n" + table(headers, rows))
    stmts = result["statements"]
    section.add(
        f"{label}: SQL statements per transaction (BEGIN/COMMIT included): admission "
        f"{stmts['admission']}, control {stmts['control']}, the baseline of "
        f"{writes['admission']} KV writes {stmts['kv']}."
    )

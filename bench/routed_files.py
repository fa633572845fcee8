"""Benchmark 8: the routed runs' file mechanisms, the control journal and the artifact
workspace, each on the real filesystem of the data folder.

**Journal appends**: ``ControlJournal.append`` of a 200-byte heartbeat and of a
64 KiB payload (the cap), each event its own file: temporary file written and
fsynced, linked to its sequence's name, directory fsynced; measured one append after
another, so the rate is what one attempt's journal sustains. **Artifact accepts**:
``ArtifactWorkspace.validate_and_accept`` of 1 MiB files already written (not timed):
the path checks, the per-component ``O_NOFOLLOW`` open, reading and hashing the
whole file, and the metadata recorded through the routed-run store in one
transaction (which is where the engine shows). Each repetition accepts into a new
run, so the 100 MiB per run never interferes.
"""

from __future__ import annotations

import time
from typing import Any

from .config import Sizes
from .pg import Postgres
from .proc import Workspace, child, log
from .report import Section, num, per_s, table
from .stats import Spread

MiB = 1024 * 1024
LEASE_MS = 60_000


def measure(appends: int, accepts: int, reps: int) -> dict[str, Any]:
    """(child) Seconds per repetition of ``appends`` appends of each size and of
    ``accepts`` accepts of 1 MiB files."""
    import json
    import os
    from pathlib import Path

    from django.conf import settings
    from django.db import connections

    from storage.default import default_routed_store, default_store
    from storage.routed.enums import InvokeJobEventKind
    from storage.routed.ids import AttemptID, DeploymentID
    from storage.routed.journal import InvokeJobEvent, open_control_journal
    from storage.routed.records import AttemptRecord, DeploymentRecord, InvocationRequest
    from storage.routed.rules import input_digest
    from storage.routed.workspace import new_artifact_workspace

    routed = default_routed_store()
    state = Path(settings.ROUTED_STATE_DIR)
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
    serial = iter(range(10**9))

    def new_attempt() -> AttemptRecord:
        text = json.dumps({"n": next(serial)})
        receipt = routed.transact(
            lambda r: r.admit_invocation(
                InvocationRequest(
                    requested_deployment_ref=dep.record.deployment_id,
                    input_json=text,
                    input_digest=input_digest(text),
                    initial_max_active_duration_ms=3_600_000,
                    initial_attempt_lease_ms=LEASE_MS,
                    initial_max_cost_usd_decimal="5.00",
                    creation_options_digest="sha256:opts",
                    idempotency_key=f"bench-files-{text}",
                    caller_identity="bench",
                ),
                dep.generation,
            )
        ).receipt
        attempt = AttemptRecord(AttemptID.new(), receipt.run_id, receipt.workflow_id, 1)
        created = routed.transact(lambda r: r.create_attempt(attempt))
        # Artifacts are accepted only from an attempt running under a lease the store
        # minted (a fenced writer's are refused), so the attempt is claimed as a worker's.
        return routed.transact(
            lambda r: r.claim_attempt(attempt.attempt_id, created.generation, LEASE_MS)
        ).record

    payloads = {
        "small": json.dumps({"heartbeat": {"phase": "x" * 160}}),
        "cap": json.dumps("y" * (65_536 - 2)),
    }
    times: dict[str, list[float]] = {"small": [], "cap": [], "accept": []}
    for _ in range(reps):
        for size, payload in payloads.items():
            attempt = new_attempt()
            with open_control_journal(state, attempt.run_id, attempt.attempt_id) as journal:
                started = time.perf_counter()
                for seq in range(1, appends + 1):
                    journal.append(InvokeJobEvent(seq, 0, InvokeJobEventKind.PROGRESS_REF, payload))
                times[size].append(time.perf_counter() - started)
        attempt = new_attempt()
        ws = new_artifact_workspace(
            state / "runs" / attempt.run_id / "artifacts", attempt.run_id, store=routed
        )
        for n in range(accepts):  # written before the clock starts
            (ws.root / f"part{n}.bin").write_bytes(os.urandom(MiB))
        os.sync()  # the accepts read what is on disk, not a page cache still dirty
        started = time.perf_counter()
        for n in range(accepts):
            ws.validate_and_accept(f"part{n}.bin", attempt.attempt_id)
        times["accept"].append(time.perf_counter() - started)
    return {"times": times, "vendor": connections[default_store().using].vendor}


def run(ws: Workspace, sizes: Sizes, pg: Postgres | None) -> Section:
    method = __doc__.split("\n\n", 1)[1]
    section = Section("8", "Routed runs: journal appends and artifact accepts", method)
    appends, accepts = {"full": (200, 50), "quick": (50, 20)}.get(sizes.name, (5, 3))
    reps = max(3, sizes.reps // 2)
    engines: list[tuple[str, Postgres | None]] = [("SQLite", None)]
    if pg is not None:
        engines.append(("PostgreSQL", pg))
    rows = []
    for label, server in engines:
        log(f"benchmark 8 on {label}")
        url = server.database("routed_files_bench") if server is not None else ""
        data = ws.migrated(f"routed-files-{label.lower()}", url)
        result = child(data, "routed_files.measure", appends=appends, accepts=accepts, reps=reps)
        if server is not None:
            server.drop(data.database_url)
        ws.discard(data)
        t = result["times"]
        small = Spread.of(t["small"]).rates(appends)
        cap = Spread.of(t["cap"]).rates(appends)
        accept = Spread.of(t["accept"]).rates(accepts)
        rows += [
            [label, "journal append, 200 B heartbeat (fsynced)", per_s(small, "append")],
            [label, "journal append, 64 KiB payload (fsynced)", per_s(cap, "append")],
            [
                label,
                "accept a 1 MiB artifact (open, hash, record)",
                f"{per_s(accept, 'accept')}, {num(accept.median)} MiB/s",
            ],
        ]
    section.add(table(["Engine", "Operation", "Rate (median, min-max)"], rows))
    section.add(
        f"{appends} appends and {accepts} accepts per repetition, {reps} repetitions. "
        "The journal never touches the database; its rows differ between engines only "
        "by the machine's load at the time."
    )
    return section

"""A simulated routed-run worker: what a harness inside the container would leave.

Each step writes one output file into its run's artifact workspace
(``<state>/runs/<run>/artifacts/``) and has it accepted (``ArtifactWorkspace``, which
hashes the file as opened), then appends a checkpoint naming it to the attempt's
control journal; lifecycle events (started, succeeded, failed, cancelled) are
journalled too. After every append the supervisor's tailer (``ProgressTailer``)
ingests the journal into the attempt's progress, so the console shows the last phase,
the latest checkpoint and a journal that verifies.

``try_unsafe_artifacts`` is the worker misbehaving: a symbolic link to a file outside
the workspace and a file over the 25 MiB cap (sparse: it takes no disk). The store
refuses both (``SymlinkRejected``, ``SizeCapExceeded``) and records nothing; the files
are removed again so the workspace holds only what was accepted.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from storage import StorageError
from storage.routed.enums import InvokeJobEventKind
from storage.routed.ids import AttemptID, LeaseID, RunID
from storage.routed.journal import InvokeJobEvent, open_control_journal
from storage.routed.paths import ARTIFACT_MAX_PER_FILE
from storage.routed.progress import ProgressTailer
from storage.routed.records import ArtifactMetadata, Nanos
from storage.routed.store import RoutedStore
from storage.routed.workspace import new_artifact_workspace

ARTIFACTS = "artifacts"


def workspace_root(state_root: Path, run_id: RunID) -> Path:
    return Path(state_root) / "runs" / run_id / ARTIFACTS


def journal(
    routed: RoutedStore,
    state_root: Path,
    run_id: RunID,
    attempt_id: AttemptID,
    lease_id: LeaseID | None,
    kind: InvokeJobEventKind,
    payload: dict[str, object] | None,
    now: Nanos,
) -> None:
    """Append one event to the attempt's journal and ingest it at once. A checkpoint
    needs the live lease (the store saves it under that lease)."""
    with open_control_journal(Path(state_root), run_id, attempt_id) as log:
        event = InvokeJobEvent(
            sequence=log.last_sequence() + 1,
            timestamp=now,
            event_kind=kind,
            payload=json.dumps(payload, sort_keys=True) if payload is not None else "",
        )
        log.append(event)
        # A lifecycle event carries no checkpoint, so any lease ID reads it.
        ProgressTailer(log, routed, lease_id or LeaseID("ls-none")).poll()


def heartbeat(
    routed: RoutedStore,
    state_root: Path,
    run_id: RunID,
    attempt_id: AttemptID,
    lease_id: LeaseID,
    phase: str,
    now: Nanos,
) -> None:
    where = (routed, state_root, run_id, attempt_id, lease_id)
    journal(*where, InvokeJobEventKind.PROGRESS_REF, {"heartbeat": {"phase": phase}}, now)


def step(
    routed: RoutedStore,
    state_root: Path,
    run_id: RunID,
    attempt_id: AttemptID,
    lease_id: LeaseID,
    done: int,
    total: int,
    now: Nanos,
) -> ArtifactMetadata:
    """Step ``done`` of ``total``: its output accepted, then a checkpoint naming it."""
    rel = f"out/step-{done:02d}.json"
    root = workspace_root(state_root, run_id)
    path = root / rel
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    body = {"step": done, "of": total, "summary": f"chunk {done} of the document summarised"}
    _write_private(path, json.dumps(body, indent=2).encode() + b"\n")
    meta = new_artifact_workspace(root, run_id, store=routed).validate_and_accept(rel, attempt_id)
    where = (routed, state_root, run_id, attempt_id, lease_id)
    journal(
        *where,
        InvokeJobEventKind.PROGRESS_REF,
        {
            "checkpoint": {
                "phase": f"step {done}/{total}",
                "completed_work": [f"step-{n}" for n in range(1, done + 1)],
                "remaining_work": [f"step-{n}" for n in range(done + 1, total + 1)],
                "artifact_references": [rel],
                "last_committed_action": f"wrote {rel}",
                "safe_to_resume": True,
            }
        },
        now,
    )
    return meta


def try_unsafe_artifacts(
    routed: RoutedStore, state_root: Path, run_id: RunID, attempt_id: AttemptID
) -> list[tuple[str, StorageError]]:
    """A symlink out of the workspace and an oversized file, each offered for
    acceptance; returns (path, the store's refusal) for each one refused."""
    root = workspace_root(state_root, run_id)
    (root / "out").mkdir(mode=0o700, parents=True, exist_ok=True)
    link, big = root / "out" / "passwd.txt", root / "out" / "dump.bin"
    with contextlib.suppress(FileExistsError):
        link.symlink_to("/etc/passwd")
    with open(big, "wb", opener=_private_opener) as fh:
        fh.truncate(ARTIFACT_MAX_PER_FILE + 1)  # sparse: the size, not the bytes
    workspace = new_artifact_workspace(root, run_id, store=routed)
    refused: list[tuple[str, StorageError]] = []
    try:
        for path in (link, big):
            rel = path.relative_to(root).as_posix()
            try:
                workspace.validate_and_accept(rel, attempt_id)
            except StorageError as exc:
                refused.append((rel, exc))
    finally:
        for path in (link, big):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return refused


def _private_opener(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def _write_private(path: Path, data: bytes) -> None:
    with open(path, "wb", opener=_private_opener) as fh:
        fh.write(data)

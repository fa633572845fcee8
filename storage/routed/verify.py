"""Offline verification of a run's files: its artifact workspace and its journals.

For operators (``manage.py routed_verify``) and for ``backup verify`` (a bundle's copy
of the routed state, with no database beside it). Nothing here writes: journals are
opened without ``create`` and the workspace is read through descriptors, never
following a link.

With the store (``verify_run(state_root, run_id, store)``):

- every accepted artifact's file is there, a regular file beneath the root reached
  without a link, with the recorded size and SHA-256; the caps hold (25 MiB each,
  100 MiB per run, the path rule); files never accepted are listed as notes;
- every journal verifies (``ControlJournal.read``: HMAC, sequence, modes, links) and
  holds at least the events its attempt's stored progress ingested (fewer: events
  removed from its end, which the files alone cannot show).

Without a store (a bundle), only the journals and their keys.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..beneath import NotRegular, open_beneath, walk_beneath
from ..errors import StorageError
from .errors import RoutedNotFound
from .ids import AttemptID, RunID
from .journal import (
    KEY_FILE,
    journal_attempts,
    open_control_journal,
    open_run_dir,
    read_or_create_key,
)
from .paths import ARTIFACT_MAX_PER_FILE, ARTIFACT_MAX_TOTAL, check_relative_path
from .rules import RoutedRules
from .store import RoutedStore

ARTIFACTS = "artifacts"
ERROR, NOTE = "error", "note"


@dataclass(frozen=True)
class Finding:
    level: str  # ERROR or NOTE
    where: str  # "runs/<run>/artifacts/<path>", "runs/<run>/control/<attempt>"
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.where}: {self.message}"


def last_ingested(r: RoutedRules, attempt_id: AttemptID) -> int:
    """The last journal sequence the store's progress ingested (0: none yet)."""
    try:
        return r.get_attempt_progress(attempt_id).last_sequence
    except RoutedNotFound:
        return 0


def runs_in(state_root: Path) -> list[RunID]:
    """The run directories under ``state_root/runs`` (sorted), by name."""
    runs = Path(state_root) / "runs"
    if not runs.is_dir():
        return []
    return [RunID(p.name) for p in sorted(runs.iterdir()) if RunID.valid(p.name)]


def verify_run(state_root: Path, run_id: RunID, store: RoutedStore | None = None) -> list[Finding]:
    findings: list[Finding] = []
    if store is not None:
        findings += _verify_workspace(Path(state_root), run_id, store)
    findings += _verify_journals(Path(state_root), run_id, store)
    return findings


def _verify_workspace(state_root: Path, run_id: RunID, store: RoutedStore) -> list[Finding]:
    root = state_root / "runs" / run_id / ARTIFACTS
    base = f"runs/{run_id}/{ARTIFACTS}"
    findings: list[Finding] = []
    accepted = store.view(lambda r: r.list_artifacts(run_id))
    total = sum(a.byte_size for a in accepted)
    if total > ARTIFACT_MAX_TOTAL:
        findings.append(Finding(ERROR, base, f"{total} bytes accepted, over {ARTIFACT_MAX_TOTAL}"))
    for meta in accepted:
        where = f"{base}/{meta.relative_path}"
        try:
            parts = check_relative_path(meta.relative_path)
        except StorageError as exc:
            findings.append(Finding(ERROR, where, str(exc)))
            continue
        if meta.byte_size > ARTIFACT_MAX_PER_FILE:
            findings.append(Finding(ERROR, where, f"recorded {meta.byte_size} bytes, over the cap"))
        try:
            fd = open_beneath(root, parts)
        except NotRegular:
            findings.append(Finding(ERROR, where, "a symbolic link or not a regular file"))
            continue
        except OSError as exc:
            findings.append(Finding(ERROR, where, f"accepted but unreadable: {exc.strerror}"))
            continue
        with os.fdopen(fd, "rb") as stream:
            digest = hashlib.file_digest(stream, "sha256").hexdigest()
            size = stream.tell()
        if (size, digest) != (meta.byte_size, meta.digest):
            findings.append(
                Finding(
                    ERROR,
                    where,
                    f"holds {size} bytes sha256 {digest}; accepted as {meta.byte_size} "
                    f"bytes sha256 {meta.digest}",
                )
            )
    known = {a.relative_path for a in accepted}
    for rel in _files_beneath(root):
        if rel not in known:
            findings.append(Finding(NOTE, f"{base}/{rel}", "never accepted"))
    return findings


def _files_beneath(root: Path) -> list[str]:
    """Every non-directory entry beneath ``root`` (a link is listed, never entered)."""
    try:
        return [rel for _dir, rel, _name, _st in walk_beneath(root)]
    except (FileNotFoundError, NotRegular):
        return []


def _verify_journals(state_root: Path, run_id: RunID, store: RoutedStore | None) -> list[Finding]:
    findings: list[Finding] = []
    attempts = journal_attempts(state_root, run_id)
    if attempts or (state_root / "runs" / run_id / KEY_FILE).exists():
        try:
            run_dir = open_run_dir(state_root, run_id, create=False)
            try:
                read_or_create_key(run_dir, create=False)
            finally:
                os.close(run_dir)
        except StorageError as exc:
            findings.append(Finding(ERROR, f"runs/{run_id}/{KEY_FILE}", str(exc)))
    for attempt_id in attempts:
        where = f"runs/{run_id}/control/{attempt_id}"
        try:
            with open_control_journal(state_root, run_id, attempt_id, create=False) as journal:
                events = journal.read()
        except StorageError as exc:
            findings.append(Finding(ERROR, where, str(exc)))
            continue
        if store is None:
            continue
        ingested = store.view(functools.partial(last_ingested, attempt_id=attempt_id))
        if len(events) < ingested:
            findings.append(
                Finding(
                    ERROR,
                    where,
                    f"holds {len(events)} events but {ingested} were ingested: "
                    "events were removed from its end",
                )
            )
    return findings

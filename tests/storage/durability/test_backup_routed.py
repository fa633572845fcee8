"""Backups carry the routed-run state: workspaces, journals and journal keys, private
(0600 files, 0700 directories) in the bundle and after a restore, links left out;
``backup verify`` checks the copies' modes and verifies every journal under its copied
key (not only the manifest's digests)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from django.core.management import CommandError
from pytest_django import Settings as SettingsWrapper

from storage.artifacts import FileArtifactStore
from storage.durability import MANIFEST
from storage.routed.enums import InvokeJobEventKind
from storage.routed.ids import AttemptID, RunID
from storage.routed.journal import KEY_FILE, InvokeJobEvent, event_name, open_control_journal

from ..support.backup import backup

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
    pytest.mark.sqlite_only,
]


def routed_state(root: Path, secret: Path) -> tuple[RunID, AttemptID, list[InvokeJobEvent]]:
    run_id, attempt_id = RunID.new(), AttemptID.new()
    with open_control_journal(root, run_id, attempt_id) as journal:
        events = [
            journal.append(InvokeJobEvent(seq, 0, InvokeJobEventKind.STARTED, "{}"))
            for seq in (1, 2)
        ]
    workspace = root / "runs" / run_id / "artifacts"
    workspace.mkdir()
    (workspace / "out.json").write_text("{}")
    (workspace / "stolen").symlink_to(secret)  # a worker's planted link
    return run_id, attempt_id, events


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_backup_carries_the_routed_state_privately_and_restores_it(
    tmp_path: Path, artifacts: FileArtifactStore, settings: SettingsWrapper
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("not for the bundle")
    run_id, attempt_id, events = routed_state(Path(settings.ROUTED_STATE_DIR), secret)
    bundle = tmp_path / "bundle"
    backup("create", str(bundle))
    copy = bundle / "routed" / "runs" / run_id
    assert mode(copy / KEY_FILE) == 0o600
    assert (copy / KEY_FILE).read_bytes() == (
        Path(settings.ROUTED_STATE_DIR) / "runs" / run_id / KEY_FILE
    ).read_bytes()
    assert mode(copy / "artifacts" / "out.json") == 0o600
    assert mode(copy) == mode(copy / "control") == mode(copy / "artifacts") == 0o700
    assert not (copy / "artifacts" / "stolen").exists(), "a planted link is left out"
    listed = {e["path"] for e in json.loads((bundle / MANIFEST).read_text())["files"]}
    assert f"routed/runs/{run_id}/{KEY_FILE}" in listed
    assert f"routed/runs/{run_id}/control/{attempt_id}/{event_name(2)}" in listed
    assert "is a complete backup" in backup("verify", str(bundle))[0]

    data_dir = tmp_path / "restored"
    backup("restore", str(bundle), str(data_dir))
    restored = data_dir / "routed"
    assert mode(restored / "runs" / run_id / KEY_FILE) == 0o600
    assert mode(restored / "runs" / run_id / "control" / attempt_id) == 0o700
    with open_control_journal(restored, run_id, attempt_id, create=False) as journal:
        assert journal.read() == events


def test_verify_refuses_a_bundled_key_made_readable(
    tmp_path: Path, artifacts: FileArtifactStore, settings: SettingsWrapper
) -> None:
    run_id, _, _ = routed_state(Path(settings.ROUTED_STATE_DIR), tmp_path / "x")
    bundle = tmp_path / "bundle"
    backup("create", str(bundle))
    (bundle / "routed" / "runs" / run_id / KEY_FILE).chmod(0o644)
    with pytest.raises(CommandError, match="control-key has mode 644, not 600"):
        backup("verify", str(bundle))
    with pytest.raises(CommandError, match="failed verification"):
        backup("restore", str(bundle), str(tmp_path / "restored"))
    assert not (tmp_path / "restored").exists()


def test_verify_checks_the_bundled_journals_not_only_their_digests(
    tmp_path: Path, artifacts: FileArtifactStore, settings: SettingsWrapper
) -> None:
    run_id, attempt_id, _ = routed_state(Path(settings.ROUTED_STATE_DIR), tmp_path / "x")
    bundle = tmp_path / "bundle"
    backup("create", str(bundle))
    rel = f"routed/runs/{run_id}/control/{attempt_id}/{event_name(1)}"
    event = bundle / rel
    forged = event.read_bytes().replace(b"STARTED", b"SUCCEEDED")
    event.write_bytes(forged)
    # The manifest rewritten to match: only the journal's HMAC can tell.
    doc = json.loads((bundle / MANIFEST).read_text())
    for entry in doc["files"]:
        if entry["path"] == rel:
            entry.update(size=len(forged), sha256=hashlib.sha256(forged).hexdigest())
    (bundle / MANIFEST).write_text(json.dumps(doc))
    os.chmod(event, 0o600)
    with pytest.raises(CommandError, match="fails its HMAC"):
        backup("verify", str(bundle))

"""Offline verification of a run's files (``storage.routed.verify``) on every backend,
and ``manage.py routed_verify`` on the configured database: a clean run passes, each
kind of damage is an error finding, a file never accepted is only a note."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from pytest_django import Settings as SettingsWrapper

from storage.routed.enums import InvokeJobEventKind
from storage.routed.journal import KEY_FILE, InvokeJobEvent, event_name, open_control_journal
from storage.routed.progress import ProgressTailer
from storage.routed.records import AttemptRecord
from storage.routed.store import RoutedStore
from storage.routed.verify import ERROR, NOTE, verify_run
from storage.routed.workspace import new_artifact_workspace

from .support import admit, claimed


def a_run(routed: RoutedStore, state: Path) -> AttemptRecord:
    """A claimed attempt with one accepted artifact and two ingested journal events."""
    attempt = claimed(routed, admit(routed)).record
    assert attempt.lease is not None
    ws = new_artifact_workspace(
        state / "runs" / attempt.run_id / "artifacts", attempt.run_id, store=routed
    )
    (ws.root / "out.json").write_bytes(b'{"ok": 1}')
    ws.validate_and_accept("out.json", attempt.attempt_id)
    with open_control_journal(state, attempt.run_id, attempt.attempt_id) as journal:
        for seq in (1, 2):
            payload = json.dumps({"heartbeat": {"phase": f"p{seq}"}})
            journal.append(InvokeJobEvent(seq, 0, InvokeJobEventKind.PROGRESS_REF, payload))
        ProgressTailer(journal, routed, attempt.lease.lease_id).poll()
    return attempt


def errors(routed: RoutedStore, state: Path, attempt: AttemptRecord) -> list[str]:
    return [f.message for f in verify_run(state, attempt.run_id, routed) if f.level == ERROR]


def test_a_clean_run_verifies(routed: RoutedStore, tmp_path: Path) -> None:
    attempt = a_run(routed, tmp_path)
    assert verify_run(tmp_path, attempt.run_id, routed) == []


def test_a_file_never_accepted_is_a_note(routed: RoutedStore, tmp_path: Path) -> None:
    attempt = a_run(routed, tmp_path)
    (tmp_path / "runs" / attempt.run_id / "artifacts" / "scratch").write_text("x")
    (found,) = verify_run(tmp_path, attempt.run_id, routed)
    assert (found.level, found.where.endswith("artifacts/scratch")) == (NOTE, True)


def test_an_artifact_changed_after_acceptance_is_an_error(
    routed: RoutedStore, tmp_path: Path
) -> None:
    attempt = a_run(routed, tmp_path)
    (tmp_path / "runs" / attempt.run_id / "artifacts" / "out.json").write_bytes(b'{"ok": 2}')
    assert any("accepted as 9 bytes" in m for m in errors(routed, tmp_path, attempt))


def test_an_accepted_artifact_swapped_for_a_link_is_an_error(
    routed: RoutedStore, tmp_path: Path
) -> None:
    attempt = a_run(routed, tmp_path)
    path = tmp_path / "runs" / attempt.run_id / "artifacts" / "out.json"
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere")
    assert errors(routed, tmp_path, attempt) == ["a symbolic link or not a regular file"]


def test_a_tampered_journal_is_an_error(routed: RoutedStore, tmp_path: Path) -> None:
    attempt = a_run(routed, tmp_path)
    path = tmp_path / "runs" / attempt.run_id / "control" / attempt.attempt_id / event_name(1)
    path.write_bytes(path.read_bytes().replace(b"p1", b"p7"))
    assert any("HMAC" in m for m in errors(routed, tmp_path, attempt))


def test_events_removed_from_the_end_are_an_error(routed: RoutedStore, tmp_path: Path) -> None:
    attempt = a_run(routed, tmp_path)
    (tmp_path / "runs" / attempt.run_id / "control" / attempt.attempt_id / event_name(2)).unlink()
    assert any("removed from its end" in m for m in errors(routed, tmp_path, attempt))


def test_a_key_readable_by_others_is_an_error(routed: RoutedStore, tmp_path: Path) -> None:
    attempt = a_run(routed, tmp_path)
    (tmp_path / "runs" / attempt.run_id / KEY_FILE).chmod(0o644)
    found = errors(routed, tmp_path, attempt)
    assert found
    assert all("unsafe permissions" in m for m in found)


# -- the command ------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_the_command_prints_findings_and_fails_on_an_error(
    tmp_path: Path, settings: SettingsWrapper
) -> None:
    from storage.default import default_routed_store, reset_defaults

    reset_defaults()
    settings.ROUTED_STATE_DIR = tmp_path
    routed = default_routed_store()
    attempt = a_run(routed, tmp_path)
    out = io.StringIO()
    call_command("routed_verify", stdout=out)
    assert out.getvalue().strip() == f"1 runs checked under {tmp_path}: 0 errors"
    (tmp_path / "runs" / attempt.run_id / "artifacts" / "out.json").write_bytes(b"changed!!")
    (tmp_path / "runs" / attempt.run_id / "artifacts" / "note.txt").write_text("x")
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 errors"):
        call_command("routed_verify", attempt.run_id, stdout=out)
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["error", "note"]
    with pytest.raises(CommandError, match="invalid argument"):
        call_command("routed_verify", "not-a-run-id", stdout=io.StringIO())
    reset_defaults()

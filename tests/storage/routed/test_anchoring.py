"""Journals written before the tail anchor (record format 9) after the upgrade
(``storage.routed.anchoring``), on every backend: an old journal (its events as the old
writer wrote them, no ``tail``) is unreadable until anchored, readable after, and an
event removed from its end after anchoring is caught; anchoring runs once, so a journal
written after it whose tail went missing is never trusted; a journal cut before
anchoring is refused against the store's progress. ``manage.py routed_anchor_journals``
on the configured database, and the demo runtime's start."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from pytest_django import Settings as SettingsWrapper

from storage.routed.anchoring import anchor_old_journals
from storage.routed.enums import InvokeJobEventKind
from storage.routed.errors import JournalInvalid
from storage.routed.journal import TAIL_FILE, InvokeJobEvent, event_name, open_control_journal
from storage.routed.progress import ProgressTailer
from storage.routed.records import AttemptRecord
from storage.routed.store import RoutedStore

from .support import admit, claimed


def old_journal(
    routed: RoutedStore, state: Path, events: int = 3, key: str = "key-1"
) -> AttemptRecord:
    """A claimed attempt whose journal holds ``events`` events as a writer before the
    tail anchor left them: the same event files (the anchor changed none of their
    bytes), no ``tail``; the store's progress ingested the first two."""
    attempt = claimed(routed, admit(routed, key)).record
    assert attempt.lease is not None
    with open_control_journal(state, attempt.run_id, attempt.attempt_id) as journal:
        for seq in range(1, events + 1):
            payload = json.dumps({"heartbeat": {"phase": f"p{seq}"}})
            journal.append(InvokeJobEvent(seq, 0, InvokeJobEventKind.PROGRESS_REF, payload))
            if seq == 2:
                ProgressTailer(journal, routed, attempt.lease.lease_id).poll()
    (journal_dir(state, attempt) / TAIL_FILE).unlink()
    return attempt


def journal_dir(state: Path, attempt: AttemptRecord) -> Path:
    return state / "runs" / attempt.run_id / "control" / attempt.attempt_id


def read(state: Path, attempt: AttemptRecord) -> list[int]:
    with open_control_journal(state, attempt.run_id, attempt.attempt_id, create=False) as j:
        return [e.sequence for e in j.read()]


def test_an_old_journal_reads_after_anchoring_and_a_cut_end_is_caught(
    routed: RoutedStore, tmp_path: Path
) -> None:
    attempt = old_journal(routed, tmp_path)
    with pytest.raises(JournalInvalid, match="no tail anchor"):
        read(tmp_path, attempt)  # what an upgrade without the step leaves
    report = anchor_old_journals(routed, tmp_path)
    where = f"runs/{attempt.run_id}/control/{attempt.attempt_id}"
    assert (report.anchored, report.refused) == ([(where, 3)], [])
    assert read(tmp_path, attempt) == [1, 2, 3]
    # The next append goes on from the anchor.
    with open_control_journal(tmp_path, attempt.run_id, attempt.attempt_id) as journal:
        journal.append(InvokeJobEvent(4, 0, InvokeJobEventKind.PROGRESS_REF, ""))
    assert read(tmp_path, attempt) == [1, 2, 3, 4]
    (journal_dir(tmp_path, attempt) / event_name(4)).unlink()
    with pytest.raises(JournalInvalid, match="removed from its end"):
        read(tmp_path, attempt)


def test_anchoring_runs_once_so_a_later_missing_tail_is_never_trusted(
    routed: RoutedStore, tmp_path: Path
) -> None:
    first = anchor_old_journals(routed, tmp_path)  # a new deployment: nothing to anchor
    assert (first.earlier, first.anchored, first.refused) == (None, [], [])
    recorded = routed.view(lambda r: r.journal_anchoring())
    assert recorded is not None
    assert recorded.journals_anchored == 0
    # A journal written after, whose last event and tail were then removed.
    attempt = old_journal(routed, tmp_path, events=3)
    (journal_dir(tmp_path, attempt) / event_name(3)).unlink()
    again = anchor_old_journals(routed, tmp_path)
    assert again.earlier == recorded
    assert again.anchored == []
    assert not (journal_dir(tmp_path, attempt) / TAIL_FILE).exists()
    with pytest.raises(JournalInvalid, match="no tail anchor"):
        read(tmp_path, attempt)


def test_an_old_journal_cut_or_altered_before_anchoring_is_refused(
    routed: RoutedStore, tmp_path: Path
) -> None:
    cut = old_journal(routed, tmp_path, events=2)  # both ingested by the store
    (journal_dir(tmp_path, cut) / event_name(2)).unlink()
    altered = old_journal(routed, tmp_path, events=3, key="key-2")
    path = journal_dir(tmp_path, altered) / event_name(2)
    path.write_bytes(path.read_bytes().replace(b"p2", b"p9"))
    report = anchor_old_journals(routed, tmp_path)
    refused = dict(report.refused)
    assert report.anchored == []
    assert len(refused) == 2
    assert "2 were ingested" in refused[f"runs/{cut.run_id}/control/{cut.attempt_id}"]
    assert "HMAC" in refused[f"runs/{altered.run_id}/control/{altered.attempt_id}"]
    for attempt in (cut, altered):
        assert not (journal_dir(tmp_path, attempt) / TAIL_FILE).exists()
    recorded = routed.view(lambda r: r.journal_anchoring())
    assert recorded is not None
    assert recorded.journals_refused == 2


@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_the_command_anchors_once_and_says_so_after(
    tmp_path: Path, settings: SettingsWrapper
) -> None:
    from storage.default import default_routed_store, reset_defaults

    reset_defaults()
    settings.ROUTED_STATE_DIR = tmp_path
    routed = default_routed_store()
    attempt = old_journal(routed, tmp_path)
    out = io.StringIO()
    call_command("routed_anchor_journals", stdout=out)
    assert out.getvalue().splitlines() == [
        f"runs/{attempt.run_id}/control/{attempt.attempt_id}: anchored at event 3",
        f"under {tmp_path}: 1 journals anchored, 0 already anchored, 0 refused",
    ]
    assert read(tmp_path, attempt) == [1, 2, 3]
    out = io.StringIO()
    call_command("routed_anchor_journals", stdout=out)
    assert "nothing to do" in out.getvalue()
    assert "(1 anchored, 0 refused)" in out.getvalue()
    reset_defaults()


@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_the_command_fails_naming_a_journal_it_refused(
    tmp_path: Path, settings: SettingsWrapper
) -> None:
    from storage.default import default_routed_store, reset_defaults

    reset_defaults()
    settings.ROUTED_STATE_DIR = tmp_path
    attempt = old_journal(default_routed_store(), tmp_path, events=3)
    (journal_dir(tmp_path, attempt) / event_name(2)).unlink()
    out = io.StringIO()
    with pytest.raises(CommandError, match="0 journals anchored, 0 already anchored, 1 refused"):
        call_command("routed_anchor_journals", stdout=out)
    assert "REFUSED: routedrun: control journal failed verification: events [2]" in out.getvalue()
    reset_defaults()

"""Progress and checkpoints: the tailer verifies HMAC and sequence before it updates
anything, ingests heartbeats and checkpoints through the store (the double, SQLite or
PostgreSQL), and on the first journal error records ``progress_journal_invalid`` and
resume capability NONE; resume data loads and validates against run, policy, image
and artifacts; canonical digests round-trip (hypothesis)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage import Store
from storage.routed.codec import marshal_canonical, unmarshal_strict
from storage.routed.enums import InvokeJobEventKind, ResumeCapability, ResumeReason
from storage.routed.errors import (
    AlreadyExists,
    InvalidArgument,
    JournalInvalid,
    JournalSequenceConflict,
    RoutedNotFound,
)
from storage.routed.ids import AttemptID, LeaseID
from storage.routed.journal import (
    ControlJournal,
    InvokeJobEvent,
    event_name,
    open_control_journal,
)
from storage.routed.progress import (
    ProgressTailer,
    load_resume_checkpoint,
    validate_resume_checkpoint,
)
from storage.routed.records import (
    ArtifactMetadata,
    AttemptProgress,
    AttemptRecord,
    SemanticCheckpoint,
    artifact_meta_digest,
)
from storage.routed.rules.progress import JOURNAL_INVALID
from storage.routed.store import RoutedStore
from storage.routed.workspace import ArtifactWorkspace, new_artifact_workspace

from .strategies import record
from .support import admit, claimed, snapshot

HEARTBEAT = InvokeJobEventKind.PROGRESS_REF


@dataclasses.dataclass
class Attempt:
    record: AttemptRecord
    lease: LeaseID
    journal: ControlJournal
    workspace: ArtifactWorkspace
    tailer: ProgressTailer


@pytest.fixture
def at(routed: RoutedStore, tmp_path: Path) -> Iterator[Attempt]:
    attempt = claimed(routed, admit(routed)).record
    assert attempt.lease is not None
    journal = open_control_journal(tmp_path, attempt.run_id, attempt.attempt_id)
    workspace = new_artifact_workspace(
        tmp_path / "runs" / attempt.run_id / "artifacts", attempt.run_id, store=routed
    )
    tailer = ProgressTailer(journal, routed, attempt.lease.lease_id)
    yield Attempt(attempt, attempt.lease.lease_id, journal, workspace, tailer)
    journal.close()


def beat(at: Attempt, phase: str) -> InvokeJobEvent:
    payload = json.dumps({"heartbeat": {"phase": phase}})
    return at.journal.append(InvokeJobEvent(at.journal.last_sequence() + 1, 0, HEARTBEAT, payload))


def checkpoint(
    at: Attempt, refs: tuple[str, ...] = (), safe: bool = True, **more: object
) -> InvokeJobEvent:
    body = {
        "phase": "writing",
        "completed_work": ["a"],
        "remaining_work": ["b", "c"],
        "artifact_references": list(refs),
        "last_committed_action": "wrote a",
        "safe_to_resume": safe,
        **more,
    }
    payload = json.dumps({"checkpoint": body})
    return at.journal.append(InvokeJobEvent(at.journal.last_sequence() + 1, 0, HEARTBEAT, payload))


def accept(at: Attempt, rel: str, content: bytes) -> ArtifactMetadata:
    (at.workspace.root / rel).write_bytes(content)
    return at.workspace.validate_and_accept(rel, at.record.attempt_id)


# -- ingesting -------------------------------------------------------------------------------
def test_a_heartbeat_moves_the_progress_on_and_creates_no_checkpoint(
    routed: RoutedStore, at: Attempt
) -> None:
    first = beat(at, "planning")
    at.journal.append(InvokeJobEvent(2, 0, InvokeJobEventKind.STARTED, "{}"))
    assert at.tailer.poll() == [None, None]
    progress = routed.view(lambda r: r.get_attempt_progress(at.record.attempt_id))
    assert (progress.last_phase, progress.last_sequence) == ("planning", 2)
    assert progress.last_heartbeat >= first.timestamp
    assert progress.latest_checkpoint_id is None
    with pytest.raises(RoutedNotFound):
        routed.view(lambda r: r.get_latest_checkpoint(at.record.attempt_id))


def test_a_checkpoint_is_saved_with_its_digests_and_named_by_the_progress(
    routed: RoutedStore, at: Attempt, store: Store
) -> None:
    meta = accept(at, "out.json", b"{}")
    beat(at, "planning")
    checkpoint(at, ("out.json",))
    none, checkpoint_id = at.tailer.poll()
    assert none is None
    assert checkpoint_id is not None
    cp = RoutedStore(store).view(
        lambda r: r.get_checkpoint(checkpoint_id)
    )  # durable: another store reads it
    cp.verify_digest()
    assert (cp.sequence, cp.phase, cp.artifact_references) == (2, "writing", ("out.json",))
    assert cp.artifact_meta_digest == artifact_meta_digest([meta])
    assert cp.lease_id == at.lease
    progress = routed.view(lambda r: r.get_attempt_progress(at.record.attempt_id))
    assert progress.latest_checkpoint_id == checkpoint_id
    assert progress.resume_capability is ResumeCapability.SAFE_CHECKPOINT
    assert routed.view(lambda r: r.get_latest_checkpoint(at.record.attempt_id)) == cp


def test_a_new_tailer_resumes_after_the_last_ingested_event(
    routed: RoutedStore, at: Attempt
) -> None:
    beat(at, "one")
    at.tailer.poll()
    beat(at, "two")
    again = ProgressTailer(at.journal, routed, at.lease)
    assert again.poll() == [None]
    assert routed.view(lambda r: r.get_attempt_progress(at.record.attempt_id)).last_sequence == 2
    assert again.poll() == []


def invalid_recorded(routed: RoutedStore, at: Attempt) -> str:
    """The first journal error's trace: frozen progress, NONE on progress and attempt,
    one ledger entry; returns the recorded reason."""
    progress = routed.view(lambda r: r.get_attempt_progress(at.record.attempt_id))
    assert progress.resume_capability is ResumeCapability.NONE
    assert progress.journal_error is not None
    attempt = routed.view(lambda r: r.get_attempt(at.record.attempt_id)).record
    assert attempt.resume_capability is ResumeCapability.NONE
    ledger = [e.entry for e in routed.view(lambda r: r.list_ledger(at.record.run_id))]
    assert [e for e in ledger if e.startswith(JOURNAL_INVALID)] == [
        f"{JOURNAL_INVALID}: attempt {at.record.attempt_id}: {progress.journal_error}"
    ]
    return progress.journal_error


def test_a_tampered_record_is_refused_before_anything_is_updated(
    routed: RoutedStore, at: Attempt
) -> None:
    good = beat(at, "planning")
    line = marshal_canonical(good).replace(b"planning", b"pwned!!!")
    with pytest.raises(JournalInvalid):
        at.tailer.ingest_record(line)
    assert "HMAC" in invalid_recorded(routed, at)
    assert routed.view(lambda r: r.get_attempt_progress(at.record.attempt_id)).last_sequence == 0
    # The first error is the finding: later records, even good ones, are refused.
    with pytest.raises(JournalInvalid):
        at.tailer.ingest_record(marshal_canonical(good))
    with pytest.raises(InvalidArgument):  # nor can progress be saved past it
        routed.transact(
            lambda r: r.save_attempt_progress(
                AttemptProgress(at.record.attempt_id, at.record.run_id, "x", 1, 1)
            )
        )


def test_a_record_out_of_sequence_is_refused_and_recorded(routed: RoutedStore, at: Attempt) -> None:
    beat(at, "one")
    second = beat(at, "two")
    with pytest.raises(JournalSequenceConflict):
        at.tailer.ingest_record(marshal_canonical(second))
    assert "not the next" in invalid_recorded(routed, at)


def test_a_tampered_journal_file_stops_the_tailer(
    routed: RoutedStore, at: Attempt, tmp_path: Path
) -> None:
    beat(at, "one")
    beat(at, "two")
    victim = tmp_path / "runs" / at.record.run_id / "control" / at.record.attempt_id
    path = sorted(victim.iterdir())[0]
    path.write_bytes(path.read_bytes().replace(b"one", b"won"))
    with pytest.raises(JournalInvalid):
        at.tailer.poll()
    invalid_recorded(routed, at)
    assert at.tailer.poll() == []
    with pytest.raises(RoutedNotFound):
        routed.view(lambda r: r.get_latest_checkpoint(at.record.attempt_id))


def test_the_journals_last_event_removed_stops_the_tailer(
    routed: RoutedStore, at: Attempt, tmp_path: Path
) -> None:
    """The journal reader notices it, not only ``routed_verify``: nothing of the
    journal is ingested and the error is recorded, on every backend."""
    beat(at, "one")
    beat(at, "two")
    victim = tmp_path / "runs" / at.record.run_id / "control" / at.record.attempt_id
    (victim / event_name(2)).unlink()
    with pytest.raises(JournalInvalid, match="removed from its end"):
        at.tailer.poll()
    invalid_recorded(routed, at)


@pytest.mark.parametrize(
    "payload",
    [
        "[]",
        '{"heartbeat": {}}',
        '{"heartbeat": {"phase": 3}}',
        '{"heartbeat": {"phase": "x"}, "checkpoint": {}}',
        '{"checkpoint": {"phase": "x"}}',
        '{"progress": 1}',
    ],
)
def test_a_record_that_does_not_parse_is_a_journal_error(
    routed: RoutedStore, at: Attempt, payload: str
) -> None:
    at.journal.append(InvokeJobEvent(1, 0, HEARTBEAT, payload))
    with pytest.raises(InvalidArgument):
        at.tailer.poll()
    invalid_recorded(routed, at)


def test_a_checkpoint_naming_an_artifact_never_accepted_is_refused(
    routed: RoutedStore, at: Attempt
) -> None:
    (at.workspace.root / "planted.bin").write_bytes(b"never accepted")
    checkpoint(at, ("planted.bin",))
    with pytest.raises(InvalidArgument, match="never accepted"):
        at.tailer.poll()
    invalid_recorded(routed, at)
    with pytest.raises(RoutedNotFound):
        routed.view(lambda r: r.get_latest_checkpoint(at.record.attempt_id))


def test_a_checkpoint_extra_field_is_refused(routed: RoutedStore, at: Attempt) -> None:
    checkpoint(at, checkpoint_digest="0" * 64)  # the worker does not choose the digest
    with pytest.raises(InvalidArgument):
        at.tailer.poll()
    invalid_recorded(routed, at)


def test_save_attempt_progress_round_trips_and_never_goes_back(
    routed: RoutedStore, at: Attempt
) -> None:
    progress = AttemptProgress(at.record.attempt_id, at.record.run_id, "p", 5, 4)
    assert routed.transact(lambda r: r.save_attempt_progress(progress)) == progress
    assert routed.view(lambda r: r.get_attempt_progress(at.record.attempt_id)) == progress
    before = snapshot(routed)
    with pytest.raises(JournalSequenceConflict):
        routed.transact(
            lambda r: r.save_attempt_progress(dataclasses.replace(progress, last_sequence=3))
        )
    assert snapshot(routed) == before
    with pytest.raises(JournalSequenceConflict):  # ingestion wants exactly 5 next
        routed.transact(
            lambda r: r.ingest_progress(dataclasses.replace(progress, last_sequence=7), None)
        )
    assert snapshot(routed) == before


def test_a_checkpoint_is_immutable(routed: RoutedStore, at: Attempt) -> None:
    checkpoint(at)
    (checkpoint_id,) = at.tailer.poll()
    assert checkpoint_id is not None
    cp = routed.view(lambda r: r.get_checkpoint(checkpoint_id))
    with pytest.raises(dataclasses.FrozenInstanceError):
        cp.phase = "other"  # type: ignore[misc]
    changed = dataclasses.replace(cp, phase="other")
    changed = dataclasses.replace(changed, checkpoint_digest=changed.compute_digest())
    before = snapshot(routed)
    with pytest.raises(AlreadyExists):
        routed.transact(lambda r: r.save_checkpoint(changed))
    assert snapshot(routed) == before
    assert routed.view(lambda r: r.get_checkpoint(checkpoint_id)) == cp


# -- resume ----------------------------------------------------------------------------------
def test_resume_data_loads_and_validates_for_its_run_policy_and_image(
    routed: RoutedStore, at: Attempt
) -> None:
    accept(at, "state.bin", b"state")
    checkpoint(at, ("state.bin",))
    checkpoint(at, ("state.bin",), safe=False)  # the latest *safe* one is loaded
    at.tailer.poll()
    run = routed.view(lambda r: r.get_run(at.record.run_id)).record
    image = routed.view(
        lambda r: r.get_deployment(r.get_workflow(run.workflow_id).record.deployment_id)
    ).record.image_lock_digest
    data = load_resume_checkpoint(
        routed, at.record.attempt_id, at.record.run_id, ResumeReason.FAILURE_CONTINUATION
    )
    assert (data.source_attempt_id, data.phase) == (at.record.attempt_id, "writing")
    assert [a.relative_path for a in data.artifacts] == ["state.bin"]
    validate_resume_checkpoint(data, run.run_id, run.policy_digest, image)
    for changed in (
        {"run_id": type(run.run_id).new()},
        {"policy_digest": "sha256:other"},
        {"image_digest": "sha256:other"},
    ):
        args = {"run_id": run.run_id, "policy_digest": run.policy_digest, "image_digest": image}
        args.update(changed)
        with pytest.raises(InvalidArgument, match="cannot resume"):
            validate_resume_checkpoint(data, **args)
    with pytest.raises(InvalidArgument, match="digest"):
        validate_resume_checkpoint(
            dataclasses.replace(data, remaining_work=()), run.run_id, run.policy_digest, image
        )
    # The artifact accepted again with other content: the checkpoint's no longer match.
    accept(at, "state.bin", b"changed")
    later = load_resume_checkpoint(
        routed, at.record.attempt_id, at.record.run_id, ResumeReason.FAILURE_CONTINUATION
    )
    with pytest.raises(InvalidArgument, match="artifacts"):
        validate_resume_checkpoint(later, run.run_id, run.policy_digest, image)


def test_a_first_attempt_has_no_resume_checkpoint(routed: RoutedStore, at: Attempt) -> None:
    with pytest.raises(RoutedNotFound):
        load_resume_checkpoint(
            routed, at.record.attempt_id, at.record.run_id, ResumeReason.OPERATOR_PAUSE_RESUME
        )
    with pytest.raises(RoutedNotFound):
        load_resume_checkpoint(
            routed, AttemptID.new(), at.record.run_id, ResumeReason.OPERATOR_PAUSE_RESUME
        )


# -- canonical digests (hypothesis; no store) ------------------------------------------------------
CANONICAL = (
    "phase",
    "completed_work",
    "remaining_work",
    "last_committed_action",
    "safe_to_resume",
    "artifact_references",
)


@given(record(SemanticCheckpoint))
def test_a_checkpoint_digest_survives_the_canonical_round_trip(cp: SemanticCheckpoint) -> None:
    cp = dataclasses.replace(cp, checkpoint_digest=cp.compute_digest())
    back = unmarshal_strict(SemanticCheckpoint, marshal_canonical(cp))
    assert back == cp
    assert back.compute_digest() == cp.compute_digest() == cp.checkpoint_digest
    back.verify_digest()


@given(record(SemanticCheckpoint), st.sampled_from(CANONICAL), st.data())
def test_every_canonical_field_moves_the_digest(
    cp: SemanticCheckpoint, name: str, data: st.DataObject
) -> None:
    current = getattr(cp, name)
    if isinstance(current, bool):
        other: object = not current
    elif isinstance(current, tuple):
        other = (*current, data.draw(st.text(max_size=4)))
    else:
        other = current + data.draw(st.text(min_size=1, max_size=4))
    signed = dataclasses.replace(cp, checkpoint_digest=cp.compute_digest())
    moved = dataclasses.replace(signed, **{name: other})
    assert moved.compute_digest() != signed.compute_digest()
    with pytest.raises(InvalidArgument):
        moved.verify_digest()


@given(record(SemanticCheckpoint), record(SemanticCheckpoint))
def test_ids_sequence_and_times_are_not_content(
    a: SemanticCheckpoint, b: SemanticCheckpoint
) -> None:
    same = dataclasses.replace(b, **{name: getattr(a, name) for name in CANONICAL})
    assert same.compute_digest() == a.compute_digest()


@given(st.lists(record(ArtifactMetadata), max_size=5, unique_by=lambda m: m.relative_path))
def test_the_artifact_meta_digest_is_by_content_in_any_order(
    artifacts: list[ArtifactMetadata],
) -> None:
    digest = artifact_meta_digest(artifacts)
    assert artifact_meta_digest(list(reversed(artifacts))) == digest
    renamed = [dataclasses.replace(a, artifact_id=type(a.artifact_id).new()) for a in artifacts]
    assert artifact_meta_digest(renamed) == digest
    back = [unmarshal_strict(ArtifactMetadata, marshal_canonical(a)) for a in artifacts]
    assert artifact_meta_digest(back) == digest
    if artifacts:
        grown = [dataclasses.replace(artifacts[0], byte_size=artifacts[0].byte_size + 1)]
        assert artifact_meta_digest(grown + artifacts[1:]) != digest

"""The progress tailer and resume checkpoints (issue 17).

``ProgressTailer`` turns an attempt's control journal into durable progress: each
record is verified (HMAC under the run's key, and its sequence exactly the stored last
+ 1) before anything is updated, then ingested in one store transaction
(``ingest_progress``): a heartbeat moves the progress on; a checkpoint is saved,
immutable, with its digest over the canonical fields and the digest of the metadata
of the artifacts it names (which must have been accepted). On the first error (a
record that fails verification, is out of sequence or does not parse) the tailer
records ``progress_journal_invalid`` and the attempt's resume capability becomes NONE
(``mark_progress_invalid``), and it ingests nothing more.

A ``PROGRESS_REF`` event's payload is ``{"heartbeat": {"phase": ...}}`` or
``{"checkpoint": {"phase", "completed_work", "remaining_work", "artifact_references",
"last_committed_action", "safe_to_resume"}}``; other kinds move the sequence and the
heartbeat time only. Nothing here waits: ``poll`` ingests what the journal holds and
returns, and its caller's loop decides when to call it again.

``load_resume_checkpoint`` / ``validate_resume_checkpoint``: the trusted data a resumed
attempt is given, and the check that it belongs to this run, policy and image.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from ..errors import StorageError
from .codec import from_data, marshal_canonical
from .enums import InvokeJobEventKind, ResumeReason
from .errors import InvalidArgument, JournalInvalid, JournalSequenceConflict, RoutedNotFound
from .ids import AttemptID, CheckpointID, LeaseID, RunID
from .journal import ControlJournal, InvokeJobEvent
from .records import (
    ArtifactMetadata,
    AttemptProgress,
    ResumeCheckpointData,
    SemanticCheckpoint,
    artifact_meta_digest,
)
from .rules import RoutedRules
from .rules.base import digest_key
from .store import RoutedStore


@dataclass(frozen=True)
class Heartbeat:
    """A heartbeat record's payload: ``{"heartbeat": {"phase": ...}}``."""

    phase: str


@dataclass(frozen=True)
class CheckpointPayload:
    """A checkpoint record's payload, decoded strictly (no field more or less)."""

    phase: str
    completed_work: tuple[str, ...]
    remaining_work: tuple[str, ...]
    artifact_references: tuple[str, ...]
    last_committed_action: str
    safe_to_resume: bool


def checkpoint_id_for(attempt_id: AttemptID, sequence: int) -> CheckpointID:
    """One ID per (attempt, journal sequence): ingesting an event again names the
    same checkpoint."""
    body = digest_key("checkpoint", attempt_id, str(sequence))[:32]
    return CheckpointID(CheckpointID.prefix + body)


class ProgressTailer:
    def __init__(
        self,
        journal: ControlJournal,
        store: RoutedStore,
        lease_id: LeaseID,
    ) -> None:
        self.journal = journal
        self.store = store
        self.attempt_id = journal.attempt_id
        self.run_id = journal.run_id
        self.lease_id = lease_id
        self.invalid: str | None = None

    def _progress(self) -> AttemptProgress | None:
        try:
            return self.store.view(lambda r: r.get_attempt_progress(self.attempt_id))
        except RoutedNotFound:
            return None

    def last_sequence(self) -> int:
        found = self._progress()
        return 0 if found is None else found.last_sequence

    def poll(self) -> list[CheckpointID | None]:
        """Ingest every journal event after the stored last sequence; returns what
        each gave (a checkpoint ID, or None). Verifies the whole journal first."""
        if self.invalid is not None:
            return []
        try:
            events = self.journal.read(self.last_sequence() + 1)
        except StorageError as exc:
            self._invalid(str(exc))
            raise
        return [self.ingest_record(marshal_canonical(e)) for e in events]

    def ingest_record(self, line: bytes) -> CheckpointID | None:
        """Verify one journal record and ingest it: the checkpoint ID it created, or
        None (a heartbeat, or a lifecycle event). The first error is recorded
        (``progress_journal_invalid``, resume capability NONE) and raised."""
        if self.invalid is not None:
            raise JournalInvalid(f"the journal already failed: {self.invalid}")
        current = self._progress()
        try:
            event = self.journal.verify(line)
            last = 0 if current is None else current.last_sequence
            if event.sequence != last + 1:
                raise JournalSequenceConflict(
                    f"record {event.sequence} after {last}: not the next in sequence"
                )
            progress, checkpoint = self._interpret(event, current)
        except (JournalInvalid, JournalSequenceConflict, InvalidArgument) as exc:
            self._invalid(str(exc))
            raise
        try:
            stored = self.store.transact(lambda r: r.ingest_progress(progress, checkpoint))
        except InvalidArgument as exc:  # a digest or a checkpoint the store refuses
            self._invalid(str(exc))
            raise
        return stored.latest_checkpoint_id if checkpoint is not None else None

    def _invalid(self, reason: str) -> None:
        if self.invalid is None:
            self.invalid = reason
            self.store.transact(lambda r: r.mark_progress_invalid(self.attempt_id, reason[:4096]))

    def _interpret(
        self, event: InvokeJobEvent, current: AttemptProgress | None
    ) -> tuple[AttemptProgress, SemanticCheckpoint | None]:
        progress = AttemptProgress(
            attempt_id=self.attempt_id,
            run_id=self.run_id,
            last_phase="" if current is None else current.last_phase,
            last_heartbeat=event.timestamp,
            last_sequence=event.sequence,
            latest_checkpoint_id=None if current is None else current.latest_checkpoint_id,
            resume_capability=None if current is None else current.resume_capability,
        )
        if event.event_kind is not InvokeJobEventKind.PROGRESS_REF:
            return progress, None
        body = _object(event.payload)
        where = f"record {event.sequence}"
        if set(body) == {"heartbeat"}:
            beat = from_data(Heartbeat, body["heartbeat"], f"{where} heartbeat")
            return replace(progress, last_phase=beat.phase), None
        if set(body) != {"checkpoint"}:
            raise InvalidArgument(f"{where}: neither a heartbeat nor a checkpoint")
        fields = from_data(CheckpointPayload, body["checkpoint"], f"{where} checkpoint")
        checkpoint = self._checkpoint(event.sequence, fields)
        return replace(progress, last_phase=checkpoint.phase), checkpoint

    def _checkpoint(self, sequence: int, fields: CheckpointPayload) -> SemanticCheckpoint:
        # The attempt and its accepted artifacts from one snapshot.
        attempt, artifacts = self.store.view(
            lambda r: (r.get_attempt(self.attempt_id).record, r.list_artifacts(self.run_id))
        )
        accepted = {a.relative_path: a for a in artifacts}
        refs = fields.artifact_references
        missing = [ref for ref in refs if ref not in accepted]
        if missing:
            raise InvalidArgument(
                f"checkpoint {sequence} names artifacts never accepted: {missing}"
            )
        cp = SemanticCheckpoint(
            checkpoint_id=checkpoint_id_for(self.attempt_id, sequence),
            attempt_id=self.attempt_id,
            run_id=self.run_id,
            workflow_id=attempt.workflow_id,
            lease_id=self.lease_id,
            phase=fields.phase,
            completed_work=fields.completed_work,
            remaining_work=fields.remaining_work,
            artifact_references=refs,
            last_committed_action=fields.last_committed_action,
            safe_to_resume=fields.safe_to_resume,
            checkpoint_digest="",
            artifact_meta_digest=artifact_meta_digest([accepted[ref] for ref in refs]),
            sequence=sequence,
        )
        return replace(cp, checkpoint_digest=cp.compute_digest())


def _object(payload: str) -> dict[str, Any]:
    try:
        body = json.loads(payload)
    except ValueError as exc:
        raise InvalidArgument(f"a progress payload is not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise InvalidArgument("a progress payload is a JSON object")
    return body


# -- resume ---------------------------------------------------------------------------------
def load_resume_checkpoint(
    store: RoutedStore, attempt_id: AttemptID, run_id: RunID, reason: ResumeReason
) -> ResumeCheckpointData:
    """The latest safe checkpoint of ``attempt_id`` (an earlier attempt of ``run_id``)
    as trusted resume data; ``RoutedNotFound`` when it has none (a first attempt).
    One View: the checkpoint, its run, workflow, deployment and artifacts are read
    from one snapshot (five reads in five Views could each see another moment)."""
    return store.view(lambda r: resume_checkpoint(r, attempt_id, run_id, reason))


def resume_checkpoint(
    r: RoutedRules, attempt_id: AttemptID, run_id: RunID, reason: ResumeReason
) -> ResumeCheckpointData:
    """``load_resume_checkpoint`` inside a transaction or View the caller holds."""
    cp = r.get_latest_checkpoint(attempt_id)
    if cp.run_id != run_id:
        raise InvalidArgument(f"checkpoint {cp.checkpoint_id} is of run {cp.run_id}")
    run = r.get_run(run_id).record
    workflow = r.get_workflow(run.workflow_id).record
    deployment = r.get_deployment(workflow.deployment_id).record
    by_path = {a.relative_path: a for a in r.list_artifacts(run_id)}
    artifacts: list[ArtifactMetadata] = [
        by_path[ref] for ref in cp.artifact_references if ref in by_path
    ]
    return ResumeCheckpointData(
        checkpoint_id=cp.checkpoint_id,
        source_attempt_id=cp.attempt_id,
        run_id=cp.run_id,
        workflow_id=cp.workflow_id,
        node_id=cp.node_id,
        phase=cp.phase,
        completed_work=cp.completed_work,
        remaining_work=cp.remaining_work,
        artifact_references=cp.artifact_references,
        last_committed_action=cp.last_committed_action,
        checkpoint_digest=cp.checkpoint_digest,
        artifact_meta_digest=cp.artifact_meta_digest,
        artifacts=tuple(artifacts),
        resume_reason=reason,
        policy_digest=run.policy_digest,
        image_digest=deployment.image_lock_digest,
        created_at=cp.created_at,
    )


def validate_resume_checkpoint(
    cp: ResumeCheckpointData, run_id: RunID, policy_digest: str, image_digest: str
) -> None:
    """``InvalidArgument`` unless ``cp`` is of ``run_id``, was taken under the same
    policy and image, its digest matches its semantic fields and its artifacts are the
    ones it was taken with (an artifact accepted again since has another digest)."""
    problems = []
    if cp.run_id != run_id:
        problems.append(f"it is of run {cp.run_id}, not {run_id}")
    if cp.policy_digest != policy_digest:
        problems.append("the policy changed since it was taken")
    if cp.image_digest != image_digest:
        problems.append("the image changed since it was taken")
    semantic = SemanticCheckpoint(
        checkpoint_id=cp.checkpoint_id,
        attempt_id=cp.source_attempt_id,
        run_id=cp.run_id,
        workflow_id=cp.workflow_id,
        lease_id=LeaseID(LeaseID.prefix + "resume"),
        phase=cp.phase,
        completed_work=cp.completed_work,
        remaining_work=cp.remaining_work,
        artifact_references=cp.artifact_references,
        last_committed_action=cp.last_committed_action,
        safe_to_resume=True,  # only safe checkpoints are loaded for resume
        checkpoint_digest=cp.checkpoint_digest,
        artifact_meta_digest=cp.artifact_meta_digest,
        sequence=1,
    )
    if cp.checkpoint_digest != semantic.compute_digest():
        problems.append("its digest does not match its content")
    if [a.relative_path for a in cp.artifacts] != list(cp.artifact_references) or (
        artifact_meta_digest(cp.artifacts) != cp.artifact_meta_digest
    ):
        problems.append("its artifacts changed or are missing")
    if problems:
        raise InvalidArgument(
            f"checkpoint {cp.checkpoint_id} cannot resume: " + "; ".join(problems)
        )

"""Accepted artifacts and attempt progress (issue 17), over ``Rows``.

``accept_artifact`` is the durable half of the workspace's ``validate_and_accept``: the
file checks happen on the file (``storage.routed.workspace``), the caps that span a
run are checked here, in the transaction that records, so two accepts racing for the
last megabytes cannot both pass. ``ingest_progress`` is the tailer's one write per
journal event: the sequence must be the stored last one + 1 and a checkpoint, if the
event carried one, is saved in the same transaction, so a tailer that dies between
two events resumes at the right one and never records one twice.
``mark_progress_invalid`` is the first journal error: recorded once, the attempt's
resume capability NONE from then on.
"""

from __future__ import annotations

import dataclasses

from ..codec import check_record
from ..enums import AttemptStatus, ResumeCapability
from ..errors import InvalidArgument, JournalSequenceConflict, LeaseFenced, SizeCapExceeded
from ..ids import AttemptID, LeaseID, RunID, check_id
from ..paths import ARTIFACT_MAX_PER_FILE, ARTIFACT_MAX_TOTAL, check_relative_path
from ..records import (
    ArtifactMetadata,
    AttemptProgress,
    JournalAnchoring,
    SemanticCheckpoint,
    Stored,
)
from .base import ANCHORING, Spec, check_text
from .runs import RunRules
from .specs import ATTEMPT

ARTIFACT = Spec(
    "artifact", ArtifactMetadata, key=lambda r: r.artifact_id, parent=lambda r: r.run_id
)
PROGRESS = Spec("progress", AttemptProgress, key=lambda r: r.attempt_id, parent=lambda r: r.run_id)
# The ledger entry of the first journal error (the spec's audit event name).
JOURNAL_INVALID = "progress_journal_invalid"


class ProgressRules(RunRules):
    # -- artifacts -------------------------------------------------------------------------
    def accept_artifact(
        self, meta: ArtifactMetadata, lease_id: LeaseID | None = None
    ) -> Stored[ArtifactMetadata]:
        """Record (or update: same run and path, same ID) an accepted artifact. The
        caller hashed the file; this checks the record, the attempt's run and the caps
        (25 MiB per file, 100 MiB per run counting this one instead of its previous
        version). ``SizeCapExceeded`` records nothing. The writer is fenced
        (``LeaseFenced``) unless the attempt runs under a live lease: one of a
        cancelled, finished or fenced attempt is refused; ``lease_id``, when the
        caller holds it, must be that lease."""
        check_record(meta)
        check_relative_path(meta.relative_path)
        attempt = self.get_attempt(meta.attempt_id).record
        if attempt.run_id != meta.run_id:
            raise InvalidArgument(f"attempt {attempt.attempt_id} is not of run {meta.run_id}")
        if attempt.status is not AttemptStatus.RUNNING or attempt.lease is None:
            raise LeaseFenced(
                f"attempt {attempt.attempt_id} is {attempt.status.name} without a live lease: "
                "its artifacts are refused"
            )
        self.check_lease(attempt, attempt.lease.lease_id if lease_id is None else lease_id)
        if not 0 <= meta.byte_size <= ARTIFACT_MAX_PER_FILE:
            raise SizeCapExceeded(
                f"{meta.relative_path} is {meta.byte_size} bytes, over {ARTIFACT_MAX_PER_FILE}"
            )
        check_text("digest", meta.digest, 64)
        existing = self._read(ARTIFACT, meta.artifact_id)
        if existing is not None and existing.record.relative_path != meta.relative_path:
            raise InvalidArgument(f"artifact {meta.artifact_id} is another path's")
        others = sum(
            a.record.byte_size
            for a in self._list(ARTIFACT, meta.run_id)
            if a.record.artifact_id != meta.artifact_id
        )
        if others + meta.byte_size > ARTIFACT_MAX_TOTAL:
            raise SizeCapExceeded(
                f"run {meta.run_id} would hold {others + meta.byte_size} bytes of artifacts, "
                f"over {ARTIFACT_MAX_TOTAL}"
            )
        if existing is None:
            return self._create(
                ARTIFACT,
                dataclasses.replace(meta, creating_attempt=meta.attempt_id, updated_at=self.now),
            )
        kept = dataclasses.replace(
            meta, creating_attempt=existing.record.creating_attempt, updated_at=self.now
        )
        return self._replace(ARTIFACT, kept, existing.generation)

    def list_artifacts(self, run_id: RunID) -> list[ArtifactMetadata]:
        check_id(RunID, run_id)
        return [s.record for s in self._list(ARTIFACT, run_id)]

    # -- progress --------------------------------------------------------------------------
    def get_attempt_progress(self, attempt_id: AttemptID) -> AttemptProgress:
        check_id(AttemptID, attempt_id)
        return self._require(PROGRESS, attempt_id).record

    def save_attempt_progress(self, progress: AttemptProgress) -> AttemptProgress:
        """Store an attempt's progress (the spec's ``SaveAttemptProgress``); the
        sequence never goes back, and progress frozen by a journal error stays so."""
        check_record(progress)
        current = self._progress_of(progress)
        if current is not None and progress.last_sequence < current.record.last_sequence:
            raise JournalSequenceConflict(
                f"attempt {progress.attempt_id} progress is at sequence "
                f"{current.record.last_sequence}, not back at {progress.last_sequence}"
            )
        return self._put_progress(current, progress)

    def ingest_progress(
        self, progress: AttemptProgress, checkpoint: SemanticCheckpoint | None
    ) -> AttemptProgress:
        """One verified journal event: its sequence is the stored last + 1
        (``JournalSequenceConflict`` otherwise); its checkpoint, if any, saved under
        the attempt's live lease with a verified digest, and named by the progress."""
        check_record(progress)
        current = self._progress_of(progress)
        last = 0 if current is None else current.record.last_sequence
        if progress.last_sequence != last + 1:
            raise JournalSequenceConflict(
                f"attempt {progress.attempt_id} ingested sequence {last}; "
                f"{progress.last_sequence} is not the next"
            )
        if checkpoint is not None:
            if checkpoint.sequence != progress.last_sequence:
                raise InvalidArgument("a checkpoint carries its journal event's sequence")
            saved = self.save_checkpoint(checkpoint)
            capability = (
                ResumeCapability.SAFE_CHECKPOINT
                if saved.safe_to_resume
                else progress.resume_capability
            )
            progress = dataclasses.replace(
                progress,
                latest_checkpoint_id=saved.checkpoint_id,
                resume_capability=capability,
            )
        return self._put_progress(current, progress)

    def journal_anchoring(self) -> JournalAnchoring | None:
        """When the journals older than the tail anchor were anchored; None: not yet."""
        found = self._read(ANCHORING, "journal_anchoring")
        return None if found is None else found.record

    def record_journal_anchoring(self, anchored: int, refused: int) -> JournalAnchoring:
        """Record, once, that the old journals were anchored (``AlreadyExists`` when
        it was recorded before: anchoring never runs twice)."""
        return self._create(ANCHORING, JournalAnchoring(self.now, anchored, refused)).record

    def mark_progress_invalid(self, attempt_id: AttemptID, reason: str) -> AttemptProgress:
        """The first journal error of an attempt: progress frozen with the reason,
        resume capability NONE on the progress and on the attempt, and a
        ``progress_journal_invalid`` entry in the run's ledger. Later errors change
        nothing (the first one is the finding)."""
        check_id(AttemptID, attempt_id)
        check_text("reason", reason, 4096)
        attempt = self.get_attempt(attempt_id)
        found = self._read(PROGRESS, attempt_id)
        if found is not None and found.record.journal_error is not None:
            return found.record
        base = (
            found.record
            if found is not None
            else AttemptProgress(attempt_id, attempt.record.run_id, "", 0, 0)
        )
        frozen = dataclasses.replace(
            base, resume_capability=ResumeCapability.NONE, journal_error=reason
        )
        stored = (
            self._create(PROGRESS, frozen)
            if found is None
            else self._replace(PROGRESS, frozen, found.generation)
        )
        if attempt.record.resume_capability is not ResumeCapability.NONE:
            record = dataclasses.replace(
                attempt.record, resume_capability=ResumeCapability.NONE, updated_at=self.now
            )
            self._replace(ATTEMPT, record, attempt.generation)
        self.append_ledger(
            attempt.record.run_id, f"{JOURNAL_INVALID}: attempt {attempt_id}: {reason}"
        )
        return stored.record

    def _progress_of(self, progress: AttemptProgress) -> Stored[AttemptProgress] | None:
        attempt = self.get_attempt(progress.attempt_id).record
        if attempt.run_id != progress.run_id:
            raise InvalidArgument(f"attempt {attempt.attempt_id} is not of run {progress.run_id}")
        current = self._read(PROGRESS, progress.attempt_id)
        if current is not None and current.record.journal_error is not None:
            raise InvalidArgument(
                f"attempt {progress.attempt_id}'s journal failed verification "
                f"({current.record.journal_error}); its progress is frozen"
            )
        return current

    def _put_progress(
        self, current: Stored[AttemptProgress] | None, progress: AttemptProgress
    ) -> AttemptProgress:
        if progress.journal_error is not None:
            raise InvalidArgument("a journal error is recorded by mark_progress_invalid")
        if current is None:
            return self._create(PROGRESS, progress).record
        return self._replace(PROGRESS, progress, current.generation).record

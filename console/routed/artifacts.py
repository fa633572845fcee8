"""Previews of a routed run's accepted artifacts on the workflow page, through the
Work page's preview code (``console.runtime.previews``): text tails and pretty JSON
inline, each with its recorded SHA-256 checked against the bytes read.

The bytes are read from the run's workspace (``<ROUTED_STATE_DIR>/runs/<run>/
artifacts/<path>``) with ``storage.beneath`` (no link followed, regular files only),
the path checked by the same rule that accepted it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from django.conf import settings

from console.runtime.previews import PREVIEWED_ATTEMPTS, Preview, preview_content, shape_of
from storage import ArtifactRef
from storage.beneath import open_beneath
from storage.errors import StorageError
from storage.routed.paths import check_relative_path
from storage.routed.records import ArtifactMetadata, AttemptRecord


def artifact_root(run_id: str) -> Path:
    return Path(settings.ROUTED_STATE_DIR) / "runs" / run_id / "artifacts"


def _opener(meta: ArtifactMetadata) -> BinaryIO:
    try:
        parts = check_relative_path(meta.relative_path)
    except StorageError as exc:
        raise OSError(f"the recorded path is refused: {exc}") from None
    # One name only: a hard link put there after acceptance would serve what it names.
    return os.fdopen(open_beneath(artifact_root(meta.run_id), parts, single_link=True), "rb")


def preview(meta: ArtifactMetadata, attempt: AttemptRecord, *, newest: bool) -> Preview:
    ref = ArtifactRef(meta.artifact_id, meta.byte_size, meta.media_type, meta.digest)
    base = Preview(
        ref,
        attempt.attempt_id,
        attempt.attempt_number,
        meta.relative_path,
        shape_of(meta.media_type),
        newest=newest,
    )
    # The workspace stays writable by the run's worker: show only what still matches.
    return preview_content(base, lambda: _opener(meta), checked_only=True)


def previews(
    attempts: list[tuple[AttemptRecord, list[ArtifactMetadata]]],
) -> dict[str, list[Preview]]:
    """Attempt ID -> previews of its artifacts, for the ``PREVIEWED_ATTEMPTS`` newest
    attempts (``attempts`` newest first); older attempts' artifacts are listed only."""
    return {
        attempt.attempt_id: [preview(m, attempt, newest=n == 0) for m in metas]
        for n, (attempt, metas) in enumerate(attempts[:PREVIEWED_ATTEMPTS])
    }

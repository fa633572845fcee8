"""Helpers for the artifact store's tests (tests/storage/artifacts/)."""

from __future__ import annotations

import os
from pathlib import Path

from storage.artifacts import FileArtifactStore
from storage.records import ArtifactRef

REPO = Path(__file__).resolve().parents[3]
HOUR = 3600 * 10**9
MiB = 1 << 20


class FakeClock:
    def __init__(self, now: int = 1_000 * HOUR) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def publish(store: FileArtifactStore, data: bytes, media_type: str = "text/plain") -> ArtifactRef:
    with store.create(media_type) as writer:
        writer.write(data)
        return writer.commit()


def read_all(store: FileArtifactStore, ref_or_id: ArtifactRef | str) -> bytes:
    with store.open(ref_or_id) as stream:
        return stream.read()


def temp_entries(store: FileArtifactStore) -> list[str]:
    return sorted(os.listdir(store.root / "tmp"))


def data_path(store: FileArtifactStore, artifact_id: str) -> Path:
    return store.root / "objects" / artifact_id[:2] / artifact_id / "data"

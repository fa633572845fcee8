"""The artifact store's reopen, retention (GC by age and references) and verification
(checklist AR-10, AR-11)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from storage.artifacts import (
    ArtifactCorrupt,
    ArtifactMissing,
    FileArtifactStore,
    StoredArtifact,
)
from storage.errors import Invalid
from storage.records import ArtifactRef

from ..support.artifacts import (
    HOUR,
    FakeClock,
    data_path,
    publish,
    read_all,
)

# Reopen, retention, verification -----------------------------------------------------


def test_a_reopened_store_reads_committed_artifacts(tmp_path: Path, clock: FakeClock) -> None:
    first = FileArtifactStore(tmp_path / "artifacts", clock=clock)
    ref = publish(first, b"durable", "application/json")
    abandoned = first.create("text/plain")
    abandoned.write(b"uncommitted")
    del first

    second = FileArtifactStore(tmp_path / "artifacts")

    assert read_all(second, ref) == b"durable"
    assert second.stat(ref.id) == ref
    second.verify(ref)
    assert list(second.list_committed()) == [StoredArtifact(ref, clock.now)]
    assert not second.exists(abandoned.id)
    abandoned.close()


def test_gc_keeps_referenced_and_young_artifacts(
    store: FileArtifactStore, clock: FakeClock
) -> None:
    start = clock.now
    referenced = publish(store, b"attached to an execution")
    orphan = publish(store, b"attachment rolled back")
    clock.now = start + 2 * HOUR
    young = publish(store, b"just published, not yet attached")
    asked: list[str] = []

    def is_referenced(artifact_id: str) -> bool:
        asked.append(artifact_id)
        return artifact_id == referenced.id

    report = store.collect_garbage(is_referenced, older_than_ns=HOUR, now_ns=start + 2 * HOUR)

    assert report.deleted == (orphan.id,)
    assert (report.skipped_referenced, report.skipped_young, report.skipped_writer_open) == (
        1,
        1,
        0,
    )
    assert sorted(asked) == sorted([referenced.id, orphan.id])  # young ones are not asked
    assert read_all(store, referenced) == b"attached to an execution"
    assert read_all(store, young) == b"just published, not yet attached"
    with pytest.raises(ArtifactMissing):
        store.open(orphan)


def test_gc_accepts_a_set_of_references(store: FileArtifactStore, clock: FakeClock) -> None:
    kept = publish(store, b"kept")
    dropped = publish(store, b"dropped")

    report = store.collect_garbage(
        frozenset({kept.id}), older_than_ns=HOUR, now_ns=clock.now + 2 * HOUR
    )

    assert report.deleted == (dropped.id,)
    assert [s.ref for s in store.list_committed()] == [kept]


def test_gc_age_is_strict(store: FileArtifactStore, clock: FakeClock) -> None:
    ref = publish(store, b"exactly one hour old")

    at_age = store.collect_garbage(set(), older_than_ns=HOUR, now_ns=clock.now + HOUR)
    past_age = store.collect_garbage(set(), older_than_ns=HOUR, now_ns=clock.now + HOUR + 1)

    assert (at_age.deleted, at_age.skipped_young) == ((), 1)
    assert past_age.deleted == (ref.id,)


def test_gc_refuses_a_negative_age(store: FileArtifactStore) -> None:
    with pytest.raises(Invalid):
        store.collect_garbage(set(), older_than_ns=-1, now_ns=0)


def test_list_committed_reports_commit_times(store: FileArtifactStore, clock: FakeClock) -> None:
    first = publish(store, b"1")
    clock.now += 5
    second = publish(store, b"2")

    listed = {s.ref.id: s for s in store.list_committed()}

    assert listed == {
        first.id: StoredArtifact(first, clock.now - 5),
        second.id: StoredArtifact(second, clock.now),
    }
    assert list(listed) == sorted(listed)


def test_verify_detects_corrupted_bytes(store: FileArtifactStore) -> None:
    ref = publish(store, b"0123456789" * 1000)
    path = data_path(store, ref.id)
    content = bytearray(path.read_bytes())
    content[5000] ^= 0x01
    path.write_bytes(bytes(content))  # same size, one bit flipped

    with pytest.raises(ArtifactCorrupt, match="corrupt"):
        store.verify(ref)


def test_verify_detects_truncation(store: FileArtifactStore) -> None:
    ref = publish(store, b"0123456789" * 1000)
    with data_path(store, ref.id).open("r+b") as file:
        file.truncate(9999)

    with pytest.raises(ArtifactCorrupt, match="9999 bytes"):
        store.verify(ref.id)


def test_verify_detects_a_reference_that_does_not_match(store: FileArtifactStore) -> None:
    ref = publish(store, b"content")
    forged = ArtifactRef(ref.id, ref.size, ref.media_type, hashlib.sha256(b"other").hexdigest())

    with pytest.raises(ArtifactCorrupt, match="reference"):
        store.verify(forged)


def test_it_reports_unreadable_metadata(store: FileArtifactStore) -> None:
    ref = publish(store, b"content")
    (data_path(store, ref.id).parent / "meta.json").write_text("{not json")

    with pytest.raises(ArtifactCorrupt):
        store.stat(ref)
    assert list(store.list_committed()) == []

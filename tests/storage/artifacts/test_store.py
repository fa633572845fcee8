"""The file artifact store (storage.artifacts): create, stream, commit, open, abort,
delete and failed publication (checklist AR-01..AR-05, AR-07)."""

from __future__ import annotations

import hashlib
import os
import re

import pytest

from storage.artifacts import (
    ArtifactMissing,
    FileArtifactStore,
)
from storage.errors import ArtifactError, Closed, Invalid, NotFound
from storage.records import ArtifactRef

from ..support.artifacts import (
    publish,
    read_all,
    temp_entries,
)

# AR-01: create, stream, commit, open ------------------------------------------------


def test_it_round_trips_streamed_bytes(store: FileArtifactStore) -> None:
    chunks = [b"first line\n", b"", b"second line\n", bytes(range(256)) * 40]
    with store.create("application/vnd.conduit.log+json") as writer:
        assert [writer.write(chunk) for chunk in chunks] == [len(c) for c in chunks]
        ref = writer.commit()
    content = b"".join(chunks)

    assert read_all(store, ref) == content
    assert read_all(store, ref.id) == content
    assert ref == ArtifactRef(
        ref.id,
        len(content),
        "application/vnd.conduit.log+json",
        hashlib.sha256(content).hexdigest(),
    )
    assert store.stat(ref.id) == ref
    assert store.exists(ref)
    assert store.exists(ref.id)
    store.verify(ref)


def test_it_commits_an_empty_artifact(store: FileArtifactStore) -> None:
    ref = publish(store, b"")

    assert ref.size == 0
    assert ref.sha256 == hashlib.sha256(b"").hexdigest()
    assert read_all(store, ref) == b""


def test_it_gives_opaque_unguessable_ids(store: FileArtifactStore) -> None:
    ids = {publish(store, b"same bytes").id for _ in range(20)}

    assert len(ids) == 20
    assert all(re.fullmatch(r"[0-9a-f]{32}", artifact_id) for artifact_id in ids)


@pytest.mark.parametrize(
    "media_type",
    ["", "text", "text/", "/plain", "text/plain; charset=utf-8", "text/pl ain", "../a/b", "a/b/c"],
)
def test_it_refuses_a_malformed_media_type(store: FileArtifactStore, media_type: str) -> None:
    with pytest.raises(Invalid):
        store.create(media_type)
    assert temp_entries(store) == []


# AR-02, AR-03: abort and closed writers ---------------------------------------------


def test_it_aborts_on_close_without_commit(store: FileArtifactStore) -> None:
    writer = store.create("text/plain")
    writer.write(b"never published")
    writer.close()

    assert writer.closed
    assert writer.ref is None
    assert temp_entries(store) == []
    assert not store.exists(writer.id)
    with pytest.raises(ArtifactMissing):
        store.open(writer.id)
    assert list(store.list_committed()) == []


def test_it_aborts_when_the_with_block_raises(store: FileArtifactStore) -> None:
    started: list[str] = []

    def produce() -> None:
        with store.create("text/plain") as writer:
            started.append(writer.id)
            writer.write(b"half")
            raise RuntimeError("producer failed")

    with pytest.raises(RuntimeError):
        produce()

    assert temp_entries(store) == []
    with pytest.raises(ArtifactError):
        store.open(started[0])


def test_it_refuses_a_second_commit(store: FileArtifactStore) -> None:
    writer = store.create("text/plain")
    writer.write(b"once")
    ref = writer.commit()

    with pytest.raises(Closed):
        writer.commit()
    writer.close()  # a no-op after commit: the artifact stays
    assert writer.ref == ref
    assert read_all(store, ref) == b"once"


def test_it_refuses_write_after_commit_or_close(store: FileArtifactStore) -> None:
    committed = store.create("text/plain")
    committed.commit()
    closed = store.create("text/plain")
    closed.close()
    closed.close()  # idempotent

    for writer in (committed, closed):
        with pytest.raises(Closed):
            writer.write(b"late")
    with pytest.raises(Closed):
        closed.commit()


# AR-04, AR-05: open and delete ------------------------------------------------------


@pytest.mark.parametrize("artifact_id", ["0" * 32, "nope", "", "../../etc/passwd", "A" * 32])
def test_it_reports_an_unknown_artifact(store: FileArtifactStore, artifact_id: str) -> None:
    with pytest.raises(ArtifactMissing, match="not committed") as raised:
        store.open(artifact_id)
    assert isinstance(raised.value, ArtifactError)
    assert isinstance(raised.value, NotFound)
    assert repr(artifact_id) in str(raised.value)
    with pytest.raises(ArtifactMissing):
        store.stat(artifact_id)
    with pytest.raises(ArtifactMissing):
        store.verify(artifact_id)
    assert not store.exists(artifact_id)


def test_it_does_not_open_an_uncommitted_artifact(store: FileArtifactStore) -> None:
    with store.create("text/plain") as writer:
        writer.write(b"in progress")
        with pytest.raises(ArtifactMissing):
            store.open(writer.id)
        assert not store.exists(writer.id)
        writer.commit()
    assert read_all(store, writer.id) == b"in progress"


def test_it_deletes_idempotently(store: FileArtifactStore) -> None:
    ref = publish(store, b"doomed")
    kept = publish(store, b"kept")

    store.delete(ref)
    store.delete(ref)
    store.delete(ref.id)
    store.delete("0" * 32)
    store.delete("not an id")

    with pytest.raises(ArtifactMissing):
        store.open(ref)
    assert not store.exists(ref)
    assert [s.ref for s in store.list_committed()] == [kept]
    assert temp_entries(store) == []


def test_an_open_stream_survives_delete(store: FileArtifactStore) -> None:
    ref = publish(store, b"x" * 100_000)

    with store.open(ref) as stream:
        head = stream.read(10)
        store.delete(ref)
        assert head + stream.read() == b"x" * 100_000


# AR-07: failed publication ----------------------------------------------------------


def test_a_failed_rename_publishes_nothing(
    store: FileArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = store.create("text/plain")
    writer.write(b"doomed")

    def broken_replace(src: object, dst: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ArtifactError, match="publish failed"):
        writer.commit()
    monkeypatch.undo()

    assert writer.closed
    assert writer.ref is None
    with pytest.raises(Closed):
        writer.commit()
    with pytest.raises(Closed):
        writer.write(b"more")
    assert temp_entries(store) == []
    assert list(store.list_committed()) == []
    with pytest.raises(ArtifactMissing):
        store.open(writer.id)


def test_a_rename_that_fails_after_happening_publishes_nothing(
    store: FileArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = store.create("text/plain")
    writer.write(b"ambiguous")
    real_replace = os.replace

    def ambiguous_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        real_replace(src, dst)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", ambiguous_replace)
    with pytest.raises(ArtifactError, match="no reference returned"):
        writer.commit()
    monkeypatch.undo()

    assert writer.ref is None
    assert temp_entries(store) == []
    assert not store.exists(writer.id)
    with pytest.raises(ArtifactMissing):
        store.open(writer.id)


# Calls in commit: 1 data file, 2 metadata file, 3 temp directory, 4 shard directory
# (after the rename: the just-published artifact must be taken back).
@pytest.mark.parametrize("failing_call", [1, 2, 3, 4])
def test_a_failed_fsync_publishes_nothing(
    store: FileArtifactStore, monkeypatch: pytest.MonkeyPatch, failing_call: int
) -> None:
    writer = store.create("text/plain")
    writer.write(b"doomed")
    real_fsync = os.fsync
    calls = 0

    def flaky_fsync(fd: int) -> None:
        nonlocal calls
        calls += 1
        if calls == failing_call:
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", flaky_fsync)
    with pytest.raises(ArtifactError, match="no reference returned"):
        writer.commit()
    monkeypatch.undo()

    assert calls >= failing_call
    assert writer.closed
    assert writer.ref is None
    assert temp_entries(store) == []
    assert list(store.list_committed()) == []
    assert not store.exists(writer.id)
    with pytest.raises(ArtifactMissing):
        store.open(writer.id)

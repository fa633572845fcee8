"""Artifacts are read without following links: a symbolic link or a special file planted
anywhere under the store's root is refused, never served (issue 20)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from storage.artifacts import ArtifactCorrupt, ArtifactMissing, FileArtifactStore
from storage.records import ArtifactRef

from ..support.artifacts import publish


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret_key"
    path.write_bytes(b"do not serve me")
    return path


def artifact_dir(store: FileArtifactStore, ref: ArtifactRef) -> Path:
    return store.root / "objects" / ref.id[:2] / ref.id


def assert_refused(store: FileArtifactStore, ref: ArtifactRef) -> None:
    with pytest.raises(ArtifactCorrupt, match="not a regular file"):
        store.open(ref)
    with pytest.raises(ArtifactCorrupt, match="not a regular file"):
        store.verify(ref)


def test_it_refuses_a_data_file_replaced_by_a_symlink(store, secret):
    ref = publish(store, b"x" * 15)
    data = artifact_dir(store, ref) / "data"
    data.unlink()
    data.symlink_to(secret)

    assert_refused(store, ref)


def test_it_refuses_an_artifact_directory_replaced_by_a_symlink(store, secret, tmp_path):
    ref = publish(store, b"x" * 15)
    # A look-alike directory outside the root, with valid metadata beside the secret.
    outside = tmp_path / "outside"
    shutil.copytree(artifact_dir(store, ref), outside)
    (outside / "data").unlink()
    (outside / "data").symlink_to(secret)
    shutil.rmtree(artifact_dir(store, ref))
    artifact_dir(store, ref).symlink_to(outside, target_is_directory=True)

    assert_refused(store, ref)
    with pytest.raises(ArtifactCorrupt, match="not a regular file"):
        store.stat(ref)
    assert not store.exists(ref)


def test_it_refuses_a_shard_replaced_by_a_symlink(store, tmp_path):
    ref = publish(store, b"content")
    shard = artifact_dir(store, ref).parent
    moved = tmp_path / "moved_shard"
    shard.rename(moved)
    shard.symlink_to(moved, target_is_directory=True)

    assert_refused(store, ref)


def test_it_refuses_a_fifo_without_blocking(store):
    ref = publish(store, b"content")
    data = artifact_dir(store, ref) / "data"
    data.unlink()
    os.mkfifo(data)

    assert_refused(store, ref)  # a plain open() of a FIFO would hang here


def test_it_refuses_a_directory_in_place_of_the_data(store):
    ref = publish(store, b"content")
    data = artifact_dir(store, ref) / "data"
    data.unlink()
    data.mkdir()

    assert_refused(store, ref)


def test_a_missing_data_file_is_still_missing_not_refused(store):
    ref = publish(store, b"content")
    (artifact_dir(store, ref) / "data").unlink()

    with pytest.raises(ArtifactMissing):
        store.open(ref)


def test_a_store_whose_root_is_reached_through_a_symlink_still_serves(tmp_path):
    # The root is configuration (CONDUIT_ARTIFACT_DIR), trusted as given; only what
    # lies beneath it is checked.
    real = FileArtifactStore(tmp_path / "real")
    ref = publish(real, b"content")
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)

    with FileArtifactStore(tmp_path / "link").open(ref) as stream:
        assert stream.read() == b"content"


def test_it_refuses_a_data_file_with_another_hard_link(store, secret):
    """Issue 34: a hard link (same file system) in place of the data served whatever
    it names; a file with more than one name is refused, as the routed workspace does."""
    ref = publish(store, b"x" * 15)
    data = artifact_dir(store, ref) / "data"
    linked = store.root / "planted"
    linked.write_bytes(b"s" * 15)
    data.unlink()
    os.link(linked, data)

    with pytest.raises(ArtifactCorrupt, match="2 hard links"):
        store.open(ref)
    with pytest.raises(ArtifactCorrupt, match="2 hard links"):
        store.verify(ref)
    linked.unlink()  # one name again: served (and its digest is what decides then)
    with pytest.raises(ArtifactCorrupt, match="is corrupt: has 15 bytes sha256"):
        store.verify(ref)

"""The artifact workspace: every refusal with a file the test planted, each the
matching error and nothing recorded; what it accepts is recorded through the store
(the double, SQLite or PostgreSQL) and read back after a reopen.

Big files are sparse (``truncate``): the workspace reads and hashes every byte of them
exactly as of a written file, so the path under test is the same, and the disk stays
empty.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from storage import Store
from storage.routed.errors import (
    InvalidPath,
    RoutedNotFound,
    SizeCapExceeded,
    SymlinkRejected,
    UnsafePermissions,
)
from storage.routed.ids import AttemptID
from storage.routed.paths import ARTIFACT_MAX_PER_FILE, ARTIFACT_MAX_TOTAL
from storage.routed.records import ArtifactMetadata
from storage.routed.store import RoutedStore
from storage.routed.workspace import ArtifactWorkspace, artifact_id_for, new_artifact_workspace

from .support import admit, claimed, snapshot

MiB = 1024 * 1024


@pytest.fixture
def attempt(routed: RoutedStore) -> AttemptID:
    # Running under a live lease: only such an attempt's artifacts are accepted.
    return claimed(routed, admit(routed)).record.attempt_id


@pytest.fixture
def ws(routed: RoutedStore, attempt: AttemptID, tmp_path: Path) -> ArtifactWorkspace:
    run_id = routed.view(lambda r: r.get_attempt(attempt)).record.run_id
    return new_artifact_workspace(tmp_path / "runs" / run_id / "artifacts", run_id, store=routed)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside every workspace: what a planted link aims at."""
    secret = tmp_path / "secret_key"
    secret.write_text("do not read me")
    return secret


def plant(ws: ArtifactWorkspace, rel: str, content: bytes = b"hello") -> Path:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def sparse(ws: ArtifactWorkspace, rel: str, size: int) -> Path:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        out.truncate(size)
    return path


def refused(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID, rel: str, error: type[Exception]
) -> None:
    """``rel`` is refused with ``error`` and no routed row changed."""
    before = snapshot(routed)
    with pytest.raises(error):
        ws.validate_and_accept(rel, attempt)
    assert snapshot(routed) == before
    assert ws.list_metadata() == []


# -- what it accepts ---------------------------------------------------------------------
def test_it_accepts_a_regular_file_and_records_its_metadata_durably(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID, store: Store
) -> None:
    plant(ws, "out/result.json", b'{"ok": true}')
    meta = ws.validate_and_accept("out/result.json", attempt)
    assert meta.digest == hashlib.sha256(b'{"ok": true}').hexdigest()
    assert (meta.byte_size, meta.media_type) == (12, "application/json")
    assert (meta.attempt_id, meta.creating_attempt, meta.run_id) == (attempt, attempt, ws.run_id)
    assert meta.artifact_id == artifact_id_for(ws.run_id, "out/result.json")
    assert meta.updated_at > 0  # the transaction's now
    # Through the store, so another RoutedStore on the same data sees it.
    assert RoutedStore(store).view(lambda r: r.list_artifacts(ws.run_id)) == [meta]
    assert ws.list_metadata() == [meta]
    assert ws.total_size() == 12


def test_accepting_a_path_again_updates_its_one_record_and_keeps_its_creator(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID
) -> None:
    plant(ws, "log.txt", b"one")
    first = ws.validate_and_accept("log.txt", attempt)
    plant(ws, "log.txt", b"one two")
    unknown = AttemptID.new()  # the store checks the attempt exists and is the run's
    refused_now = snapshot(routed)
    with pytest.raises(RoutedNotFound):
        ws.validate_and_accept("log.txt", unknown)
    assert snapshot(routed) == refused_now
    second = ws.validate_and_accept("log.txt", attempt)
    assert second.artifact_id == first.artifact_id
    assert (second.byte_size, second.media_type) == (7, "text/plain")
    assert [m.byte_size for m in ws.list_metadata()] == [7]


def test_an_unknown_extension_is_octet_stream(ws: ArtifactWorkspace, attempt: AttemptID) -> None:
    plant(ws, "blob.zz9")
    assert ws.validate_and_accept("blob.zz9", attempt).media_type == "application/octet-stream"


def test_it_accepts_eight_segments_and_512_bytes(ws: ArtifactWorkspace, attempt: AttemptID) -> None:
    eight = "/".join("abcdefgh")
    plant(ws, eight)
    assert ws.validate_and_accept(eight, attempt).relative_path == eight
    # 512 bytes of UTF-8 in 255-byte-or-shorter names (the filesystem's own limit).
    longest = "é" * 100 + "/" + "b" * 200 + "/" + "c" * 110
    assert len(longest.encode()) == 512
    plant(ws, longest)
    assert ws.validate_and_accept(longest, attempt).byte_size == 5


# -- links ---------------------------------------------------------------------------------
@pytest.mark.parametrize("level", [0, 1, 2])
def test_it_refuses_a_symlink_at_each_level(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID, outside: Path, level: int
) -> None:
    parts = ["a", "b", "c.txt"]
    plant(ws, "/".join(parts))
    linked = ws.root.joinpath(*parts[: level + 1])
    # The component becomes a link to the same kind of thing, outside the root.
    if level < 2:
        elsewhere = outside.parent / f"dir{level}"
        (elsewhere / "/".join(parts[level + 1 :])).parent.mkdir(parents=True, exist_ok=True)
        (elsewhere / "/".join(parts[level + 1 :])).write_text("outside")
        os.rename(linked, linked.with_name("moved"))
        linked.symlink_to(elsewhere)
    else:
        linked.unlink()
        linked.symlink_to(outside)
    refused(routed, ws, attempt, "a/b/c.txt", SymlinkRejected)


def test_it_refuses_a_symlink_swapped_in_between_the_check_and_the_open(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID, outside: Path
) -> None:
    target = plant(ws, "report.txt")

    def swap(rel: str) -> None:
        # The check has passed on a regular file; now the worker swaps in a link.
        target.unlink()
        target.symlink_to(outside)

    ws.between_check_and_open = swap
    refused(routed, ws, attempt, "report.txt", SymlinkRejected)


def test_it_refuses_a_directory_swapped_for_a_symlink_between_the_check_and_the_open(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID, outside: Path
) -> None:
    plant(ws, "d/report.txt")
    (outside.parent / "evil").mkdir()
    (outside.parent / "evil" / "report.txt").write_text("outside")

    def swap(rel: str) -> None:
        os.rename(ws.root / "d", ws.root / "d.old")
        (ws.root / "d").symlink_to(outside.parent / "evil")

    ws.between_check_and_open = swap
    refused(routed, ws, attempt, "d/report.txt", SymlinkRejected)


def test_it_refuses_a_hard_link_to_a_file_outside_the_root(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID, outside: Path
) -> None:
    os.link(outside, ws.root / "innocent.txt")
    refused(routed, ws, attempt, "innocent.txt", SymlinkRejected)


# -- paths -------------------------------------------------------------------------------
TRAVERSALS = [
    "..",
    "../secret_key",
    "../../etc/passwd",
    "a/../../secret_key",
    "a/..",
    "a/../b",
    "/etc/passwd",
    "//etc/passwd",
    ".",
    "./a",
    "a/./b",
    "a//b",
    "a/",
    "..\\secret_key",
    "a\\..\\..\\secret_key",
    "a/\x00/b",
    "a\n/../b",
    "",
]


@pytest.mark.parametrize("rel", TRAVERSALS, ids=repr)
def test_it_refuses_traversal_in_every_spelling(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID, outside: Path, rel: str
) -> None:
    plant(ws, "a/b")
    refused(routed, ws, attempt, rel, InvalidPath)


# Percent-encoded dots, full-width dots (U+FF0E), an encoded slash.
@pytest.mark.parametrize("rel", ["%2e%2e/secret_key", "\uff0e\uff0e/secret_key", "..%2fsecret_key"])
def test_encoded_dots_are_names_never_decoded(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID, outside: Path, rel: str
) -> None:
    # Nothing decodes them: absent, they are a missing file beneath the root ...
    refused(routed, ws, attempt, rel, InvalidPath)
    # ... and planted, a file beneath the root, never the secret above it.
    plant(ws, rel, b"inside")
    assert ws.validate_and_accept(rel, attempt).digest == hashlib.sha256(b"inside").hexdigest()


def test_it_refuses_nine_segments(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID
) -> None:
    nine = "/".join("abcdefghi")
    plant(ws, nine)
    refused(routed, ws, attempt, nine, InvalidPath)


def test_it_refuses_a_513_byte_path(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID
) -> None:
    path = "é" * 100 + "/" + "b" * 200 + "/" + "c" * 111
    assert len(path.encode()) == 513  # bytes of UTF-8, not characters (311 of them)
    plant(ws, path)
    refused(routed, ws, attempt, path, InvalidPath)


@pytest.mark.parametrize("rel", ["missing.txt", "dir"])
def test_it_refuses_a_missing_file_or_a_directory(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID, rel: str
) -> None:
    (ws.root / "dir").mkdir()
    refused(routed, ws, attempt, rel, InvalidPath)


def test_it_refuses_a_fifo_without_waiting_for_a_writer(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID
) -> None:
    os.mkfifo(ws.root / "pipe")
    refused(routed, ws, attempt, "pipe", InvalidPath)


# -- sizes ---------------------------------------------------------------------------------
def test_it_accepts_25_mib_and_refuses_25_mib_and_one_byte(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID
) -> None:
    sparse(ws, "exact.bin", ARTIFACT_MAX_PER_FILE)
    assert ws.validate_and_accept("exact.bin", attempt).byte_size == 25 * MiB
    sparse(ws, "over.bin", ARTIFACT_MAX_PER_FILE + 1)
    refused_after = snapshot(routed)
    with pytest.raises(SizeCapExceeded):
        ws.validate_and_accept("over.bin", attempt)
    assert snapshot(routed) == refused_after
    assert [m.relative_path for m in ws.list_metadata()] == ["exact.bin"]


def test_it_refuses_the_last_file_that_crosses_100_mib_per_run(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID
) -> None:
    for n in range(4):  # exactly 100 MiB: allowed
        sparse(ws, f"part{n}.bin", 25 * MiB)
        ws.validate_and_accept(f"part{n}.bin", attempt)
    assert ws.total_size() == ARTIFACT_MAX_TOTAL
    plant(ws, "last.txt", b"x")
    before = snapshot(routed)
    with pytest.raises(SizeCapExceeded):
        ws.validate_and_accept("last.txt", attempt)
    assert snapshot(routed) == before
    # Replacing a file by a smaller one is within the cap: the old size no longer counts.
    sparse(ws, "part0.bin", 25 * MiB - 1)
    ws.validate_and_accept("part0.bin", attempt)
    assert ws.validate_and_accept("last.txt", attempt).byte_size == 1
    assert ws.total_size() == ARTIFACT_MAX_TOTAL


def test_the_store_checks_the_run_cap_in_the_recording_transaction(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID
) -> None:
    """Two accepts racing for the last bytes both pass the workspace's early check;
    the store's check, in the transaction that records, lets one through."""
    for n in range(4):
        sparse(ws, f"part{n}.bin", 25 * MiB)
        ws.validate_and_accept(f"part{n}.bin", attempt)
    late = ArtifactMetadata(
        artifact_id=artifact_id_for(ws.run_id, "late.bin"),
        run_id=ws.run_id,
        attempt_id=attempt,
        relative_path="late.bin",
        byte_size=1,
        digest=hashlib.sha256(b"x").hexdigest(),
        media_type="application/octet-stream",
        creating_attempt=attempt,
    )
    before = snapshot(routed)
    with pytest.raises(SizeCapExceeded):
        routed.transact(lambda r: r.accept_artifact(late))
    assert snapshot(routed) == before


@pytest.mark.parametrize("mode", [0o666, 0o646, 0o664, 0o620])
def test_it_refuses_a_group_or_world_writable_file(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID, mode: int
) -> None:
    path = plant(ws, "shared.txt")
    path.chmod(mode)
    refused(routed, ws, attempt, "shared.txt", UnsafePermissions)


def test_it_refuses_a_file_that_changes_while_it_is_read(
    routed: RoutedStore, ws: ArtifactWorkspace, attempt: AttemptID, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = plant(ws, "growing.log", b"first line\n")
    real_read = os.read
    appended: list[bool] = []

    def read_then_append(fd: int, n: int) -> bytes:
        chunk = real_read(fd, n)
        if chunk and not appended:
            appended.append(True)
            with path.open("ab") as out:  # the worker is still writing
                out.write(b"more\n")
        return chunk

    monkeypatch.setattr("storage.routed.workspace.os.read", read_then_append)
    refused(routed, ws, attempt, "growing.log", InvalidPath)


# -- removing what was never accepted ----------------------------------------------------------
def test_remove_unreferenced_deletes_only_files_never_accepted(
    ws: ArtifactWorkspace, attempt: AttemptID, outside: Path
) -> None:
    plant(ws, "keep/result.json", b"{}")
    ws.validate_and_accept("keep/result.json", attempt)
    plant(ws, "keep/scratch.tmp")
    plant(ws, "deep/er/junk.bin")
    (ws.root / "link").symlink_to(outside)
    removed = ws.remove_unreferenced(quiet_seconds=-1)
    assert removed == ["deep/er/junk.bin", "keep/scratch.tmp", "link"]
    assert (ws.root / "keep/result.json").read_bytes() == b"{}"
    assert outside.read_text() == "do not read me"  # the link went, not its target
    assert (ws.root / "deep/er").is_dir()


def test_remove_unreferenced_keeps_a_file_being_written(
    ws: ArtifactWorkspace, attempt: AttemptID
) -> None:
    path = plant(ws, "partial.bin")
    with path.open("ab") as writer:
        writer.write(b"still writing")
        assert ws.remove_unreferenced(quiet_seconds=-1) == []
    assert ws.remove_unreferenced(quiet_seconds=-1) == ["partial.bin"]


def test_remove_unreferenced_keeps_a_file_written_within_the_quiet_period(
    ws: ArtifactWorkspace, attempt: AttemptID
) -> None:
    plant(ws, "fresh.bin")
    assert ws.remove_unreferenced() == []  # default: a minute of quiet
    old = (ws.root / "fresh.bin").stat().st_mtime - 120
    os.utime(ws.root / "fresh.bin", (old, old))
    assert ws.remove_unreferenced() == ["fresh.bin"]

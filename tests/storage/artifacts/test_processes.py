"""The artifact store across process boundaries: a writer killed with SIGKILL
mid-stream, one kept alive holding its writer open while GC runs, and GC's own leftovers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator

import pytest

from storage.artifacts import (
    ArtifactMissing,
    FileArtifactStore,
)

from ..support.artifacts import (
    HOUR,
    REPO,
    data_path,
    publish,
    read_all,
    temp_entries,
)

# Process boundaries: abandoned and live writers in other processes ---------------------

CHILD_WRITER = textwrap.dedent(
    """
    import sys
    from storage.artifacts import FileArtifactStore

    writer = FileArtifactStore(sys.argv[1]).create("application/octet-stream")
    writer.write(b"a" * 65536)
    print(writer.id, flush=True)
    if sys.argv[2] == "stream":
        for _ in range(4096):  # at most 256 MiB if nobody kills us
            writer.write(b"b" * 65536)
    else:
        sys.stdin.read()  # hold the writer open until the parent closes stdin
    """
)


@pytest.fixture
def spawn_writer(
    store: FileArtifactStore,
) -> Iterator[Callable[[str], tuple[subprocess.Popen[str], str]]]:
    children: list[subprocess.Popen[str]] = []

    def spawn(mode: str) -> tuple[subprocess.Popen[str], str]:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD_WRITER, str(store.root), mode],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        children.append(child)
        assert child.stdout is not None
        return child, child.stdout.readline().strip()

    yield spawn
    for child in children:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=30)


def test_a_writer_killed_mid_stream_leaves_only_collectable_temp_bytes(
    store: FileArtifactStore,
    spawn_writer: Callable[[str], tuple[subprocess.Popen[str], str]],
) -> None:
    child, artifact_id = spawn_writer("stream")
    temp_data = store.root / "tmp" / artifact_id / "data"
    deadline = time.monotonic() + 30
    while temp_data.stat().st_size <= 65536:  # until it is past its first chunk
        assert time.monotonic() < deadline, "child writer made no progress"
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL

    assert temp_entries(store) == [artifact_id]
    assert not store.exists(artifact_id)
    with pytest.raises(ArtifactMissing):
        store.open(artifact_id)
    assert list(store.list_committed()) == []

    now = time.time_ns()
    young = store.collect_garbage(set(), older_than_ns=HOUR, now_ns=now)
    assert (young.deleted_temp, young.skipped_young) == ((), 1)
    assert temp_entries(store) == [artifact_id]

    old = store.collect_garbage(set(), older_than_ns=HOUR, now_ns=now + 2 * HOUR)
    assert old.deleted_temp == (artifact_id,)
    assert temp_entries(store) == []


def test_gc_skips_a_writer_open_in_another_live_process(
    store: FileArtifactStore,
    spawn_writer: Callable[[str], tuple[subprocess.Popen[str], str]],
) -> None:
    child, artifact_id = spawn_writer("hold")
    far_future = time.time_ns() + 1000 * HOUR

    report = store.collect_garbage(set(), older_than_ns=0, now_ns=far_future)

    assert report.skipped_writer_open == 1
    assert report.deleted_temp == ()
    assert temp_entries(store) == [artifact_id]
    # The lock dies with the process: its abandoned bytes become collectable.
    child.communicate(input="", timeout=30)
    after = store.collect_garbage(set(), older_than_ns=0, now_ns=far_future)
    assert (after.deleted_temp, after.skipped_writer_open) == ((artifact_id,), 0)


def test_gc_skips_a_writer_open_in_this_process(store: FileArtifactStore) -> None:
    writer = store.create("text/plain")
    writer.write(b"still streaming")

    report = store.collect_garbage(set(), older_than_ns=0, now_ns=time.time_ns() + HOUR)

    assert (report.skipped_writer_open, report.deleted_temp) == (1, ())
    writer.write(b", and done")
    ref = writer.commit()
    assert read_all(store, ref) == b"still streaming, and done"


def test_gc_removes_the_leftovers_of_an_interrupted_delete(store: FileArtifactStore) -> None:
    ref = publish(store, b"half deleted")
    leftover = store.root / "tmp" / f"{ref.id}.0badf00d.deleted"
    data_path(store, ref.id).parent.rename(leftover)  # a crash right after the rename

    assert not store.exists(ref)
    report = store.collect_garbage(set(), older_than_ns=HOUR, now_ns=time.time_ns())
    assert report.deleted_temp == (leftover.name,)
    assert temp_entries(store) == []


def test_gc_removes_an_old_temp_directory_without_data(store: FileArtifactStore) -> None:
    # What a crash between the writer's mkdir and its open leaves behind.
    empty = store.root / "tmp" / ("e" * 32)
    empty.mkdir()
    now = time.time_ns()

    assert store.collect_garbage(set(), older_than_ns=HOUR, now_ns=now).skipped_young == 1
    report = store.collect_garbage(set(), older_than_ns=HOUR, now_ns=now + 2 * HOUR)
    assert report.deleted_temp == (empty.name,)
    assert temp_entries(store) == []

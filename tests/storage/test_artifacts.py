"""The file artifact store (storage.artifacts): checklist AR-01..AR-05, AR-07, AR-10, AR-11.

Process-boundary cases run a real writer in a child Python process: one killed with
SIGKILL mid-stream, one kept alive holding its writer open while GC runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from storage.artifacts import (
    ArtifactCorrupt,
    ArtifactMissing,
    FileArtifactStore,
    StoredArtifact,
)
from storage.errors import ArtifactError, Closed, Invalid, NotFound
from storage.records import ArtifactRef

REPO = Path(__file__).resolve().parents[2]
HOUR = 3600 * 10**9
MiB = 1 << 20


class FakeClock:
    def __init__(self, now: int = 1_000 * HOUR) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> FileArtifactStore:
    return FileArtifactStore(tmp_path / "artifacts", clock=clock)


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


# Concurrency --------------------------------------------------------------------------


def test_readers_stream_a_while_b_is_written_and_never_see_b_early(
    store: FileArtifactStore,
) -> None:
    a_bytes = os.urandom(256 * 1024)
    a = publish(store, a_bytes, "application/octet-stream")
    writer = store.create("application/octet-stream")
    # The writer pauses after each chunk until the checker has looked for B.
    step = threading.Barrier(2, timeout=30)
    stop = threading.Event()
    failures: list[BaseException] = []
    chunks = 8

    def guarded(body: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                body()
            except BaseException as exc:
                failures.append(exc)
                step.abort()

        return run

    def write_b() -> None:
        for index in range(chunks):
            writer.write(bytes([index]) * 64 * 1024)
            step.wait()  # chunk written
            step.wait()  # checked

    def check_b_invisible() -> None:
        for _ in range(chunks):
            step.wait()
            assert not store.exists(writer.id)
            assert writer.id not in {s.ref.id for s in store.list_committed()}
            try:
                store.open(writer.id)
            except ArtifactMissing:
                pass
            else:
                raise AssertionError("B was opened before its commit")
            step.wait()

    def read_a() -> None:
        while not stop.is_set():
            with store.open(a) as stream:
                streamed = b"".join(iter(lambda: stream.read(4096), b""))
            assert streamed == a_bytes

    threads = [threading.Thread(target=guarded(body)) for body in (write_b, check_b_invisible)]
    readers = [threading.Thread(target=guarded(read_a)) for _ in range(3)]
    for thread in threads + readers:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    stop.set()
    for thread in readers:
        thread.join(timeout=60)

    assert failures == []
    b = writer.commit()
    assert read_all(store, b) == b"".join(bytes([i]) * 64 * 1024 for i in range(chunks))
    assert read_all(store, a) == a_bytes


# Memory: a 300 MiB artifact streams through with flat memory --------------------------

MEMORY_PROBE = textwrap.dedent(
    """
    import hashlib, json, os, sys
    from storage.artifacts import FileArtifactStore

    MiB = 1 << 20
    def peak_bytes():
        # VmHWM: the peak of this process image's own memory. Not ru_maxrss: exec keeps
        # the parent's high-water mark from the fork, so after a long pytest run (a
        # large parent) ru_maxrss reported the parent's size, not the probe's.
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
        raise RuntimeError("no VmHWM in /proc/self/status")
    def current_bytes():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    store = FileArtifactStore(sys.argv[1])
    mode = sys.argv[2]
    chunk = os.urandom(MiB)
    digest = hashlib.sha256()
    size = 0
    # Growth = lifetime peak minus the RSS now: an upper bound, since any earlier peak
    # (imports) counts against us rather than hiding what the streaming costs.
    base = current_bytes()
    if mode == "write":
        with store.create("application/octet-stream") as writer:
            for _ in range(300):
                writer.write(chunk)
                digest.update(chunk)
            ref = writer.commit()
        artifact_id, size = ref.id, ref.size
        assert ref.sha256 == digest.hexdigest()
    else:
        artifact_id = sys.argv[3]
        with store.open(artifact_id) as stream:
            if mode == "read":
                while data := stream.read(MiB):
                    digest.update(data)
                    size += len(data)
            else:  # "slurp": the negative control, reading everything at once
                data = stream.read()
                digest.update(data)
                size = len(data)
    print(json.dumps({"id": artifact_id, "size": size, "sha256": digest.hexdigest(),
                      "growth": peak_bytes() - base}))
    """
)


def run_memory_probe(root: Path, mode: str, artifact_id: str = "") -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(root), mode, artifact_id],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.slow
def test_a_300_mib_artifact_streams_with_flat_memory(store: FileArtifactStore) -> None:
    written = run_memory_probe(store.root, "write")
    artifact_id = str(written["id"])
    read = run_memory_probe(store.root, "read", artifact_id)
    slurped = run_memory_probe(store.root, "slurp", artifact_id)

    ref = store.stat(artifact_id)
    assert ref.size == written["size"] == read["size"] == 300 * MiB
    assert ref.sha256 == written["sha256"] == read["sha256"]
    # Flat: well under half the artifact. The bound leaves room for allocator noise on a
    # loaded machine (glibc's adaptive mmap threshold can keep freed 1 MiB chunks).
    assert int(str(written["growth"])) < 128 * MiB
    assert int(str(read["growth"])) < 128 * MiB
    # The control proves the probe sees buffering: holding it all costs ~300 MiB.
    assert int(str(slurped["growth"])) > 256 * MiB
    store.verify(ref)

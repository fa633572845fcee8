"""The artifact store under concurrent readers and writers, and a 300 MiB artifact
streamed with flat memory in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from storage.artifacts import (
    ArtifactMissing,
    FileArtifactStore,
)

from ..support.artifacts import (
    REPO,
    MiB,
    publish,
    read_all,
)

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

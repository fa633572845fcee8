"""``manage.py backup create | verify | restore`` on the real SQLite database and
artifact folder (BK-01..BK-08): a consistent round trip while a writer commits,
refusals of incomplete or damaged bundles, fenced leases after restore, and omission
of artifacts only when their retention expired."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from django.core.management import CommandError
from django.db import connections

from storage import RECORD_FORMAT, Guard, LeaseRef, seconds
from storage.artifacts import FileArtifactStore
from storage.durability import (
    DATABASE,
    MANIFEST,
    RESTORED_DATABASE,
    create_backup,
    load_manifest,
    mark_retention_expired,
)
from storage.durability import bundle as bundle_module
from storage.durability import sqlite as backup_module
from storage.orm import OrmStore

from ..support.backup import (
    AFTER_RESTORE,
    RUN_RECORDS,
    WRITER,
    assert_run_record,
    attach,
    backup,
    publish,
    small_bundle,
)
from ..support.fixtures.sqlite_files import run_on
from ..support.proc import finish, spawn

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
    pytest.mark.sqlite_only,
]


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as conn:
        return conn.execute(sql).fetchall()


# Round trip ---------------------------------------------------------------------------


@pytest.mark.multiprocess
def test_a_round_trip_while_a_writer_commits(
    tmp_path: Path,
    artifacts: FileArtifactStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONDUIT_ARTIFACT_DIR", str(artifacts.root))
    # Small steps and a line per step: the writer commits between snapshot steps.
    monkeypatch.setattr(backup_module, "_PAGES_PER_STEP", 4)
    monkeypatch.setattr(bundle_module, "_PROGRESS_EVERY", 0)
    stop = tmp_path / "stop"
    writer = spawn(WRITER, str(stop))
    assert writer.stdout is not None
    acknowledged = [int(writer.stdout.readline()) for _ in range(5)]
    during: list[int] = []
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        if line.startswith("database snapshot:") and not during:
            assert writer.stdout is not None
            # Hold the backup between two steps until two more transactions committed.
            during.extend(int(writer.stdout.readline()) for _ in range(2))

    bundle, data_dir = tmp_path / "bundle", tmp_path / "restored"
    try:
        create_backup(
            Path(connections["default"].settings_dict["NAME"]),
            artifacts.root,
            bundle,
            progress=progress,
        )
    finally:
        stop.touch()
    finish(writer)
    steps = [line for line in lines if line.startswith("database snapshot:")]
    assert len(steps) > 2, f"the snapshot took {len(steps)} steps: {steps}"
    assert any(line.startswith("artifact 1/") for line in lines)

    snapshot = bundle / DATABASE
    works = {w for (w,) in rows(snapshot, "SELECT id FROM conduit_work")}
    attempts = {
        x: json.loads(data)["artifacts"]
        for x, data in rows(snapshot, "SELECT id, data FROM conduit_execution")
    }
    ((counter,),) = rows(snapshot, "SELECT value FROM conduit_kv WHERE key = 'counter'")
    n = int(bytes(counter))
    # One committed state: everything acknowledged before, nothing committed during
    # the snapshot, and each transaction whole.
    assert acknowledged[-1] <= n < during[-1]
    assert works == {f"bw-{i}" for i in range(1, n + 1)}
    assert set(attempts) == {f"bx-{i}" for i in range(1, n + 1)}
    manifest = load_manifest(bundle)
    assert {ref.id for ref in manifest.artifacts} == {
        ref["id"] for refs in attempts.values() for ref in refs
    }
    assert not (bundle / f"{DATABASE}-wal").exists(), "the snapshot is one self-contained file"
    assert "is a complete backup" in backup("verify", str(bundle))[0]

    out, _ = backup("restore", str(bundle), str(data_dir))
    assert "0 running leases fenced" in out
    assert "Never run a restored copy alongside the original" in out
    assert sorted(os.listdir(data_dir)) == ["artifacts", RESTORED_DATABASE]
    restored = data_dir / RESTORED_DATABASE
    assert {w for (w,) in rows(restored, "SELECT id FROM conduit_work")} == works
    assert_run_record(rows(restored, RUN_RECORDS), n)
    restored_store = FileArtifactStore(data_dir / "artifacts")
    for ref in manifest.artifacts:
        restored_store.verify(ref)  # size and SHA-256 against the restored metadata


# Refusals -----------------------------------------------------------------------------


def test_a_corrupted_artifact_copy_fails_verify(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    bundle, ref = small_bundle(tmp_path, artifacts)
    data = bundle / "artifacts" / "objects" / ref.id[:2] / ref.id / "data"
    body = bytearray(data.read_bytes())
    body[10] ^= 0xFF
    data.write_bytes(bytes(body))
    with pytest.raises(CommandError, match=f"failed verification: .*{ref.id}/data has"):
        backup("verify", str(bundle))
    with pytest.raises(CommandError, match="failed verification"):
        backup("restore", str(bundle), str(tmp_path / "restored"))
    assert not (tmp_path / "restored").exists(), "a failed restore left files behind"


def test_a_truncated_manifest_is_refused(tmp_path: Path, artifacts: FileArtifactStore) -> None:
    bundle, _ = small_bundle(tmp_path, artifacts)
    manifest = bundle / MANIFEST
    manifest.write_bytes(manifest.read_bytes()[: manifest.stat().st_size // 2])
    with pytest.raises(CommandError, match="truncated or invalid"):
        backup("verify", str(bundle))
    with pytest.raises(CommandError, match="truncated or invalid"):
        backup("restore", str(bundle), str(tmp_path / "restored"))


def test_a_bundle_without_its_manifest_is_refused(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    bundle, _ = small_bundle(tmp_path, artifacts)
    (bundle / MANIFEST).unlink()
    with pytest.raises(CommandError, match=r"no manifest\.json: it is not a complete backup"):
        backup("verify", str(bundle))
    with pytest.raises(CommandError, match="not a complete backup"):
        backup("restore", str(bundle), str(tmp_path / "restored"))


def test_a_manifest_naming_a_newer_record_format_is_refused(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    bundle, _ = small_bundle(tmp_path, artifacts)
    doc = json.loads((bundle / MANIFEST).read_text())
    newer = RECORD_FORMAT + 1
    (bundle / MANIFEST).write_text(json.dumps({**doc, "record_format": newer}))
    match = f"record format {newer}, newer than this code's {RECORD_FORMAT}"
    with pytest.raises(CommandError, match=match):
        backup("verify", str(bundle))


def test_a_manifest_naming_a_path_outside_the_bundle_is_refused(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    bundle, _ = small_bundle(tmp_path, artifacts)
    doc = json.loads((bundle / MANIFEST).read_text())
    doc["files"][0]["path"] = "../../etc/passwd"
    (bundle / MANIFEST).write_text(json.dumps(doc))
    with pytest.raises(CommandError, match="invalid: it names the path"):
        backup("verify", str(bundle))


def test_a_sqlite_bundle_refuses_a_database_url(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    bundle, _ = small_bundle(tmp_path, artifacts)
    restored = tmp_path / "restored"
    url = "postgres://u:p@localhost/db"
    with pytest.raises(CommandError, match=r"SQLite bundle: .*--database-url is for PostgreSQL"):
        backup("restore", str(bundle), str(restored), "--database-url", url)
    assert not restored.exists()


def test_restore_into_a_non_empty_folder_is_refused(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    bundle, _ = small_bundle(tmp_path, artifacts)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "conduit.sqlite3").write_bytes(b"the original")
    with pytest.raises(CommandError, match="is not empty: restore only into an absent or empty"):
        backup("restore", str(bundle), str(data_dir))
    assert os.listdir(data_dir) == ["conduit.sqlite3"]
    assert (data_dir / "conduit.sqlite3").read_bytes() == b"the original"


def test_create_refuses_a_non_empty_destination(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "old").write_text("x")
    with pytest.raises(CommandError, match="not an empty directory"):
        backup("create", str(dest))
    assert os.listdir(dest) == ["old"]


# Missing content and retention --------------------------------------------------------


def test_a_missing_artifact_fails_the_backup_unless_its_retention_expired(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    kept = publish(artifacts, b"kept")
    gone = publish(artifacts, b"expired log")
    attach("w1", "x1", kept)
    attach("w2", "x2", gone)
    artifacts.delete(gone)
    dest = tmp_path / "bundle"
    with pytest.raises(CommandError, match=f"1 referenced artifacts have no content .*{gone.id}"):
        backup("create", str(dest))
    assert not dest.exists(), "a failed backup left a partial bundle"

    OrmStore().transact(Guard(), lambda tx: mark_retention_expired(tx, "x2"))
    out, _ = backup("create", str(dest))
    assert f"omitted artifact {gone.id} (retention_expired; Executions x2)" in out
    manifest = load_manifest(dest)
    assert [ref.id for ref in manifest.artifacts] == [kept.id]
    assert [(o.ref, o.executions, o.reason) for o in manifest.omitted] == [
        (gone, ("x2",), "retention_expired")
    ]
    backup("verify", str(dest))


def test_an_artifact_shared_with_a_live_execution_is_never_omitted(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    shared = publish(artifacts, b"shared")
    attach("w1", "x1", shared)
    attach("w2", "x2", shared)
    OrmStore().transact(Guard(), lambda tx: mark_retention_expired(tx, "x2"))
    backup("create", str(tmp_path / "bundle"))
    manifest = load_manifest(tmp_path / "bundle")
    assert [ref.id for ref in manifest.artifacts] == [shared.id]
    assert manifest.omitted == ()


def test_corrupt_content_in_the_store_fails_the_backup(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    ref = publish(artifacts, b"original bytes")
    attach("w1", "x1", ref)
    (artifacts.root / "objects" / ref.id[:2] / ref.id / "data").write_bytes(b"changed bytes!")
    with pytest.raises(CommandError, match=f"artifact {ref.id} is corrupt in the store"):
        backup("create", str(tmp_path / "bundle"))


# Fencing after restore ----------------------------------------------------------------


@pytest.mark.multiprocess
def test_restored_running_leases_are_fenced_before_any_executor_commits(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    ref = publish(artifacts, b"log")
    attach("w1", "x1", ref, lease_ttl=seconds(3600))
    attach("w2", "y1")  # pending: holds no lease
    store = OrmStore()
    x = store.view(lambda tx: tx.execution("x1"))
    lease = [x.id, x.owner, x.epoch]
    bundle, data_dir = tmp_path / "bundle", tmp_path / "restored"
    backup("create", str(bundle))

    out, _ = backup("restore", str(bundle), str(data_dir))

    assert "1 running leases fenced (x1)" in out
    after = json.loads(run_on(data_dir / RESTORED_DATABASE, AFTER_RESTORE, json.dumps(lease)))
    assert after == {"stale": "fenced", "owner": "host-b", "epoch": 2}
    # The original is untouched: its lease is still live there.
    original = store.view(lambda tx: tx.execution("x1"))
    assert (original.owner, original.epoch, original.lease_expires_at) == (
        "host-a",
        1,
        x.lease_expires_at,
    )
    # ... and the original holder still commits there.
    store.transact(Guard(lease=LeaseRef(x.id, x.owner, x.epoch)), lambda tx: tx.execution("x1"))

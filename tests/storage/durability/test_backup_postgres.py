"""``manage.py backup create | verify | restore`` on PostgreSQL (issue 8): one
``pg_dump`` taken in the snapshot the artifact references are read in, the same
artifact manifest flow, and a restore into an empty database that fences every
restored lease. Each restore goes into a scratch database created on the test server
and dropped after."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from django.core.management import CommandError
from django.db import connections

from storage import Guard, LeaseRef, seconds
from storage.artifacts import FileArtifactStore
from storage.durability import DUMP, MANIFEST, create_pg_backup

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
from ..support.proc import PRELUDE, ROOT, finish, spawn

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def url_of(name: str) -> str:
    s = connections["default"].settings_dict
    return (
        f"postgres://{quote(s['USER'], safe='')}:{quote(s['PASSWORD'], safe='')}"
        f"@{s['HOST']}:{s['PORT']}/{name}"
    )


@contextmanager
def scratch_database(suffix: str) -> Iterator[str]:
    """An empty database on the test server, dropped afterwards."""
    name = f"{connections['default'].settings_dict['NAME']}_{suffix}"[:63]
    with connections["default"].cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with connections["default"].cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def query(dbname: str, sql: str) -> list[tuple[Any, ...]]:
    s = connections["default"].settings_dict
    with psycopg.connect(
        dbname=dbname, user=s["USER"], password=s["PASSWORD"], host=s["HOST"], port=s["PORT"]
    ) as conn:
        return conn.execute(sql).fetchall()


def run_on_database(name: str, body: str, *args: str) -> str:
    """Run a child whose settings name the database ``name``; its stdout."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "conduit.settings",
        "DATABASE_URL": url_of(name),
        "CONDUIT_TEST_DATABASE": name,
        "CONDUIT_DB_POOL_SIZE": "0",
    }
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"child failed ({done.returncode}):\n{done.stderr}"
    return done.stdout


# Round trip ---------------------------------------------------------------------------


COUNTER = "SELECT value FROM conduit_kv WHERE namespace = 'backup' AND key = 'counter'"


@pytest.mark.multiprocess
def test_a_round_trip_while_a_writer_commits(
    tmp_path: Path, artifacts: FileArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONDUIT_ARTIFACT_DIR", str(artifacts.root))
    stop = tmp_path / "stop"
    writer = spawn(WRITER, str(stop))
    assert writer.stdout is not None
    acknowledged = [int(writer.stdout.readline()) for _ in range(5)]
    during: list[int] = []
    lines: list[str] = []
    own = connections["default"].settings_dict["NAME"]

    def progress(line: str) -> None:
        lines.append(line)
        if line.startswith("database snapshot: exported") and not during:
            assert writer.stdout is not None
            # The snapshot is exported, pg_dump not started. The live counter, read on
            # another connection, is at least the snapshot's; two commits past it are
            # after the snapshot and must be in neither the dump nor the artifact set.
            live = int(bytes(query(own, COUNTER)[0][0]))
            while not during or during[-1] < live + 2:
                during.append(int(writer.stdout.readline()))

    bundle, data_dir = tmp_path / "bundle", tmp_path / "restored"
    try:
        manifest = create_pg_backup(artifacts.root, bundle, progress=progress)
    finally:
        stop.touch()
    finish(writer)
    assert during, f"no snapshot line in {lines}"
    assert any(line.startswith("artifact 1/") for line in lines)
    assert manifest.engine == "postgresql"
    assert manifest.source["server_version"]
    s = connections["default"].settings_dict
    # Where it came from, never with the password.
    assert manifest.source["database"] == f"postgresql://{s['HOST']}:{s['PORT']}/{s['NAME']}"
    assert manifest.files[0].path == DUMP
    assert "is a complete backup" in backup("verify", str(bundle))[0]

    with scratch_database("rt") as target:
        out, _ = backup("restore", str(bundle), str(data_dir), "--database-url", url_of(target))
        assert "0 running leases fenced" in out
        assert "Never run a restored copy alongside the original" in out
        works = {w for (w,) in query(target, "SELECT id FROM conduit_work")}
        attempts = {
            x: json.loads(data)["artifacts"]
            for x, data in query(target, "SELECT id, data FROM conduit_execution")
        }
        ((counter,),) = query(target, COUNTER)
        restored_runs = query(target, RUN_RECORDS)
    n = int(bytes(counter))
    assert_run_record(restored_runs, n)
    # One committed state: everything acknowledged before the snapshot, nothing
    # committed after it, each transaction whole.
    assert acknowledged[-1] <= n < during[-1]
    assert works == {f"bw-{i}" for i in range(1, n + 1)}
    assert set(attempts) == {f"bx-{i}" for i in range(1, n + 1)}
    # ... and the artifact set is the one that very snapshot references.
    assert {ref.id for ref in manifest.artifacts} == {
        ref["id"] for refs in attempts.values() for ref in refs
    }
    assert sorted(os.listdir(data_dir)) == ["artifacts"]
    restored_store = FileArtifactStore(data_dir / "artifacts")
    for ref in manifest.artifacts:
        restored_store.verify(ref)


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
        backup("restore", str(bundle), str(tmp_path / "restored"), "--database-url", url_of("x"))
    assert not (tmp_path / "restored").exists(), "a failed restore left files behind"


def test_a_truncated_manifest_is_refused(tmp_path: Path, artifacts: FileArtifactStore) -> None:
    bundle, _ = small_bundle(tmp_path, artifacts)
    manifest = bundle / MANIFEST
    manifest.write_bytes(manifest.read_bytes()[: manifest.stat().st_size // 2])
    with pytest.raises(CommandError, match="truncated or invalid"):
        backup("verify", str(bundle))
    with pytest.raises(CommandError, match="truncated or invalid"):
        backup("restore", str(bundle), str(tmp_path / "restored"), "--database-url", url_of("x"))


def test_an_unreadable_dump_fails_verify(tmp_path: Path, artifacts: FileArtifactStore) -> None:
    bundle, _ = small_bundle(tmp_path, artifacts)
    # Garbage with a matching manifest entry: only pg_restore --list can tell.
    (bundle / DUMP).write_bytes(b"not a dump" * 100)
    doc = json.loads((bundle / MANIFEST).read_text())
    for entry in doc["files"]:
        if entry["path"] == DUMP:
            entry["size"], entry["sha256"] = 1000, hashlib.sha256(b"not a dump" * 100).hexdigest()
    (bundle / MANIFEST).write_text(json.dumps(doc))
    with pytest.raises(CommandError, match="is not a readable PostgreSQL dump"):
        backup("verify", str(bundle))


def test_a_postgresql_bundle_needs_a_database_url(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    bundle, _ = small_bundle(tmp_path, artifacts)
    with pytest.raises(CommandError, match="PostgreSQL bundle: name the empty database"):
        backup("restore", str(bundle), str(tmp_path / "restored"))
    own = connections["default"].settings_dict["NAME"]
    with pytest.raises(CommandError, match="this console's own database"):
        backup("restore", str(bundle), str(tmp_path / "restored"), "--database-url", url_of(own))
    assert not (tmp_path / "restored").exists()


def test_restore_into_a_non_empty_database_is_refused(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    bundle, _ = small_bundle(tmp_path, artifacts)
    with scratch_database("full") as target:
        backup("restore", str(bundle), str(tmp_path / "first"), "--database-url", url_of(target))
        query(target, "SELECT 1")  # still there
        with pytest.raises(CommandError, match=f"the target database '{target}' is not empty"):
            backup(
                "restore",
                str(bundle),
                str(tmp_path / "second"),
                "--database-url",
                url_of(target),
            )
        assert not (tmp_path / "second").exists(), "a refused restore left files behind"
        assert query(target, "SELECT id FROM conduit_work") == [("w1",)]


# Fencing after restore ----------------------------------------------------------------


@pytest.mark.multiprocess
def test_restored_running_leases_are_fenced_before_any_executor_commits(
    tmp_path: Path, artifacts: FileArtifactStore
) -> None:
    from storage.orm import OrmStore

    ref = publish(artifacts, b"log")
    attach("w1", "x1", ref, lease_ttl=seconds(3600))
    attach("w2", "y1")  # pending: holds no lease
    store = OrmStore()
    x = store.view(lambda tx: tx.execution("x1"))
    lease = [x.id, x.owner, x.epoch]
    bundle, data_dir = tmp_path / "bundle", tmp_path / "restored"
    backup("create", str(bundle))

    with scratch_database("fence") as target:
        out, _ = backup("restore", str(bundle), str(data_dir), "--database-url", url_of(target))
        assert "1 running leases fenced (x1)" in out
        after = json.loads(run_on_database(target, AFTER_RESTORE, json.dumps(lease)))
    assert after == {"stale": "fenced", "owner": "host-b", "epoch": 2}
    # The original is untouched: its lease is still live there, and its holder commits.
    original = store.view(lambda tx: tx.execution("x1"))
    assert (original.owner, original.epoch, original.lease_expires_at) == (
        "host-a",
        1,
        x.lease_expires_at,
    )
    store.transact(Guard(lease=LeaseRef(x.id, x.owner, x.epoch)), lambda tx: tx.execution("x1"))

"""Backup, verify and restore of the SQLite coordination database and its artifacts.

The bundle (``bundle`` describes it) holds ``db.sqlite3``, the referenced artifacts and
``manifest.json``, written last. ``create_backup`` builds it in the order the spec
gives: snapshot the database through the backup API inside one read transaction (so
the copy is one committed state even while writers commit, and never a copy of live
files); capture the artifact references from the snapshot; copy each through an open
stream of the artifact store (the open file keeps the bytes even if the artifact is
deleted meanwhile) while hashing it, and check size and SHA-256 against what the store
recorded at commit and what the reference says; fsync everything; publish
``manifest.json`` with one rename. A directory without a manifest is not a restore
point: ``verify`` and ``restore_backup`` refuse it.

Retention. Content of an Execution whose retention expired may be gone. The retention
policy records the expiry first, in the KV entry ``retention / expired/<execution id>``
(``fence.mark_retention_expired``); a backup omits every artifact referenced only by
such Executions and lists each in the manifest's ``omitted`` with the Executions that
referenced it. Any other referenced artifact that is missing or corrupt fails the
backup.

Restore (``restore_backup``) goes into an absent or empty data directory: it verifies
the bundle, copies the artifacts, copies the database under a temporary name, has the
caller fence every restored lease (``fence.fence_leases`` in one control-plane
transaction, run in a child process opened on the restored file), and only then
renames the database to ``conduit.sqlite3``. A database file under that name therefore
means a complete, fenced restore.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path

from ..files import fsync_dir, fsync_file, fsync_tree
from ..pg_url import sqlite_override
from .bundle import (
    ARTIFACTS,
    DATABASE,
    EXPIRED_PREFIX,
    RETENTION_NAMESPACE,
    SQLITE,
    BackupError,
    Manifest,
    Progress,
    SnapshotRefs,
    Throttle,
    check_versions,
    quiet,
    snapshot_refs,
)
from .fence import fence_here, fence_in_child
from .routed import configured_routed_root
from .transfer import (
    CREATE_REFUSAL,
    NEVER_TWO,
    RESTORE_REFUSAL,
    Restored,
    complete_bundle,
    into_empty,
    refuse_own_data_dir,
    restore_artifacts,
    restore_file,
    verified,
)
from .verify import check_references, fail_on, verify_files

RESTORED_DATABASE = "conduit.sqlite3"

_PAGES_PER_STEP = 2048


# Snapshot references -------------------------------------------------------------------


def _open_snapshot(path: Path) -> sqlite3.Connection:
    # immutable: a bundle's snapshot never changes, so no locks and no journal files.
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)


def read_snapshot(path: Path) -> SnapshotRefs:
    """Versions and artifact references of a snapshot file (the bundle's own copy,
    read directly: it is no live database)."""
    with closing(_open_snapshot(path)) as db:
        meta = dict(db.execute("SELECT key, value FROM conduit_meta").fetchall())
        schema, fmt = int(meta.get("schema_version", 1)), int(meta.get("record_format", 1))
        # Decoding records of a newer format would silently drop fields.
        check_versions(schema, fmt, f"the database snapshot {path}")
        expired = {
            key.removeprefix(EXPIRED_PREFIX)
            for (key,) in db.execute(
                "SELECT key FROM conduit_kv WHERE namespace = ? AND substr(key, 1, ?) = ?",
                (RETENTION_NAMESPACE, len(EXPIRED_PREFIX), EXPIRED_PREFIX),
            )
        }
        records = [data for (data,) in db.execute("SELECT data FROM conduit_execution ORDER BY id")]
    return snapshot_refs(schema, fmt, expired, records)


# Create --------------------------------------------------------------------------------


def create_backup(
    database: Path,
    artifact_root: Path,
    dest: Path,
    *,
    progress: Progress | None = None,
    build: Mapping[str, str] | None = None,
    routed_root: Path | None = None,
) -> Manifest:
    """Write a complete bundle of ``database`` (a live SQLite file), the committed
    artifacts it references from ``artifact_root`` and the routed-run state under
    ``routed_root`` into ``dest`` (absent or empty).
    On any failure nothing is left in ``dest`` (and no manifest was ever written)."""
    say = progress or quiet
    with into_empty(dest, CREATE_REFUSAL):
        if not database.is_file():
            raise BackupError(f"no database file at {database}")
        _snapshot(database, dest / DATABASE, say)
        refs = read_snapshot(dest / DATABASE)
        source = {"database": str(database), "artifacts": str(artifact_root)}
        return complete_bundle(
            dest,
            DATABASE,
            refs,
            artifact_root,
            source=source,
            build=build,
            say=say,
            engine=SQLITE,
            routed_root=routed_root,
        )


def _snapshot(database: Path, target: Path, say: Progress) -> None:
    """Copy ``database`` with the online backup API inside one read transaction: every
    step reads the same WAL snapshot, so writers go on and the copy is one committed
    state (SQLite restarts a stepped backup on concurrent writes only when the source
    connection has no read transaction of its own)."""
    throttle = Throttle(say)
    try:
        source = sqlite3.connect(
            f"{database.resolve().as_uri()}?mode=rw", uri=True, timeout=30, isolation_level=None
        )
    except sqlite3.Error as exc:
        raise BackupError(f"cannot open {database}: {exc}") from exc
    try:
        with closing(source), closing(sqlite3.connect(target)) as copy:
            source.execute("PRAGMA query_only=1")
            source.execute("BEGIN")
            source.execute("SELECT count(*) FROM sqlite_master").fetchone()  # pins the snapshot
            source.backup(
                copy,
                pages=_PAGES_PER_STEP,
                progress=lambda _status, left, total: throttle(
                    f"database snapshot: {total - left}/{total} pages", done=left == 0
                ),
            )
            source.execute("ROLLBACK")
            # A self-contained file: no -wal beside it in the bundle.
            copy.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.Error as exc:
        raise BackupError(f"database snapshot of {database} failed: {exc}") from exc
    fsync_file(target)


# Verify --------------------------------------------------------------------------------


def verify(bundle: Path, say: Progress) -> Manifest:
    """``verify_files``, then the snapshot's ``integrity_check``, its versions against
    the manifest's, and every artifact it references either copied or listed as
    omitted."""
    manifest, listed = verify_files(bundle, say)
    snapshot = bundle / DATABASE
    try:
        with closing(_open_snapshot(snapshot)) as db:
            check = [row[0] for row in db.execute("PRAGMA integrity_check")]
        refs = read_snapshot(snapshot)
    except sqlite3.Error as exc:
        raise BackupError(f"{snapshot} is not a readable SQLite database: {exc}") from exc
    if check != ["ok"]:
        raise BackupError(f"{snapshot} fails integrity_check: {'; '.join(check[:5])}")
    if (refs.schema_version, refs.record_format) != (
        manifest.schema_version,
        manifest.record_format,
    ):
        raise BackupError(
            f"the manifest says schema {manifest.schema_version} format "
            f"{manifest.record_format}, the snapshot {refs.schema_version} "
            f"{refs.record_format}"
        )
    problems: list[str] = []
    check_references(manifest, refs, listed, problems)
    fail_on(bundle, problems)
    return manifest


# Restore -------------------------------------------------------------------------------


def restore_backup(
    bundle: Path,
    data_dir: Path,
    *,
    fence: Callable[[Path], list[str]],
    progress: Progress | None = None,
) -> tuple[Manifest, list[str]]:
    """Restore a verified bundle into ``data_dir`` (absent or empty): artifacts into
    ``data_dir/artifacts``, the database into ``data_dir/conduit.sqlite3``.

    ``fence(path)`` must fence every restored lease of the database file at ``path``
    (``fence_leases`` in one control-plane transaction) and return the attempts fenced;
    the database gets its final name only after it returned. Returns the manifest and
    the fenced attempts. On failure ``data_dir`` is left empty (or absent)."""
    say = progress or quiet
    with into_empty(data_dir, RESTORE_REFUSAL):
        manifest = verified(bundle, SQLITE, verify, say)
        restore_artifacts(bundle, manifest, data_dir, say)
        (database_entry,) = (e for e in manifest.files if e.path == DATABASE)
        pending = data_dir / f"{RESTORED_DATABASE}.restoring"
        restore_file(bundle, database_entry, pending, say)
        fsync_tree(data_dir)
        fenced = fence(pending)
        _settle(pending)
        os.rename(pending, data_dir / RESTORED_DATABASE)
        fsync_dir(data_dir)
    return manifest, fenced


def _settle(database: Path) -> None:
    """Fold the fencing transaction's WAL into the file and drop the WAL, so renaming
    the one file carries every committed change."""
    with closing(sqlite3.connect(database, isolation_level=None)) as db:
        (mode,) = db.execute("PRAGMA journal_mode=DELETE").fetchone()
    wal = database.with_name(database.name + "-wal")
    if mode != "delete" or wal.exists():
        raise BackupError(f"cannot checkpoint {database} (journal mode {mode})")
    fsync_file(database)


# The engine ----------------------------------------------------------------------------


def _configured_database() -> Path:
    from django.db import connections

    return Path(connections["default"].settings_dict["NAME"]).resolve()


def _fence_in_child(database: Path) -> list[str]:
    return fence_in_child(sqlite_override(database), str(database))


def _same_file(database: str, own: str) -> bool:
    return Path(database).resolve() == Path(own)


class SqliteEngine:
    """The SQLite engine for the backup command: the configured file, a data folder."""

    name = SQLITE

    def create(self, dest: Path, *, progress: Progress) -> Manifest:
        from django.conf import settings

        return create_backup(
            _configured_database(),
            Path(settings.ARTIFACT_DIR),
            dest,
            progress=progress,
            routed_root=configured_routed_root(),
        )

    def verify(self, bundle: Path, say: Progress) -> Manifest:
        return verify(bundle, say)

    def restore(
        self, bundle: Path, data_dir: Path, database_url: str | None, *, progress: Progress
    ) -> Restored:
        if database_url:
            raise BackupError(
                f"{bundle} is a SQLite bundle: it restores into DATA_DIR alone; "
                "--database-url is for PostgreSQL bundles"
            )
        refuse_own_data_dir(data_dir)
        manifest, fenced = restore_backup(
            bundle, data_dir, fence=_fence_in_child, progress=progress
        )
        return Restored(
            manifest,
            fenced,
            into=str(data_dir),
            next_step=(
                f"Start the console on it with its data directory set to {data_dir} "
                f"(database {RESTORED_DATABASE}, artifacts {ARTIFACTS}/) after "
                f"`manage.py migrate`. {NEVER_TWO}"
            ),
        )

    def fence(self, database: str) -> str:
        return fence_here(database, str(_configured_database()), _same_file)

"""Backup bundles of the SQLite coordination database and its artifacts (BK-01..BK-08).

A bundle (``storage.bundle`` describes it) is a directory::

    db.sqlite3                           a consistent snapshot (SQLite online backup API)
    artifacts/objects/<aa>/<id>/data     every committed artifact the snapshot references,
    artifacts/objects/<aa>/<id>/meta.json   laid out as the file artifact store lays it
    manifest.json                        written last: versions, build, every file's size
                                         and SHA-256, the artifacts copied and omitted

``create_backup`` builds it in the order the spec gives: snapshot the database through
the backup API inside one read transaction (so the copy is one committed state even
while writers commit, and never a copy of live files); capture the artifact references
from the snapshot; copy each through an open stream of the artifact store (the open
file keeps the bytes even if the artifact is deleted meanwhile) while hashing it, and
check size and SHA-256 against what the store recorded at commit and what the
reference says; fsync everything; publish ``manifest.json`` with one rename. A
directory without a manifest is not a restore point: ``verify_backup`` and
``restore_backup`` refuse it.

Retention. Content of an Execution whose retention expired may be gone. The retention
policy records the expiry first, in the KV entry ``retention / expired/<execution id>``
(``mark_retention_expired``); a backup omits every artifact referenced only by such
Executions and lists each in the manifest's ``omitted`` with the Executions that
referenced it. Any other referenced artifact that is missing or corrupt fails the
backup.

Restore (``restore_backup``) goes into an absent or empty data directory: it verifies
the bundle, copies the artifacts, copies the database under a temporary name, has the
caller fence every restored lease (``fence_leases`` in one control-plane transaction,
run by ``manage.py backup restore`` in a child process opened on the restored file),
and only then renames the database to ``conduit.sqlite3``. A database file under that
name therefore means a complete, fenced restore.

PostgreSQL (``create_pg_backup``, ``restore_pg_backup``): the bundle holds ``db.dump``
in place of ``db.sqlite3``, a ``pg_dump`` custom-format file taken by
``storage.pg.pg_dump_with``, which reads the versions and artifact references in the
very snapshot it dumps (exported with ``pg_export_snapshot``): the dump and the artifact
set agree even while writers commit. The artifact copy, its checks and the manifest
(engine ``postgresql``, the server version under ``source``) are the ones above.
Verifying checks every file and that ``pg_restore --list`` reads the dump; restoring
needs an empty target database (no ``conduit_*`` table with a row), restores the dump
in one transaction (``pg_restore --single-transaction``), copies the artifacts into an
absent or empty data directory, then has the caller fence every restored lease.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from conduit.env import PostgresUrl

from . import codec
from .api import Tx
from .artifacts import ArtifactMissing, FileArtifactStore, _write_meta
from .bundle import (
    ARTIFACTS,
    DATABASE,
    DUMP,
    MANIFEST,
    POSTGRESQL,
    SQLITE,
    BackupError,
    FileEntry,
    Manifest,
    OmittedArtifact,
    Progress,
    Throttle,
    artifact_path,
    build_metadata,
    bundle_path,
    copy_stream,
    digest,
    empty_dir,
    file_entry,
    fsync_dir,
    fsync_file,
    fsync_tree,
    load_manifest,
    publish,
    quiet,
)
from .errors import ArtifactError, RecordsNewer, SchemaNewer, Unavailable
from .records import (
    RECORD_FORMAT,
    SCHEMA_VERSION,
    ArtifactRef,
    Execution,
    ExecutionState,
)

# The bundle's names, so callers need only this module.
__all__ = [
    "ARTIFACTS",
    "DATABASE",
    "DUMP",
    "EXPIRED_PREFIX",
    "MANIFEST",
    "RESTORED_DATABASE",
    "RETENTION_NAMESPACE",
    "BackupError",
    "Manifest",
    "SnapshotRefs",
    "check_versions",
    "create_backup",
    "create_pg_backup",
    "fence_leases",
    "load_manifest",
    "mark_retention_expired",
    "read_snapshot",
    "restore_backup",
    "restore_pg_backup",
    "verify_backup",
]

RESTORED_DATABASE = "conduit.sqlite3"
RETENTION_NAMESPACE = "retention"
EXPIRED_PREFIX = "expired/"

_PAGES_PER_STEP = 2048


# Retention ---------------------------------------------------------------------------


def mark_retention_expired(tx: Tx, execution_id: str) -> None:
    """Record that the retention of ``execution_id``'s artifacts expired, before their
    content is deleted, so backups omit them (and list the omission) instead of
    failing. Idempotent; the value is Guard.now in nanoseconds."""
    tx.execution(execution_id)  # NotFound for an unknown attempt
    tx.kv_put(RETENTION_NAMESPACE, EXPIRED_PREFIX + execution_id, str(tx.now).encode())


def fence_leases(tx: Tx) -> list[str]:
    """End every running lease now (``revoke_lease``): the old holders are fenced, a
    later claim recovers each attempt with a higher epoch. Run on a restored database
    before any executor can commit (BK-06). Returns the attempts fenced."""
    fenced = []
    for x in tx.live_executions():
        if x.state is ExecutionState.RUNNING and x.owner:
            tx.revoke_lease(x.id)
            fenced.append(x.id)
    return fenced


def check_versions(schema_version: int, record_format: int, what: str) -> None:
    """Refuse a database newer than this code (SV-02, SV-07), naming both versions."""
    if schema_version > SCHEMA_VERSION:
        raise SchemaNewer(
            f"{what} has schema version {schema_version}, newer than this code's version "
            f"{SCHEMA_VERSION}; use a newer Conduit Console"
        )
    if record_format > RECORD_FORMAT:
        raise RecordsNewer(
            f"{what} has record format {record_format}, newer than this code's "
            f"{RECORD_FORMAT} (records_newer); use a newer Conduit Console"
        )


# Snapshot references -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SnapshotRefs:
    """What a database snapshot references: versions and the artifacts to copy
    (``required``, by ID) or to omit (``omitted``: referenced only by Executions whose
    retention expired, with those Executions)."""

    schema_version: int
    record_format: int
    required: Mapping[str, tuple[ArtifactRef, ...]]
    omitted: Mapping[str, tuple[ArtifactRef, tuple[str, ...]]]


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
    return _snapshot_refs(schema, fmt, expired, records)


def _snapshot_refs(schema: int, fmt: int, expired: set[str], executions: list[str]) -> SnapshotRefs:
    """Group the artifact references of the encoded ``executions`` of one snapshot (in
    ID order): required, or omitted when only Executions in ``expired`` reference them."""
    refs: dict[str, list[tuple[ArtifactRef, str]]] = {}
    for data in executions:
        x = codec.decode(Execution, data)
        for ref in x.artifacts:
            refs.setdefault(ref.id, []).append((ref, x.id))
    required: dict[str, tuple[ArtifactRef, ...]] = {}
    omitted: dict[str, tuple[ArtifactRef, tuple[str, ...]]] = {}
    for artifact_id, uses in sorted(refs.items()):
        if all(x_id in expired for _, x_id in uses):
            omitted[artifact_id] = (uses[0][0], tuple(x_id for _, x_id in uses))
        else:
            required[artifact_id] = tuple(ref for ref, _ in uses)
    return SnapshotRefs(schema, fmt, required, omitted)


# Create --------------------------------------------------------------------------------


def create_backup(
    database: Path,
    artifact_root: Path,
    dest: Path,
    *,
    progress: Progress | None = None,
    build: Mapping[str, str] | None = None,
) -> Manifest:
    """Write a complete bundle of ``database`` (a live SQLite file) and the committed
    artifacts it references from ``artifact_root`` into ``dest`` (absent or empty).
    On any failure nothing is left in ``dest`` (and no manifest was ever written)."""
    say = progress or quiet
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} exists and is not an empty directory")
    if not database.is_file():
        raise BackupError(f"no database file at {database}")
    created = not dest.exists()
    try:
        dest.mkdir(parents=True, exist_ok=True)
        _snapshot(database, dest / DATABASE, say)
        refs = read_snapshot(dest / DATABASE)
        source = {"database": str(database), "artifacts": str(artifact_root)}
        return _complete_bundle(
            dest, DATABASE, refs, artifact_root, source=source, build=build, say=say
        )
    except BaseException:
        empty_dir(dest, remove=created)
        raise


def _complete_bundle(
    dest: Path,
    database_file: str,
    refs: SnapshotRefs,
    artifact_root: Path,
    *,
    source: Mapping[str, str],
    build: Mapping[str, str] | None,
    say: Progress,
    engine: str = SQLITE,
) -> Manifest:
    """What every engine's backup does after its snapshot: copy and verify the
    referenced artifacts, then publish the manifest last (a bundle without one is no
    restore point)."""
    files = [file_entry(dest, database_file)]
    copied, copied_files = _copy_artifacts(artifact_root, refs.required, dest, say)
    files += copied_files
    manifest = Manifest(
        schema_version=refs.schema_version,
        record_format=refs.record_format,
        created_at_ns=time.time_ns(),
        files=tuple(files),
        artifacts=tuple(copied),
        omitted=tuple(
            OmittedArtifact(ref, executions) for ref, executions in refs.omitted.values()
        ),
        build=dict(build if build is not None else build_metadata()),
        source=dict(source),
        engine=engine,
    )
    fsync_tree(dest)
    publish(dest / MANIFEST, manifest.to_json().encode())
    say(
        f"backup complete: {len(manifest.artifacts)} artifacts copied, "
        f"{len(manifest.omitted)} omitted (retention expired)"
    )
    return manifest


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


# Create on PostgreSQL -------------------------------------------------------------------


def read_pg_snapshot(using: str = "view") -> tuple[SnapshotRefs, str]:
    """Versions, artifact references and the server version, read on ``using`` in
    its open transaction: run inside ``pg_dump_with`` it reads the dumped snapshot."""
    from django.db import connections

    with connections[using].cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = str(cursor.fetchone()[0])
        cursor.execute("SELECT key, value FROM conduit_meta")
        meta = dict(cursor.fetchall())
        schema, fmt = int(meta.get("schema_version", 1)), int(meta.get("record_format", 1))
        check_versions(schema, fmt, "the database")
        cursor.execute("SELECT key FROM conduit_kv WHERE namespace = %s", [RETENTION_NAMESPACE])
        expired = {
            key.removeprefix(EXPIRED_PREFIX)
            for (key,) in cursor.fetchall()
            if key.startswith(EXPIRED_PREFIX)
        }
        cursor.execute("SELECT data FROM conduit_execution ORDER BY id")
        records = [data for (data,) in cursor.fetchall()]
    return _snapshot_refs(schema, fmt, expired, records), server


def create_pg_backup(
    artifact_root: Path,
    dest: Path,
    *,
    using: str = "view",
    progress: Progress | None = None,
    build: Mapping[str, str] | None = None,
) -> Manifest:
    """Write a complete bundle of the PostgreSQL database behind ``using`` and the
    committed artifacts it references into ``dest`` (absent or empty): one
    ``pg_dump_with`` writes ``db.dump`` and reads the references in the same snapshot;
    then the artifact copy and manifest of ``create_backup``. On any failure nothing
    is left in ``dest``."""
    from django.db import connections

    from .pg import pg_dump_with

    say = progress or quiet
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} exists and is not an empty directory")
    created = not dest.exists()

    def read(_tx: Tx) -> tuple[SnapshotRefs, str]:
        say("database snapshot: exported; reading the artifact references in it")
        return read_pg_snapshot(using)

    try:
        dest.mkdir(parents=True, exist_ok=True)
        try:
            refs, server = pg_dump_with(dest / DUMP, read, using=using)
        except Unavailable as exc:
            raise BackupError(f"database dump failed: {exc}") from exc
        say(f"database snapshot: {(dest / DUMP).stat().st_size} bytes dumped")
        s = connections[using].settings_dict
        where = f"{s['HOST'] or 'local socket'}:{s['PORT'] or 5432}/{s['NAME']}"
        source = {
            "database": f"postgresql://{where}",  # never the password
            "server_version": server,
            "artifacts": str(artifact_root),
        }
        return _complete_bundle(
            dest, DUMP, refs, artifact_root, source=source, build=build, say=say, engine=POSTGRESQL
        )
    except BaseException:
        empty_dir(dest, remove=created)
        raise


def _copy_artifacts(
    root: Path,
    required: Mapping[str, tuple[ArtifactRef, ...]],
    dest: Path,
    say: Progress,
) -> tuple[list[ArtifactRef], list[FileEntry]]:
    if not required:
        return [], []
    missing = sorted(required) if not (root / "objects").is_dir() else []
    if missing:
        raise BackupError(_missing_message(missing, root))
    store = FileArtifactStore(root)
    copied: list[ArtifactRef] = []
    files: list[FileEntry] = []
    for number, (artifact_id, refs) in enumerate(required.items(), 1):
        try:
            # Open first: the open stream retains the bytes while they are copied.
            with store.open(artifact_id) as stream:
                stored = store.stored(artifact_id)
                rel = artifact_path(artifact_id)  # open() accepted it: a valid ID
                for ref in refs:
                    if ref.size != stored.ref.size or ref.sha256 not in ("", stored.ref.sha256):
                        raise BackupError(
                            f"artifact {artifact_id}: a reference says {ref.size} bytes "
                            f"sha256 {ref.sha256 or '-'}, the store holds {stored.ref.size} "
                            f"bytes sha256 {stored.ref.sha256}"
                        )
                say(f"artifact {number}/{len(required)}: {artifact_id} ({stored.ref.size} bytes)")
                (dest / rel).mkdir(parents=True)
                data = copy_stream(stream, dest / rel / "data", say, artifact_id)
        except ArtifactMissing:
            missing.append(artifact_id)
            continue
        except ArtifactError as exc:
            raise BackupError(f"artifact {artifact_id} cannot be backed up: {exc}") from exc
        if (data.size, data.sha256) != (stored.ref.size, stored.ref.sha256):
            raise BackupError(
                f"artifact {artifact_id} is corrupt in the store: read {data.size} bytes "
                f"sha256 {data.sha256}, committed {stored.ref.size} bytes "
                f"sha256 {stored.ref.sha256}"
            )
        _write_meta(dest / rel / "meta.json", stored.ref, stored.committed_at)
        files += [
            FileEntry(f"{rel}/data", data.size, data.sha256),
            file_entry(dest, f"{rel}/meta.json"),
        ]
        copied.append(stored.ref)
    if missing:
        raise BackupError(_missing_message(missing, root))
    return copied, files


def _missing_message(missing: list[str], root: Path) -> str:
    return (
        f"{len(missing)} referenced artifacts have no content in {root}: "
        f"{', '.join(missing)}. Only artifacts of Executions whose retention expired "
        f"(KV {RETENTION_NAMESPACE}/{EXPIRED_PREFIX}<execution id>) may be omitted"
    )


# Verify --------------------------------------------------------------------------------


def verify_backup(bundle: Path, *, progress: Progress | None = None) -> Manifest:
    """Check a bundle is a complete restore point: manifest present and valid, versions
    not newer than this code, every listed file's size and SHA-256, the snapshot's
    ``integrity_check``, and every artifact the snapshot references either copied or
    listed as omitted. Raises ``BackupError`` (or ``SchemaNewer``/``RecordsNewer``).

    A PostgreSQL bundle's dump is checked by ``pg_restore --list`` (it reads the whole
    table of contents) instead: reading its references would need a server, and
    ``create_pg_backup`` read them in the dumped snapshot itself."""
    say = progress or quiet
    manifest = load_manifest(bundle)
    check_versions(manifest.schema_version, manifest.record_format, f"the bundle {bundle}")
    problems: list[str] = []
    listed = {entry.path: entry for entry in manifest.files}
    database = manifest.database_file
    if database not in listed:
        raise BackupError(f"{bundle}/{MANIFEST} lists no {database}")
    stray = ({DATABASE, DUMP} - {database}) & listed.keys()
    if stray:
        raise BackupError(
            f"{bundle}/{MANIFEST} is invalid: a {manifest.engine} bundle lists {stray.pop()}"
        )
    for number, entry in enumerate(manifest.files, 1):
        path = bundle_path(bundle, entry.path)
        say(f"verify {number}/{len(manifest.files)}: {entry.path}")
        try:
            found = digest(path)
        except FileNotFoundError:
            problems.append(f"{entry.path} is missing")
            continue
        except OSError as exc:
            problems.append(f"{entry.path} is unreadable: {exc}")
            continue
        if (found.size, found.sha256) != (entry.size, entry.sha256):
            problems.append(
                f"{entry.path} has {found.size} bytes sha256 {found.sha256}, the manifest "
                f"says {entry.size} bytes sha256 {entry.sha256}"
            )
    if problems:
        raise BackupError(f"{bundle} failed verification: " + "; ".join(problems))
    if manifest.engine == POSTGRESQL:
        _check_dump(bundle / DUMP)
        _check_copied(manifest, listed, problems)
        if problems:
            raise BackupError(f"{bundle} failed verification: " + "; ".join(problems))
        return manifest
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
    _check_references(manifest, refs, listed, problems)
    if problems:
        raise BackupError(f"{bundle} failed verification: " + "; ".join(problems))
    return manifest


def _check_references(
    manifest: Manifest,
    refs: SnapshotRefs,
    listed: Mapping[str, FileEntry],
    problems: list[str],
) -> None:
    copied = {ref.id: ref for ref in manifest.artifacts}
    omitted = {o.ref.id for o in manifest.omitted}
    for artifact_id in sorted(refs.required.keys() - copied.keys()):
        problems.append(f"referenced artifact {artifact_id} is neither copied nor omitted")
    for artifact_id in sorted(refs.omitted.keys() - omitted):
        problems.append(f"artifact {artifact_id} of an expired Execution is not listed")
    for artifact_id in sorted(omitted - refs.omitted.keys()):
        problems.append(f"artifact {artifact_id} is omitted but its retention did not expire")
    _check_copied(manifest, listed, problems)


def _check_copied(manifest: Manifest, listed: Mapping[str, FileEntry], problems: list[str]) -> None:
    for ref in manifest.artifacts:
        data = listed.get(f"{artifact_path(ref.id)}/data")
        if data is None or f"{artifact_path(ref.id)}/meta.json" not in listed:
            problems.append(f"artifact {ref.id} has no data or meta.json in the bundle")
        elif (data.size, data.sha256) != (ref.size, ref.sha256):
            problems.append(f"artifact {ref.id}'s data does not match its reference")


# The tables whose data a Conduit dump must hold.
_DUMPED_TABLES = ("conduit_meta", "conduit_execution", "conduit_kv", "conduit_work")


def _check_dump(dump: Path) -> None:
    """``dump`` is a readable pg_dump archive holding the coordination tables' data."""
    from .pg import pg_dump_contents

    try:
        contents = pg_dump_contents(dump)
    except Unavailable as exc:
        raise BackupError(f"{dump} is not a readable PostgreSQL dump: {exc}") from exc
    data = [line.split() for line in contents.splitlines() if " TABLE DATA " in line]
    missing = [t for t in _DUMPED_TABLES if not any(t in words for words in data)]
    if missing:
        raise BackupError(f"{dump} holds no data of {', '.join(missing)}")


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
    if data_dir.exists() and (not data_dir.is_dir() or any(data_dir.iterdir())):
        raise BackupError(
            f"{data_dir} is not empty: restore only into an absent or empty data "
            "directory of a stopped console"
        )
    manifest = verify_backup(bundle, progress=say)
    if manifest.engine != SQLITE:
        raise BackupError(f"{bundle} is a {manifest.engine} bundle, not a SQLite one")
    created = not data_dir.exists()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        _restore_artifacts(bundle, manifest, data_dir, say)
        (database_entry,) = (e for e in manifest.files if e.path == DATABASE)
        pending = data_dir / f"{RESTORED_DATABASE}.restoring"
        _restore_file(bundle, database_entry, pending, say)
        fsync_tree(data_dir)
        fenced = fence(pending)
        _settle(pending)
        os.rename(pending, data_dir / RESTORED_DATABASE)
        fsync_dir(data_dir)
    except BaseException:
        empty_dir(data_dir, remove=created)
        raise
    return manifest, fenced


def _restore_artifacts(bundle: Path, manifest: Manifest, data_dir: Path, say: Progress) -> None:
    FileArtifactStore(data_dir / ARTIFACTS)  # the store's layout: shards, tmp/
    entries = [e for e in manifest.files if e.path != manifest.database_file]
    for number, entry in enumerate(entries, 1):
        target = data_dir / PurePosixPath(entry.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        say(f"restore {number}/{len(entries)}: {entry.path}")
        _restore_file(bundle, entry, target, say)


def restore_pg_backup(
    bundle: Path,
    data_dir: Path,
    target: PostgresUrl,
    *,
    fence: Callable[[], list[str]],
    progress: Progress | None = None,
) -> tuple[Manifest, list[str]]:
    """Restore a verified PostgreSQL bundle: the dump into the empty database
    ``target``, the artifacts into ``data_dir/artifacts`` (``data_dir`` absent or
    empty). ``fence()`` must then fence every lease of the restored database (in
    ``target``) and return the attempts fenced. Returns the manifest and those.

    The dump is restored in one transaction, so a failed ``pg_restore`` leaves
    ``target`` as it was; on any failure ``data_dir`` is left empty (or absent). A
    failure of ``fence`` after the restore committed leaves ``target`` holding the
    restored but unfenced state: the error says so, and the database must be dropped
    (or emptied) before restoring again."""
    from .pg import pg_restore_dump, pg_tables_with_rows

    say = progress or quiet
    if data_dir.exists() and (not data_dir.is_dir() or any(data_dir.iterdir())):
        raise BackupError(
            f"{data_dir} is not empty: restore only into an absent or empty data "
            "directory of a stopped console"
        )
    manifest = verify_backup(bundle, progress=say)
    if manifest.engine != POSTGRESQL:
        raise BackupError(f"{bundle} is a {manifest.engine} bundle, not a PostgreSQL one")
    try:
        filled = pg_tables_with_rows(target)
    except Unavailable as exc:
        raise BackupError(f"cannot inspect the target database: {exc}") from exc
    if filled:
        raise BackupError(
            f"the target database {target.name!r} is not empty ({', '.join(filled)} "
            "hold rows): restore only into an empty database (CREATE DATABASE a new one)"
        )
    created = not data_dir.exists()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        _restore_artifacts(bundle, manifest, data_dir, say)
        fsync_tree(data_dir)
        say(f"restore database: pg_restore into {target.name!r}")
        try:
            pg_restore_dump(bundle / DUMP, target=target)
        except Unavailable as exc:
            raise BackupError(f"restoring the database failed: {exc}") from exc
        try:
            fenced = fence()
        except BaseException as exc:
            raise BackupError(
                f"the database was restored into {target.name!r} but its leases were not "
                f"fenced ({exc}): do not start anything on it; drop or empty it and "
                "restore again"
            ) from exc
    except BaseException:
        empty_dir(data_dir, remove=created)
        raise
    return manifest, fenced


def _restore_file(bundle: Path, entry: FileEntry, target: Path, say: Progress) -> None:
    with bundle_path(bundle, entry.path).open("rb") as stream:
        copy = copy_stream(stream, target, say, entry.path)
    if (copy.size, copy.sha256) != (entry.size, entry.sha256):
        raise BackupError(f"{entry.path} changed while it was restored")


def _settle(database: Path) -> None:
    """Fold the fencing transaction's WAL into the file and drop the WAL, so renaming
    the one file carries every committed change."""
    with closing(sqlite3.connect(database, isolation_level=None)) as db:
        (mode,) = db.execute("PRAGMA journal_mode=DELETE").fetchone()
    wal = database.with_name(database.name + "-wal")
    if mode != "delete" or wal.exists():
        raise BackupError(f"cannot checkpoint {database} (journal mode {mode})")
    fsync_file(database)

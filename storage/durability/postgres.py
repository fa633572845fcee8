"""Backup, verify and restore on PostgreSQL: a dump in one snapshot, and its restore.

The bundle holds ``db.dump`` in place of ``db.sqlite3``: a ``pg_dump`` custom-format
file taken by ``pg_dump_with``, which reads the versions and artifact references in
the very snapshot it dumps (exported with ``pg_export_snapshot``), so the dump and the
artifact set agree even while writers commit. The artifact copy, its checks and the
manifest (engine ``postgresql``, the server version under ``source``) are the ones
every engine shares (``transfer``). Verifying checks every file and that ``pg_restore
--list`` reads the dump. Restoring needs an empty target database (no ``conduit_*``
table with a row), restores the dump in one transaction (``pg_restore
--single-transaction``), copies the artifacts into an absent or empty data directory,
then has the caller fence every restored lease.

The password reaches the tools through their environment (``PGPASSWORD``), never their
command line, which any local user can read in the process table. The tools are found
in the ``STORAGE_PG_BINDIR`` setting, else the newest installed version.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from django.db import connections, transaction

from ..api import Tx
from ..clock import wall_clock
from ..errors import Unavailable
from ..files import fsync_dir, fsync_file, fsync_tree
from ..pg_url import LIBPQ_ENV, PostgresUrl, parse_postgres_url, pg_connect, settings_target
from ..tx import TxScope
from .bundle import (
    ARTIFACTS,
    DUMP,
    EXPIRED_PREFIX,
    POSTGRESQL,
    RETENTION_NAMESPACE,
    BackupError,
    Manifest,
    Progress,
    SnapshotRefs,
    check_versions,
    quiet,
    snapshot_refs,
)
from .children import child_environment
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
    verified,
)
from .verify import check_copied, fail_on, verify_files

# A dump of a large database may take a while; a stuck server should not hang a backup
# forever.
TIMEOUT_SECONDS = 6 * 3600

# The tables whose data a Conduit dump must hold.
_DUMPED_TABLES = ("conduit_meta", "conduit_execution", "conduit_kv", "conduit_work")


# The client tools ----------------------------------------------------------------------


def pg_tool(name: str) -> str:
    """The path of a PostgreSQL client tool (pg_dump, pg_restore).

    The newest Debian versioned directory first: pg_dump refuses a server newer than
    itself, and Debian's /usr/bin wrapper may pick an older installed version. The
    ``STORAGE_PG_BINDIR`` setting overrides both.
    """
    from django.conf import settings

    override = getattr(settings, "STORAGE_PG_BINDIR", "")
    if override:
        candidates = [Path(override) / name]
    else:
        versioned = Path("/usr/lib/postgresql").glob(f"*/bin/{name}")
        candidates = sorted(versioned, key=lambda p: _major(p.parent.parent.name), reverse=True)
        on_path = shutil.which(name)
        candidates += [Path(on_path)] if on_path else []
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return str(candidate)
    where = f"in STORAGE_PG_BINDIR={override}" if override else "(install postgresql-client)"
    raise Unavailable(f"{name} not found {where}")


def _major(version: str) -> int:
    return int(version) if version.isdigit() else -1


def _env_for(target: PostgresUrl) -> dict[str, str]:
    """The environment that points libpq tools at ``target``; no inherited PG*
    variable (a stray PGSERVICE or PGHOST) can redirect a tool."""
    fields = {
        "PGDATABASE": target.name,
        "PGUSER": target.user,
        "PGPASSWORD": target.password,
        "PGHOST": target.host,
        "PGPORT": target.port,
    }
    options = target.options
    fields |= {var: str(options[opt]) for opt, var in LIBPQ_ENV.items() if opt in options}
    return child_environment({k: v for k, v in fields.items() if v}, drop_prefix="PG")


def _run(argv: list[str], env: dict[str, str], what: str) -> str:
    try:
        result = subprocess.run(  # noqa: S603 - fixed argv, no shell
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"{what} failed: {exc}") from exc
    if result.returncode != 0:
        raise Unavailable(f"{what} failed (exit {result.returncode}): {result.stderr.strip()}")
    return result.stdout


def pg_tables_with_rows(target: PostgresUrl, prefix: str = "conduit_") -> list[str]:
    """The tables named ``prefix*`` of ``target`` (any schema but the system ones)
    holding at least one row, as ``schema.table``."""
    from psycopg import sql

    with pg_connect(target) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_type = 'BASE TABLE' AND starts_with(table_name, %s)"
            " AND table_schema NOT IN ('pg_catalog', 'information_schema')"
            " ORDER BY 1, 2",
            [prefix],
        ).fetchall()
        found = []
        for schema, table in tables:
            query = sql.SQL("SELECT EXISTS (SELECT 1 FROM {}.{})").format(
                sql.Identifier(schema), sql.Identifier(table)
            )
            row = conn.execute(query).fetchone()
            if row is not None and row[0]:
                found.append(f"{schema}.{table}")
    return found


def pg_dump_contents(src: Path) -> str:
    """The table of contents of a ``pg_dump`` custom-format file (``pg_restore
    --list``): reading it checks the file is a readable dump. Needs no server."""
    env = child_environment({}, drop_prefix="PG")
    return _run([pg_tool("pg_restore"), "--list", str(src)], env, "pg_restore --list")


# Dump and restore ------------------------------------------------------------------------


def pg_dump_snapshot(dest: Path, *, using: str = "view") -> None:
    """Dump the whole database behind ``using`` to ``dest`` (pg_dump custom format),
    taken in one snapshot; see ``pg_dump_with``."""
    pg_dump_with(dest, lambda tx: None, using=using)


def pg_dump_with[T](dest: Path, read: Callable[[Tx], T], *, using: str = "view") -> T:
    """Dump the database to ``dest`` and run ``read`` in the very snapshot dumped.

    One snapshot: a REPEATABLE READ READ ONLY transaction on ``using`` (the View alias)
    exports its snapshot (``pg_export_snapshot``), ``read`` runs on a read-only Tx in
    it (a backup reads the artifact references there), and ``pg_dump --snapshot``
    dumps exactly that state while the transaction stays open. The dump is the state
    after some commit and before the next, even while writers go on: storage commits
    are atomic, so it holds whole transactions only. No writers' lock is taken, so a
    backup never stalls the runtime (only schema changes wait for it).

    ``dest`` appears complete or not at all: the dump goes to a temporary file beside
    it, is fsynced, then renamed into place. Raises ``Unavailable`` when pg_dump is
    missing or fails, and whatever ``read`` raises (then nothing is written).
    """
    # Imported here: the ORM backend needs Django's apps loaded. The read-only Tx on
    # the exported snapshot is built here until storage/orm/ offers it as a View of
    # its own (storage/orm/snapshot.py); either way durability imports the ORM
    # backend downward, never the reverse.
    from ..orm.errors import translate_errors
    from ..orm.rows import OrmTx

    dest = Path(dest)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    env = _env_for(settings_target(using))
    try:
        with translate_errors(), transaction.atomic(using=using):
            with connections[using].cursor() as cursor:
                # The first statement: it takes the transaction's snapshot and names it.
                cursor.execute("SELECT pg_export_snapshot()")
                snapshot = str(cursor.fetchone()[0])
            tx = OrmTx(wall_clock(), alias=using, read_only=True)
            try:
                with TxScope():
                    result = read(tx)
            finally:
                tx.close()
            argv = [pg_tool("pg_dump"), "--format=custom", "--no-password"]
            _run([*argv, f"--snapshot={snapshot}", f"--file={tmp}"], env, "pg_dump")
        fsync_file(tmp)
        os.replace(tmp, dest)
        fsync_dir(dest.parent)
        return result
    finally:
        tmp.unlink(missing_ok=True)


def pg_restore_dump(
    src: Path,
    *,
    using: str = "default",
    dbname: str | None = None,
    target: PostgresUrl | None = None,
) -> None:
    """Restore a ``pg_dump_snapshot`` file into the database behind ``using`` (or the
    database ``dbname`` on the same server, or ``target``, any database a URL names),
    replacing the objects it contains.

    One transaction (``--single-transaction``): a failed restore leaves the database
    as it was. Ownership is not restored (``--no-owner``): the objects belong to the
    connecting role, which may differ from the one that took the dump. The caller
    fences leases afterwards, as on SQLite.
    """
    target = target if target is not None else settings_target(using, dbname)
    argv = [
        pg_tool("pg_restore"),
        "--clean",
        "--if-exists",
        "--no-owner",
        "--no-privileges",
        "--single-transaction",
        "--exit-on-error",
        "--no-password",
        f"--dbname={target.name}",
        str(src),
    ]
    _run(argv, _env_for(target), "pg_restore")


# Create ----------------------------------------------------------------------------------


def read_pg_snapshot(using: str = "view") -> tuple[SnapshotRefs, str]:
    """Versions, artifact references and the server version, read on ``using`` in
    its open transaction: run inside ``pg_dump_with`` it reads the dumped snapshot."""
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
    return snapshot_refs(schema, fmt, expired, records), server


def create_pg_backup(
    artifact_root: Path,
    dest: Path,
    *,
    using: str = "view",
    progress: Progress | None = None,
    build: Mapping[str, str] | None = None,
    routed_root: Path | None = None,
) -> Manifest:
    """Write a complete bundle of the PostgreSQL database behind ``using``, the
    committed artifacts it references and the routed-run state under ``routed_root``
    into ``dest`` (absent or empty): one
    ``pg_dump_with`` writes ``db.dump`` and reads the references in the same snapshot;
    then the shared artifact copy and manifest. On any failure nothing is left in
    ``dest``."""
    say = progress or quiet

    def read(_tx: Tx) -> tuple[SnapshotRefs, str]:
        say("database snapshot: exported; reading the artifact references in it")
        return read_pg_snapshot(using)

    with into_empty(dest, CREATE_REFUSAL):
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
        return complete_bundle(
            dest,
            DUMP,
            refs,
            artifact_root,
            source=source,
            build=build,
            say=say,
            engine=POSTGRESQL,
            routed_root=routed_root,
        )


# Verify ----------------------------------------------------------------------------------


def verify(bundle: Path, say: Progress) -> Manifest:
    """``verify_files``, then the dump checked by ``pg_restore --list`` (it reads the
    whole table of contents) and the copied artifacts against the manifest. Reading the
    dump's references would need a server, and ``create_pg_backup`` read them in the
    dumped snapshot itself."""
    manifest, listed = verify_files(bundle, say)
    dump = bundle / DUMP
    try:
        contents = pg_dump_contents(dump)
    except Unavailable as exc:
        raise BackupError(f"{dump} is not a readable PostgreSQL dump: {exc}") from exc
    data = [line.split() for line in contents.splitlines() if " TABLE DATA " in line]
    missing = [t for t in _DUMPED_TABLES if not any(t in words for words in data)]
    if missing:
        raise BackupError(f"{dump} holds no data of {', '.join(missing)}")
    problems: list[str] = []
    check_copied(manifest, listed, problems)
    fail_on(bundle, problems)
    return manifest


# Restore ---------------------------------------------------------------------------------


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
    say = progress or quiet
    with into_empty(data_dir, RESTORE_REFUSAL):
        manifest = verified(bundle, POSTGRESQL, verify, say)
        try:
            filled = pg_tables_with_rows(target)
        except Unavailable as exc:
            raise BackupError(f"cannot inspect the target database: {exc}") from exc
        if filled:
            raise BackupError(
                f"the target database {target.name!r} is not empty ({', '.join(filled)} "
                "hold rows): restore only into an empty database (CREATE DATABASE a new one)"
            )
        restore_artifacts(bundle, manifest, data_dir, say)
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
    return manifest, fenced


# The engine ------------------------------------------------------------------------------


def _same_database(database: str, own: str) -> bool:
    return database == own


class PostgresEngine:
    """The PostgreSQL engine for the backup command: the configured database, and a
    restore into the empty database a ``--database-url`` names."""

    name = POSTGRESQL

    def create(self, dest: Path, *, progress: Progress) -> Manifest:
        from django.conf import settings

        return create_pg_backup(
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
        if not database_url:
            raise BackupError(
                f"{bundle} is a PostgreSQL bundle: name the empty database to restore "
                "into with --database-url URL"
            )
        target = parse_postgres_url(database_url, "--database-url")
        own = connections["default"]
        if own.vendor == "postgresql" and (
            own.settings_dict["NAME"],
            own.settings_dict["HOST"] or "",
            str(own.settings_dict["PORT"] or ""),
        ) == (target.name, target.host, target.port):
            raise BackupError(
                f"--database-url names this console's own database {target.name!r}: "
                "restore into another, empty database"
            )
        refuse_own_data_dir(data_dir)
        manifest, fenced = restore_pg_backup(
            bundle,
            data_dir,
            target,
            fence=lambda: fence_in_child(database_url, target.name),
            progress=progress,
        )
        return Restored(
            manifest,
            fenced,
            into=f"database {target.name!r} and {data_dir}",
            next_step=(
                f"Start the console on it with its database URL naming {target.name!r} and "
                f"its data directory set to {data_dir} (artifacts {ARTIFACTS}/). {NEVER_TWO}"
            ),
        )

    def fence(self, database: str) -> str:
        own = str(connections["default"].settings_dict["NAME"])
        return fence_here(database, own, _same_database)

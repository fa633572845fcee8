"""``manage.py backup create DEST | verify DEST | restore DEST DATA_DIR`` (BK-07).

``create`` snapshots the configured SQLite database with the online backup API while
the console and runtimes keep running, copies and verifies the artifacts it references
from ``ARTIFACT_DIR``, and publishes the manifest last. ``verify`` checks a bundle.
``restore`` verifies a bundle and restores it into an absent or empty data directory,
fencing every restored lease before the database gets its final name.

The fencing step runs in a child ``manage.py backup fence-leases FILE`` whose settings
point at the restored file (``CONDUIT_SQLITE_PATH``, ``CONDUIT_DATA_DIR``): Django's
aliases in this process name the configured database, not the restored one, and a
child opens exactly the restored file through the ordinary ``OrmStore`` (version
checks included) without touching this process's connections. ``fence-leases`` is
internal: it refuses to run unless FILE is the database its settings name.

On PostgreSQL (``DATABASE_URL`` set) ``create`` takes one ``pg_dump`` in the snapshot
it reads the artifact references in (``storage.backup.create_pg_backup``); ``restore``
of such a bundle needs ``--database-url URL`` naming an empty database, restores the
dump there and the artifacts into DATA_DIR, then fences the leases through the same
child, ``fence-leases NAME`` with ``DATABASE_URL`` set to URL: the child's settings
then name exactly the restored database, as they name the restored file on SQLite, and
this process's aliases stay untouched. A SQLite bundle with ``--database-url``, or a
PostgreSQL bundle without it, is refused.

Progress goes to stderr; results to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from conduit.env import PostgresUrl, parse_postgres_url
from storage import Guard, StorageError
from storage.backup import (
    ARTIFACTS,
    MANIFEST,
    RESTORED_DATABASE,
    BackupError,
    Manifest,
    create_backup,
    create_pg_backup,
    fence_leases,
    load_manifest,
    restore_backup,
    restore_pg_backup,
    verify_backup,
)
from storage.bundle import POSTGRESQL

_FENCE_TIMEOUT = 300  # seconds; one transaction over the live attempts


def configured_database() -> Path:
    """The SQLite file of the ``default`` alias; other engines are refused."""
    connection = connections["default"]
    if connection.vendor != "sqlite":
        raise CommandError(
            f"backup supports the SQLite backend only (this database is {connection.vendor})"
        )
    return Path(connection.settings_dict["NAME"]).resolve()


def fence_in_child(database: Path) -> list[str]:
    """Fence every lease of the restored ``database`` from a child process whose
    settings name that file; returns the fenced attempts."""
    data_dir = database.parent
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(
        CONDUIT_SQLITE_PATH=str(database),
        # Under the test settings the database path is this one.
        CONDUIT_TEST_SQLITE_PATH=str(database),
    )
    return _fence_child(env, data_dir, str(database))


def fence_pg_in_child(url: str, target: PostgresUrl, data_dir: Path) -> list[str]:
    """Fence every lease of the restored PostgreSQL database ``target`` (``url``) from
    a child process whose settings name that database; returns the fenced attempts."""
    env = dict(os.environ)
    env.update(
        DATABASE_URL=url,  # in the environment, never on the command line: a password
        # Under the test settings the database name is this one.
        CONDUIT_TEST_DATABASE=target.name,
        # One connection suffices; no pool kept open by a short-lived child.
        CONDUIT_DB_POOL_SIZE="0",
    )
    return _fence_child(env, data_dir, target.name)


def _fence_child(env: dict[str, str], data_dir: Path, database: str) -> list[str]:
    env.update(
        DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "conduit.settings"),
        CONDUIT_DATA_DIR=str(data_dir),
        CONDUIT_ARTIFACT_DIR=str(data_dir / ARTIFACTS),
    )
    # Without a configured key the settings would write a secret_key file into the
    # restored folder; the child serves nothing, so a throwaway key will do.
    env.setdefault("CONDUIT_SECRET_KEY", secrets.token_urlsafe(32))
    manage = Path(settings.BASE_DIR) / "manage.py"
    # Fixed argv of our own interpreter and manage.py: no shell, no user input as code.
    done = subprocess.run(  # noqa: S603
        [sys.executable, str(manage), "backup", "--skip-checks", "fence-leases", database],
        env=env,
        capture_output=True,
        text=True,
        timeout=_FENCE_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise BackupError(
            f"fencing the restored leases failed (exit {done.returncode}): "
            f"{done.stderr.strip() or done.stdout.strip()}"
        )
    fenced: list[str] = json.loads(done.stdout.strip().splitlines()[-1])["fenced"]
    return fenced


class Command(BaseCommand):
    help = "Create, verify or restore a backup bundle (database snapshot and artifacts)."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        create = actions.add_parser("create", help="write a bundle into DEST (absent or empty)")
        create.add_argument("dest", type=Path)
        verify = actions.add_parser("verify", help="check a bundle is a complete restore point")
        verify.add_argument("dest", type=Path)
        restore = actions.add_parser(
            "restore", help="restore a bundle into DATA_DIR (absent or empty)"
        )
        restore.add_argument("dest", type=Path)
        restore.add_argument("data_dir", type=Path)
        restore.add_argument(
            "--database-url",
            metavar="URL",
            help="PostgreSQL bundles only (and required for them): the empty database "
            "to restore into, as postgres://user:pass@host:port/db",
        )
        fence = actions.add_parser(
            "fence-leases", help="internal: fence every lease of a just-restored database"
        )
        fence.add_argument("database", help="the database file (SQLite) or name (PostgreSQL)")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            if action == "create":
                self.create(options["dest"])
            elif action == "verify":
                manifest = verify_backup(options["dest"], progress=self.progress)
                self.stdout.write(f"{options['dest']} is a complete backup: {summary(manifest)}")
            elif action == "restore":
                self.restore(options["dest"], options["data_dir"], options["database_url"])
            else:
                self.fence(options["database"])
        except StorageError as exc:
            raise CommandError(str(exc)) from exc
        except OSError as exc:
            raise CommandError(f"backup {action} failed: {exc}") from exc

    def progress(self, line: str) -> None:
        self.stderr.write(line)

    def create(self, dest: Path) -> None:
        if connections["default"].vendor == "postgresql":
            manifest = create_pg_backup(Path(settings.ARTIFACT_DIR), dest, progress=self.progress)
        else:
            manifest = create_backup(
                configured_database(), Path(settings.ARTIFACT_DIR), dest, progress=self.progress
            )
        self.stdout.write(f"backup written to {dest}: {summary(manifest)}")
        for omitted in manifest.omitted:
            self.stdout.write(
                f"omitted artifact {omitted.ref.id} ({omitted.reason}; "
                f"Executions {', '.join(omitted.executions)})"
            )

    def restore(self, dest: Path, data_dir: Path, database_url: str | None) -> None:
        data_dir = data_dir.resolve()
        engine = load_manifest(dest).engine
        if engine == POSTGRESQL:
            if not database_url:
                raise CommandError(
                    f"{dest} is a PostgreSQL bundle: name the empty database to restore "
                    "into with --database-url URL"
                )
            self.restore_postgres(dest, data_dir, database_url)
            return
        if database_url:
            raise CommandError(
                f"{dest} is a SQLite bundle: it restores into DATA_DIR alone; "
                "--database-url is for PostgreSQL bundles"
            )
        if connections["default"].vendor == "sqlite" and configured_database().parent == data_dir:
            raise CommandError(
                f"{data_dir} holds this console's own database: restore into another, "
                "empty folder of a stopped console"
            )
        manifest, fenced = restore_backup(
            dest, data_dir, fence=fence_in_child, progress=self.progress
        )
        self.stdout.write(
            f"restored {dest} into {data_dir}: {summary(manifest)}; "
            f"{len(fenced)} running leases fenced" + (f" ({', '.join(fenced)})" if fenced else "")
        )
        self.stdout.write(
            f"Start the console on it with CONDUIT_DATA_DIR={data_dir} (database "
            f"{RESTORED_DATABASE}, artifacts {ARTIFACTS}/) after `manage.py migrate`. "
            "Never run a restored copy alongside the original: two runtimes must never "
            "own the same scope (BK-08). Stop the original first."
        )

    def restore_postgres(self, dest: Path, data_dir: Path, database_url: str) -> None:
        try:
            target = parse_postgres_url(database_url, "--database-url")
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        own = connections["default"].settings_dict
        if connections["default"].vendor == "postgresql" and (
            own["NAME"],
            own["HOST"] or "",
            str(own["PORT"] or ""),
        ) == (target.name, target.host, target.port):
            raise CommandError(
                f"--database-url names this console's own database {target.name!r}: "
                "restore into another, empty database"
            )
        if connections["default"].vendor == "sqlite" and configured_database().parent == data_dir:
            raise CommandError(
                f"{data_dir} holds this console's own database: restore into another, "
                "empty folder of a stopped console"
            )
        manifest, fenced = restore_pg_backup(
            dest,
            data_dir,
            target,
            fence=lambda: fence_pg_in_child(database_url, target, data_dir),
            progress=self.progress,
        )
        self.stdout.write(
            f"restored {dest} into database {target.name!r} and {data_dir}: "
            f"{summary(manifest)}; {len(fenced)} running leases fenced"
            + (f" ({', '.join(fenced)})" if fenced else "")
        )
        self.stdout.write(
            f"Start the console on it with DATABASE_URL naming {target.name!r} and "
            f"CONDUIT_DATA_DIR={data_dir} (artifacts {ARTIFACTS}/). Never run a restored "
            "copy alongside the original: two runtimes must never own the same scope "
            "(BK-08). Stop the original first."
        )

    def fence(self, database: str) -> None:
        connection = connections["default"]
        if connection.vendor == "postgresql":
            own = connection.settings_dict["NAME"]
            if own != database:
                raise CommandError(
                    f"fence-leases fences {database}, but this process's database is "
                    f"{own}; it is run by `backup restore`"
                )
        elif configured_database() != Path(database).resolve():
            raise CommandError(
                f"fence-leases fences {database}, but this process's database is "
                f"{configured_database()}; it is run by `backup restore`"
            )
        from storage.orm import OrmStore

        store = OrmStore()
        try:
            fenced = store.transact(Guard(), fence_leases)
        finally:
            store.close()
        self.stdout.write(json.dumps({"fenced": fenced}))


def summary(manifest: Manifest) -> str:
    return (
        f"schema {manifest.schema_version}, record format {manifest.record_format}, "
        f"{len(manifest.artifacts)} artifacts, {len(manifest.omitted)} omitted "
        f"(retention expired), {len(manifest.files)} files in {MANIFEST}"
    )

"""``manage.py backup create DEST | verify DEST | restore DEST DATA_DIR`` (BK-07).

``create`` snapshots this process's database (SQLite: the online backup API; PostgreSQL:
one ``pg_dump`` in the snapshot the artifact references are read in) while the console
and runtimes keep running, copies and verifies the artifacts it references from
``ARTIFACT_DIR``, and publishes the manifest last. ``verify`` checks a bundle.
``restore`` verifies a bundle and restores it: a SQLite bundle into an absent or empty
data directory, a PostgreSQL one into the empty database ``--database-url`` names (and
its artifacts into DATA_DIR), fencing every restored lease before anything can start
on it. ``fence-leases`` is internal: the child process a restore fences through
(``storage.durability.fence`` says why a child).

Each action is one call into ``storage.durability``; the engine is looked up by name
(this database's vendor, or the bundle's engine). Progress goes to stderr; results to
stdout.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from storage import StorageError
from storage.durability import (
    MANIFEST,
    Engine,
    Manifest,
    engine_for,
    load_manifest,
    verify_backup,
)


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
        actions: dict[str, Callable[..., None]] = {
            "create": self.create,
            "verify": self.verify,
            "restore": self.restore,
            "fence-leases": self.fence_leases,
        }
        try:
            actions[action](**options)
        except StorageError as exc:
            raise CommandError(str(exc)) from exc
        except OSError as exc:
            raise CommandError(f"backup {action} failed: {exc}") from exc

    def progress(self, line: str) -> None:
        self.stderr.write(line)

    def create(self, dest: Path, **_: Any) -> None:
        manifest = this_engine().create(dest, progress=self.progress)
        self.stdout.write(f"backup written to {dest}: {summary(manifest)}")
        for omitted in manifest.omitted:
            self.stdout.write(
                f"omitted artifact {omitted.ref.id} ({omitted.reason}; "
                f"Executions {', '.join(omitted.executions)})"
            )

    def verify(self, dest: Path, **_: Any) -> None:
        manifest = verify_backup(dest, progress=self.progress)
        self.stdout.write(f"{dest} is a complete backup: {summary(manifest)}")

    def restore(self, dest: Path, data_dir: Path, database_url: str | None, **_: Any) -> None:
        engine = engine_for(load_manifest(dest).engine)
        done = engine.restore(dest, data_dir.resolve(), database_url, progress=self.progress)
        fenced = f" ({', '.join(done.fenced)})" if done.fenced else ""
        self.stdout.write(
            f"restored {dest} into {done.into}: {summary(done.manifest)}; "
            f"{len(done.fenced)} running leases fenced{fenced}"
        )
        self.stdout.write(done.next_step)

    def fence_leases(self, database: str, **_: Any) -> None:
        self.stdout.write(this_engine().fence(database))


def this_engine() -> Engine:
    """The engine of this process's ``default`` database."""
    return engine_for(connections["default"].vendor)


def summary(manifest: Manifest) -> str:
    return (
        f"schema {manifest.schema_version}, record format {manifest.record_format}, "
        f"{len(manifest.artifacts)} artifacts, {len(manifest.omitted)} omitted "
        f"(retention expired), {len(manifest.files)} files in {MANIFEST}"
    )

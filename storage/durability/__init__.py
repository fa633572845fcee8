"""Backup, verify and restore: outside the transaction path.

Floors, bottom to top: ``children`` (the one environment hand-off to a child process),
``bundle`` (what a bundle is: manifest, snapshot references, file copies), ``verify``
(the checks every bundle passes), ``fence`` (fencing a restored database; retention
expiry), ``routed`` (the routed-run state's copy: workspaces, journals, keys, kept
private), ``transfer`` (what every engine shares: the one empty-target preamble, the
artifact copy, the manifest last), then one module per engine, ``sqlite`` and
``postgres``, each ending in its ``Engine``. This face adds the lookup by engine name
(``engine_for``), so ``manage.py backup`` has no branch per engine.
"""

from __future__ import annotations

from pathlib import Path

from .bundle import (
    ARTIFACTS,
    DATABASE,
    DUMP,
    EXPIRED_PREFIX,
    MANIFEST,
    POSTGRESQL,
    RETENTION_NAMESPACE,
    ROUTED,
    SQLITE,
    BackupError,
    Manifest,
    Progress,
    SnapshotRefs,
    check_versions,
    load_manifest,
    quiet,
)
from .fence import fence_leases, mark_retention_expired
from .postgres import PostgresEngine, create_pg_backup, restore_pg_backup
from .sqlite import RESTORED_DATABASE, SqliteEngine, create_backup, read_snapshot, restore_backup
from .transfer import Engine, Restored

__all__ = [
    "ARTIFACTS",
    "DATABASE",
    "DUMP",
    "EXPIRED_PREFIX",
    "MANIFEST",
    "POSTGRESQL",
    "RESTORED_DATABASE",
    "RETENTION_NAMESPACE",
    "ROUTED",
    "SQLITE",
    "BackupError",
    "Engine",
    "Manifest",
    "Restored",
    "SnapshotRefs",
    "check_versions",
    "create_backup",
    "create_pg_backup",
    "engine_for",
    "fence_leases",
    "load_manifest",
    "mark_retention_expired",
    "read_snapshot",
    "restore_backup",
    "restore_pg_backup",
    "verify_backup",
]

# By Django vendor name, which is also the manifest's engine name.
_ENGINES: dict[str, Engine] = {SQLITE: SqliteEngine(), POSTGRESQL: PostgresEngine()}


def engine_for(name: str) -> Engine:
    """The engine called ``name`` (``sqlite`` or ``postgresql``); ``BackupError`` for
    any other."""
    try:
        return _ENGINES[name]
    except KeyError:
        raise BackupError(f"backup does not support the {name} database engine") from None


def verify_backup(bundle: Path, *, progress: Progress | None = None) -> Manifest:
    """Check a bundle is a complete restore point: manifest present and valid, versions
    not newer than this code, every listed file's size and SHA-256, then its engine's
    check of the database file and the artifacts it references. Raises
    ``BackupError`` (or ``SchemaNewer``/``RecordsNewer``)."""
    return engine_for(load_manifest(bundle).engine).verify(bundle, progress or quiet)

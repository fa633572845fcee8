"""What every engine's create and restore share around its database file.

- ``into_empty``: the one "the target must be empty" preamble. A bundle is written,
  and a restore goes, only into an absent or empty directory, which is emptied again
  (removed if it was made here) when anything fails, so a failed run leaves nothing
  that could be mistaken for a restore point or a restored data directory.
- ``complete_bundle``: after the engine's snapshot, copy and check every referenced
  artifact, fsync the tree, publish ``manifest.json`` last.
- ``verified``: a restore's first step, the bundle of the expected engine, verified.
- ``restore_artifacts``: the artifact copies into ``<data dir>/artifacts`` as the file
  artifact store lays them out, and the routed-run state into ``<data dir>/routed``
  (private), each checked against the manifest.
- ``Engine``: what each engine module offers the backup command, and ``Restored``,
  what a restore reports.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from ..artifacts import ArtifactMissing, FileArtifactStore, write_meta
from ..errors import ArtifactError
from ..files import fsync_tree, publish
from ..records import ArtifactRef
from .bundle import (
    ARTIFACTS,
    ENGINE_LABELS,
    EXPIRED_PREFIX,
    MANIFEST,
    RETENTION_NAMESPACE,
    BackupError,
    FileEntry,
    Manifest,
    OmittedArtifact,
    Progress,
    SnapshotRefs,
    artifact_path,
    build_metadata,
    bundle_path,
    copy_stream,
    empty_dir,
    file_entry,
    load_manifest,
)
from .routed import PRIVATE_FILE, copy_routed_state, is_routed, private_dirs

CREATE_REFUSAL = "exists and is not an empty directory"
RESTORE_REFUSAL = (
    "is not empty: restore only into an absent or empty data directory of a stopped console"
)


@contextmanager
def into_empty(path: Path, refusal: str) -> Iterator[Path]:
    """``path`` made as an empty directory for the block; ``BackupError`` ("<path>
    <refusal>") if it exists and is anything else. When the block raises, what it made
    in ``path`` is removed (and ``path`` itself if it was made here)."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise BackupError(f"{path} {refusal}")
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
        yield path
    except BaseException:
        empty_dir(path, remove=created)
        raise


def verified(
    bundle: Path, engine: str, verify: Callable[[Path, Progress], Manifest], say: Progress
) -> Manifest:
    """The manifest of ``bundle``, refused unless it is an ``engine`` bundle that
    ``verify`` (the engine's own check) passes."""
    found = load_manifest(bundle).engine
    if found != engine:
        raise BackupError(f"{bundle} is a {found} bundle, not a {ENGINE_LABELS[engine]} one")
    return verify(bundle, say)


def complete_bundle(
    dest: Path,
    database_file: str,
    refs: SnapshotRefs,
    artifact_root: Path,
    *,
    source: Mapping[str, str],
    build: Mapping[str, str] | None,
    say: Progress,
    engine: str,
    routed_root: Path | None = None,
) -> Manifest:
    """What every engine's backup does after its snapshot: copy and verify the
    referenced artifacts, copy the routed-run state (``routed_root``: workspaces,
    journals, keys; ``durability.routed``), then publish the manifest last (a bundle
    without one is no restore point)."""
    files = [file_entry(dest, database_file)]
    copied, copied_files = _copy_artifacts(artifact_root, refs.required, dest, say)
    files += copied_files
    files += copy_routed_state(routed_root, dest, say)
    if routed_root is not None:
        source = {**source, "routed": str(routed_root)}
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
        write_meta(dest / rel / "meta.json", stored.ref, stored.committed_at)
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


def restore_artifacts(bundle: Path, manifest: Manifest, data_dir: Path, say: Progress) -> None:
    """Every artifact file of ``bundle`` into ``data_dir/artifacts``, checked."""
    FileArtifactStore(data_dir / ARTIFACTS)  # the store's layout: shards, tmp/
    entries = [e for e in manifest.files if e.path != manifest.database_file]
    for number, entry in enumerate(entries, 1):
        say(f"restore {number}/{len(entries)}: {entry.path}")
        if is_routed(entry.path):  # kept private: 0600 in 0700 directories
            target = private_dirs(data_dir, entry.path)
            restore_file(bundle, entry, target, say)
            os.chmod(target, PRIVATE_FILE)
            continue
        target = data_dir / PurePosixPath(entry.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        restore_file(bundle, entry, target, say)


def restore_file(bundle: Path, entry: FileEntry, target: Path, say: Progress) -> None:
    """Copy one listed file out of ``bundle``; ``BackupError`` if its bytes changed."""
    with bundle_path(bundle, entry.path).open("rb") as stream:
        copy = copy_stream(stream, target, say, entry.path)
    if (copy.size, copy.sha256) != (entry.size, entry.sha256):
        raise BackupError(f"{entry.path} changed while it was restored")


# The engines --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Restored:
    """What a restore did: the bundle's manifest, the attempts fenced, where the data
    went (``into``) and what to do before starting on it (``next_step``)."""

    manifest: Manifest
    fenced: list[str]
    into: str
    next_step: str


class Engine(Protocol):
    """One database engine's backup and restore, looked up by name (the Django vendor
    of the ``default`` alias, or a manifest's ``engine``), so the backup command has no
    branch per engine."""

    name: str

    def create(self, dest: Path, *, progress: Progress) -> Manifest:
        """A bundle of this process's database and artifacts into ``dest``."""
        ...

    def verify(self, bundle: Path, say: Progress) -> Manifest:
        """Check a bundle of this engine is a complete restore point."""
        ...

    def restore(
        self, bundle: Path, data_dir: Path, database_url: str | None, *, progress: Progress
    ) -> Restored:
        """Restore a bundle of this engine (the database into ``database_url`` where the
        engine needs one), fencing every restored lease."""
        ...

    def fence(self, database: str) -> str:
        """The fencing child's side (``fence.fence_here``) for this process's database."""
        ...


def refuse_own_data_dir(data_dir: Path) -> None:
    """Refuse restoring into the folder holding this process's own SQLite database."""
    from django.db import connections

    conn = connections["default"]
    if conn.vendor == "sqlite" and Path(conn.settings_dict["NAME"]).resolve().parent == data_dir:
        raise BackupError(
            f"{data_dir} holds this console's own database: restore into another, "
            "empty folder of a stopped console"
        )


# Printed after every restore: a restored copy must never run beside its original.
NEVER_TWO = (
    "Never run a restored copy alongside the original: two runtimes must never own the "
    "same scope (BK-08). Stop the original first."
)

"""Verifying a bundle: the checks every engine's bundle passes.

``verify_files`` checks the manifest (present, valid, versions not newer than this
code, the database file of its engine listed and no other), every listed file's size
and SHA-256, and the routed-run state's copy (``routed.verify_routed``: private, every
journal verifying under its key). ``check_references`` and ``check_copied`` compare the manifest's
artifacts with what the snapshot references. Each engine's ``verify`` adds its own
check of the database file (``sqlite``: ``integrity_check`` and the references read in
the snapshot; ``postgres``: ``pg_restore --list``); ``storage.durability.verify_backup``
picks the engine from the manifest.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .bundle import (
    DATABASE,
    DUMP,
    MANIFEST,
    BackupError,
    FileEntry,
    Manifest,
    Progress,
    SnapshotRefs,
    artifact_path,
    bundle_path,
    check_versions,
    digest,
    load_manifest,
)
from .routed import verify_routed


def verify_files(bundle: Path, say: Progress) -> tuple[Manifest, dict[str, FileEntry]]:
    """The valid manifest of ``bundle`` and its files by path, every one of which has
    the listed size and SHA-256. Raises ``BackupError`` (or ``SchemaNewer`` /
    ``RecordsNewer``)."""
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
    fail_on(bundle, problems)
    verify_routed(bundle, manifest, problems)
    fail_on(bundle, problems)
    return manifest, listed


def fail_on(bundle: Path, problems: list[str]) -> None:
    """``BackupError`` naming every problem found, if any."""
    if problems:
        raise BackupError(f"{bundle} failed verification: " + "; ".join(problems))


def check_references(
    manifest: Manifest,
    refs: SnapshotRefs,
    listed: Mapping[str, FileEntry],
    problems: list[str],
) -> None:
    """Every artifact the snapshot references is copied or (retention expired)
    omitted, and nothing else is omitted; then ``check_copied``."""
    copied = {ref.id: ref for ref in manifest.artifacts}
    omitted = {o.ref.id for o in manifest.omitted}
    for artifact_id in sorted(refs.required.keys() - copied.keys()):
        problems.append(f"referenced artifact {artifact_id} is neither copied nor omitted")
    for artifact_id in sorted(refs.omitted.keys() - omitted):
        problems.append(f"artifact {artifact_id} of an expired Execution is not listed")
    for artifact_id in sorted(omitted - refs.omitted.keys()):
        problems.append(f"artifact {artifact_id} is omitted but its retention did not expire")
    check_copied(manifest, listed, problems)


def check_copied(manifest: Manifest, listed: Mapping[str, FileEntry], problems: list[str]) -> None:
    """Every copied artifact has its data and meta.json listed, the data matching its
    reference."""
    for ref in manifest.artifacts:
        data = listed.get(f"{artifact_path(ref.id)}/data")
        if data is None or f"{artifact_path(ref.id)}/meta.json" not in listed:
            problems.append(f"artifact {ref.id} has no data or meta.json in the bundle")
        elif (data.size, data.sha256) != (ref.size, ref.sha256):
            problems.append(f"artifact {ref.id}'s data does not match its reference")

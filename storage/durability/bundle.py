"""The backup bundle: its manifest, what its snapshot references, and the file
operations that build and read it.

The engine modules (``sqlite``, ``postgres``) make and restore bundles, ``verify``
checks them; this module says what one is. A bundle is a directory holding
``db.sqlite3`` (the database snapshot; on PostgreSQL ``db.dump``, a ``pg_dump``
custom-format file taken in one snapshot),
``artifacts/objects/<aa>/<id>/{data,meta.json}`` (the artifact store's own layout) and
``manifest.json``, which is written last (temp file, fsync, rename): versions, build
metadata, every file's size and SHA-256, and the artifacts copied and omitted. Paths in
a manifest are relative POSIX paths; one naming anything outside those places makes the
manifest invalid, so verifying or restoring never reads or writes outside the bundle.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import platform
import shutil
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from .. import codec
from ..errors import RecordsNewer, SchemaNewer, StorageError
from ..files import fsync_open
from ..records import RECORD_FORMAT, SCHEMA_VERSION, ArtifactRef, Execution

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
DATABASE = "db.sqlite3"
DUMP = "db.dump"  # the database of a PostgreSQL bundle
SQLITE, POSTGRESQL = "sqlite", "postgresql"
# The database file of each engine's bundle, and the engine's name in messages.
DATABASE_FILES = {SQLITE: DATABASE, POSTGRESQL: DUMP}
ENGINE_LABELS = {SQLITE: "SQLite", POSTGRESQL: "PostgreSQL"}
ARTIFACTS = "artifacts"
ROUTED = "routed"  # the routed-run state directory's copy (``durability.routed``)
OMITTED_REASON = "retention_expired"
# Where the retention policy records an expiry (``fence.mark_retention_expired``).
RETENTION_NAMESPACE = "retention"
EXPIRED_PREFIX = "expired/"

_CHUNK = 1 << 20
_PROGRESS_EVERY = 1.0  # seconds between progress lines of one long copy

Progress = Callable[[str], None]


class BackupError(StorageError):
    """A bundle cannot be made, is not a complete restore point, or cannot be restored."""


# Manifest ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileEntry:
    path: str  # relative to the bundle, POSIX separators
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class OmittedArtifact:
    ref: ArtifactRef
    executions: tuple[str, ...]
    reason: str = OMITTED_REASON


@dataclass(frozen=True, slots=True)
class Manifest:
    schema_version: int
    record_format: int
    created_at_ns: int
    files: tuple[FileEntry, ...]
    artifacts: tuple[ArtifactRef, ...] = ()
    omitted: tuple[OmittedArtifact, ...] = ()
    build: Mapping[str, str] = field(default_factory=dict)
    source: Mapping[str, str] = field(default_factory=dict)
    engine: str = SQLITE  # the database engine the bundle was taken from

    @property
    def database_file(self) -> str:
        """The bundle's database file: ``db.sqlite3`` or ``db.dump``."""
        return DATABASE_FILES[self.engine]

    def to_json(self) -> str:
        doc = {
            "format": BUNDLE_FORMAT,
            "kind": "conduit-backup",
            "created_at": datetime.fromtimestamp(self.created_at_ns / 1e9, UTC).isoformat(),
            **codec.to_jsonable(self),
        }
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _field(doc: Mapping[str, Any], name: str, kind: type[Any]) -> Any:
    value = doc.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{name!r} must be {kind.__name__}, got {value!r}")
    return value


def _ref(doc: Mapping[str, Any]) -> ArtifactRef:
    return ArtifactRef(
        _field(doc, "id", str),
        _field(doc, "size", int),
        _field(doc, "media_type", str),
        _field(doc, "sha256", str),
    )


def parse_manifest(text: str) -> Manifest:
    """A manifest from its JSON text; ``ValueError`` names what is wrong."""
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError("the manifest is not a JSON object")
    if _field(doc, "format", int) != BUNDLE_FORMAT:
        raise ValueError(f"bundle format {doc['format']} is not {BUNDLE_FORMAT}")
    files = tuple(
        FileEntry(_field(f, "path", str), _field(f, "size", int), _field(f, "sha256", str))
        for f in _field(doc, "files", list)
    )
    omitted = tuple(
        OmittedArtifact(
            _ref(_field(o, "ref", dict)),
            tuple(map(str, _field(o, "executions", list))),
            _field(o, "reason", str),
        )
        for o in _field(doc, "omitted", list)
    )
    artifacts = tuple(_ref(a) for a in _field(doc, "artifacts", list))
    # Bundles from before PostgreSQL support carry no engine: they are SQLite.
    engine = _field(doc, "engine", str) if "engine" in doc else SQLITE
    if engine not in DATABASE_FILES:
        raise ValueError(f"unknown database engine {engine!r}")
    for ref in artifacts:
        artifact_path(ref.id)  # a copied artifact's ID names its path: no traversal
    return Manifest(
        schema_version=_field(doc, "schema_version", int),
        record_format=_field(doc, "record_format", int),
        created_at_ns=_field(doc, "created_at_ns", int),
        files=files,
        artifacts=artifacts,
        omitted=omitted,
        build={str(k): str(v) for k, v in _field(doc, "build", dict).items()},
        source={str(k): str(v) for k, v in _field(doc, "source", dict).items()},
        engine=engine,
    )


def load_manifest(bundle: Path) -> Manifest:
    """The bundle's manifest; ``BackupError`` when it is missing, truncated or invalid."""
    path = bundle / MANIFEST
    if not bundle.is_dir():
        raise BackupError(f"{bundle} is not a backup bundle (no such directory)")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BackupError(
            f"{bundle} has no {MANIFEST}: it is not a complete backup (an interrupted "
            "or partial backup is never a restore point)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BackupError(f"{path} is unreadable: {exc}") from exc
    try:
        manifest = parse_manifest(text)
    except (ValueError, AttributeError, TypeError, KeyError) as exc:
        raise BackupError(f"{path} is truncated or invalid: {exc}") from None
    for entry in manifest.files:
        bundle_path(bundle, entry.path)
    return manifest


def build_metadata(distribution: str = "", checkout: Path | None = None) -> dict[str, str]:
    """What built this bundle: the installed ``distribution``'s version, the git commit
    of ``checkout`` when it is one, and the runtimes. Both default to the settings
    ``STORAGE_DISTRIBUTION`` and ``STORAGE_CHECKOUT`` (the project names itself there;
    storage does not know its name)."""
    import django
    from django.conf import settings

    distribution = distribution or getattr(settings, "STORAGE_DISTRIBUTION", "")
    checkout = checkout or getattr(settings, "STORAGE_CHECKOUT", None)
    try:
        version = importlib.metadata.version(distribution) if distribution else "unknown"
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return {
        "package": distribution or "unknown",
        "version": version,
        "git_commit": git_commit(Path(checkout) / ".git") if checkout else "",
        "python": platform.python_version(),
        "django": django.get_version(),
        "sqlite": sqlite3.sqlite_version,
    }


def git_commit(git: Path) -> str:
    """HEAD's commit read from the repository files ("" outside a checkout)."""
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head
        ref = head.removeprefix("ref: ")
        if (git / ref).is_file():
            return (git / ref).read_text().strip()
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(f" {ref}"):
                return line.split(" ", 1)[0]
    except OSError:
        pass
    return ""


def check_versions(schema_version: int, record_format: int, what: str) -> None:
    """Refuse a database newer than this code (SV-02, SV-07), naming both versions."""
    if schema_version > SCHEMA_VERSION:
        raise SchemaNewer(
            f"{what} has schema version {schema_version}, newer than this code's version "
            f"{SCHEMA_VERSION}; use a newer release"
        )
    if record_format > RECORD_FORMAT:
        raise RecordsNewer(
            f"{what} has record format {record_format}, newer than this code's "
            f"{RECORD_FORMAT} (records_newer); use a newer release"
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


def snapshot_refs(schema: int, fmt: int, expired: set[str], executions: list[str]) -> SnapshotRefs:
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


# Files ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Digest:
    size: int
    sha256: str


class Throttle:
    """Progress lines of one long copy: one a second once it has run a second, and
    the line marked ``done``; a short copy says nothing but that."""

    def __init__(self, say: Progress) -> None:
        self._say = say
        self._last = time.monotonic()

    def __call__(self, line: str, *, done: bool = False) -> None:
        now = time.monotonic()
        if done or now - self._last >= _PROGRESS_EVERY:
            self._last = now
            self._say(line)


def quiet(line: str) -> None:
    """The default progress sink: says nothing."""


def artifact_path(artifact_id: str) -> str:
    if len(artifact_id) != 32 or not all(c in "0123456789abcdef" for c in artifact_id):
        raise ValueError(f"{artifact_id!r} is not an artifact ID")
    return f"{ARTIFACTS}/objects/{artifact_id[:2]}/{artifact_id}"


def bundle_path(bundle: Path, rel: str) -> Path:
    """``rel`` inside ``bundle``; a manifest naming anything else is invalid."""
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts or "\\" in rel:
        raise BackupError(f"{bundle}/{MANIFEST} is invalid: it names the path {rel!r}")
    inside = rel.startswith((f"{ARTIFACTS}/objects/", f"{ROUTED}/"))
    if rel not in (DATABASE, DUMP) and not inside:
        raise BackupError(f"{bundle}/{MANIFEST} is invalid: unexpected file {rel!r}")
    return bundle.joinpath(*parts)


def file_entry(root: Path, rel: str) -> FileEntry:
    found = digest(root / rel)
    return FileEntry(rel, found.size, found.sha256)


def digest(path: Path) -> Digest:
    with path.open("rb") as stream:
        sha = hashlib.file_digest(stream, "sha256")
        return Digest(stream.tell(), sha.hexdigest())


def copy_stream(stream: BinaryIO, target: Path, say: Progress, what: str) -> Digest:
    """Copy to a new file while hashing; fsynced before it returns."""
    sha = hashlib.sha256()
    size = 0
    throttle = Throttle(say)
    with target.open("xb") as out:
        while chunk := stream.read(_CHUNK):
            out.write(chunk)
            sha.update(chunk)
            size += len(chunk)
            throttle(f"  {what}: {size} bytes")
        fsync_open(out)
    return Digest(size, sha.hexdigest())


def empty_dir(path: Path, *, remove: bool) -> None:
    """Best-effort cleanup after a failure: remove what was made in ``path``."""
    with contextlib.suppress(OSError):
        if remove:
            shutil.rmtree(path)
            return
        for child in path.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()

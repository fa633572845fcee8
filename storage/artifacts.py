"""File artifact store: immutable content published beside the coordination database.

Artifacts live outside the coordination transaction (spec "Artifacts"): publish first
with ``create(...)``, ``write(...)``, ``commit()``, then attach the returned
``ArtifactRef`` to an Execution in a transaction. Content whose attachment never
happens is an orphan that ``collect_garbage`` removes by age.

Layout under ``root`` (one filesystem; renames never cross it)::

    objects/<aa>/<id>/data       committed bytes (<aa> = first two hex digits of <id>)
    objects/<aa>/<id>/meta.json  media_type, size, sha256, committed_at (ns)
    tmp/<id>/                    a writer in progress: data, then meta.json at commit
    tmp/<id>.<x>.deleted         an artifact being deleted (already unpublished)
    gc.lock                      writers hold it shared while creating; GC exclusively

The commit point is one ``rename`` of the whole directory ``tmp/<id>`` to
``objects/<aa>/<id>``: data and metadata become visible together or not at all, so
nothing ``open``-able ever lacks its metadata. Deletion is the same rename in reverse
(into ``tmp/``), so an artifact is never half deleted either. Open writers hold an
exclusive ``flock`` on their ``data`` file; ``collect_garbage`` skips every temp entry
it cannot lock, which holds across processes and ends when the writer's process dies.

Durability guarantee
--------------------
``commit()`` returns only after the data file, the metadata file and the temp
directory are fsynced, the directory is renamed into its shard, and the shard
directory is fsynced; the shard directories, ``objects/``, ``tmp/`` and the root were
created and fsynced into their parents when the store was opened. So **after
``commit()`` returns, the bytes and their metadata survive a process crash, a kernel
crash and power loss** on a local filesystem that honours fsync and journals renames
(ext4 or xfs with write barriers, their default).

Before ``commit()`` returns, nothing is published: ``open``, ``stat`` and ``exists``
do not see the artifact. A crash leaves at most a ``tmp/`` entry (the uncommitted
bytes are lost, as the spec allows) that ``collect_garbage`` removes once it is older
than the given age. A ``commit()`` that raises returns no reference: if the rename had
already happened, the artifact is unpublished again before the error is raised, and
should that fail as well, what remains is a complete, consistent, unreferenced
artifact that age-based collection removes. A power loss during ``commit()`` may keep
or lose the artifact; no caller holds its reference either way. After ``delete()``
returns, the artifact stays deleted across power loss.

Not guaranteed: durability on disks or virtual disks that acknowledge a flush without
persisting it (volatile write caches, ``nobarrier``, hypervisor "unsafe" caching);
network or FUSE filesystems (NFS, SMB, sshfs), where fsync, rename and ``flock``
semantics differ, so neither durability nor "GC never deletes an active writer" hold
there; protection against media corruption after commit (``verify`` detects it, it
does not prevent it); and atomicity with the coordination database (a crash between
``commit()`` and attaching the reference leaves an orphan).

A store object is safe to share between threads; a writer belongs to one thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from io import BufferedReader, BufferedWriter
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Literal, Self

from .beneath import NotRegular, open_beneath
from .clock import wall_clock
from .errors import ArtifactError, Closed, Invalid, NotFound
from .files import fsync_dir, fsync_open, make_dirs
from .records import ArtifactRef, Nanos

META_FORMAT = 1

_ID = re.compile(r"[0-9a-f]{32}")
# RFC 6838 restricted-name on each side of the slash; parameters are not accepted.
_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
_MEDIA_TYPE = re.compile(f"{_NAME}/{_NAME}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_DATA = "data"
_META = "meta.json"
_TRASH_SUFFIX = ".deleted"


class ArtifactMissing(ArtifactError, NotFound):
    """No committed artifact has this ID: never created, deleted, or not yet committed."""


class ArtifactCorrupt(ArtifactError):
    """Stored bytes or metadata no longer match what was recorded at commit."""


@dataclass(frozen=True, slots=True)
class StoredArtifact:
    """A committed artifact's reference and its commit time (store clock, ns)."""

    ref: ArtifactRef
    committed_at: Nanos


@dataclass(frozen=True, slots=True)
class GcReport:
    """What one ``collect_garbage`` pass did. ``skipped_young`` counts committed
    artifacts and temp entries alike; an artifact both young and referenced counts as
    young (age is checked first, so the reference callback is not asked)."""

    deleted: tuple[str, ...] = ()
    deleted_temp: tuple[str, ...] = ()
    skipped_referenced: int = 0
    skipped_young: int = 0
    skipped_writer_open: int = 0


class ArtifactWriter:
    """Streams one artifact into ``tmp/`` while hashing it; ``commit()`` publishes it.

    ``close()`` (or leaving a ``with`` block) without a successful commit aborts and
    removes the temp bytes; after a commit it does nothing. Any use after close or
    commit raises ``Closed``.
    """

    def __init__(
        self,
        store: FileArtifactStore,
        artifact_id: str,
        media_type: str,
        temp: Path,
        file: BufferedWriter,
    ) -> None:
        self.id = artifact_id
        self.media_type = media_type
        self._store = store
        self._temp = temp
        self._file: BufferedWriter | None = file
        self._sha = hashlib.sha256()
        self._size = 0
        self._ref: ArtifactRef | None = None

    @property
    def size(self) -> int:
        """Bytes written so far."""
        return self._size

    @property
    def closed(self) -> bool:
        return self._file is None

    @property
    def ref(self) -> ArtifactRef | None:
        """The reference returned by a successful ``commit()``, else None."""
        return self._ref

    def write(self, data: bytes) -> int:
        """Append ``data``; returns its length. A failed write aborts the writer."""
        file = self._require_open("write")
        try:
            file.write(data)
        except OSError as exc:
            self._abort()
            raise ArtifactError(f"artifact {self.id}: write failed, writer aborted: {exc}") from exc
        self._sha.update(data)
        self._size += len(data)
        return len(data)

    def commit(self) -> ArtifactRef:
        """Make the bytes durable, publish them with one rename and return the ref.

        On any failure no reference is returned, the writer is closed and the temp
        bytes (or the just-published directory) are removed where possible.
        """
        file = self._require_open("commit")
        self._file = None  # closed from here on, whatever happens below
        target = self._store._object_dir(self.id)
        try:
            fsync_open(file)
            ref = ArtifactRef(self.id, self._size, self.media_type, self._sha.hexdigest())
            write_meta(self._temp / _META, ref, self._store._clock())
            # The renamed directory must carry both entries (data, meta.json) durably.
            fsync_dir(self._temp)
            os.replace(self._temp, target)  # the commit point
            fsync_dir(target.parent)
            # Closing releases the writer lock; only now may GC look at this ID.
            file.close()
        except BaseException as exc:
            # A failed or ambiguous publish returns no ref, so take back anything made
            # visible (a rename may have happened even if it reported an error): nobody
            # may open what no caller was ever given. The ID is ours alone.
            shutil.rmtree(self._temp, ignore_errors=True)
            with contextlib.suppress(OSError):
                self._store._discard(target)
            with contextlib.suppress(OSError):
                file.close()
            if isinstance(exc, OSError):
                raise ArtifactError(
                    f"artifact {self.id}: publish failed, no reference returned: {exc}"
                ) from exc
            raise
        self._ref = ref
        return ref

    def close(self) -> None:
        """Abort unless committed (removes the temp bytes); idempotent."""
        if self._file is not None:
            self._abort()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _require_open(self, action: str) -> BufferedWriter:
        if self._file is None:
            state = "committed" if self._ref is not None else "closed"
            raise Closed(f"artifact writer {self.id} is {state}; cannot {action}")
        return self._file

    def _abort(self) -> None:
        file, self._file = self._file, None
        if file is None:
            return
        # Remove while still holding the lock, so GC never races us for the entry;
        # whatever cannot be removed is unlocked afterwards and GC removes it by age.
        shutil.rmtree(self._temp, ignore_errors=True)
        with contextlib.suppress(OSError):
            file.close()


class FileArtifactStore:
    """Artifacts as files under ``root``; see the module docstring for the layout and
    the durability guarantee. ``clock`` stamps ``committed_at`` (tests inject one)."""

    def __init__(self, root: Path | str, *, clock: Callable[[], Nanos] = wall_clock) -> None:
        self.root = Path(root)
        self._objects = self.root / "objects"
        self._tmp = self.root / "tmp"
        self._lock_path = self.root / "gc.lock"
        self._clock = clock
        try:
            make_dirs(self._objects)
            make_dirs(self._tmp)
            # All 256 shards exist up front, so commit never creates a directory whose
            # own entry in objects/ another writer might publish into before it is
            # fsynced. Those already there are listed once, not tried one by one (256
            # mkdir calls cost 24 ms, and tests open a store per test).
            with os.scandir(self._objects) as entries:
                there = {entry.name for entry in entries if entry.is_dir(follow_symlinks=False)}
            for shard in range(256):
                if (name := f"{shard:02x}") not in there:
                    (self._objects / name).mkdir(exist_ok=True)
            fsync_dir(self._objects)
        except OSError as exc:
            raise ArtifactError(f"artifact store at {self.root} is unusable: {exc}") from exc

    # Writing ------------------------------------------------------------------------
    def create(self, media_type: str) -> ArtifactWriter:
        """A writer for a new artifact with an unguessable 128-bit ID."""
        if not isinstance(media_type, str) or not _MEDIA_TYPE.fullmatch(media_type):
            raise Invalid(f"media type {media_type!r} is not of the form type/subtype")
        artifact_id = secrets.token_hex(16)
        temp = self._tmp / artifact_id
        try:
            # Shared: GC holds gc.lock exclusively while it inspects tmp/, so it never
            # sees this entry between mkdir and flock and mistakes it for abandoned.
            with self._gc_lock(fcntl.LOCK_SH):
                temp.mkdir()
                file = (temp / _DATA).open("xb")
                try:
                    fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BaseException:
                    file.close()
                    raise
        except OSError as exc:
            shutil.rmtree(temp, ignore_errors=True)
            raise ArtifactError(f"cannot create artifact {artifact_id}: {exc}") from exc
        return ArtifactWriter(self, artifact_id, media_type, temp, file)

    # Reading ------------------------------------------------------------------------
    def open(self, ref_or_id: ArtifactRef | str) -> BinaryIO:
        """A stream of the committed bytes; the caller closes it. It keeps working if the
        artifact is deleted while open. Unknown, deleted and uncommitted IDs raise
        ``ArtifactMissing``."""
        return self._open_data(ref_or_id)

    def stat(self, ref_or_id: ArtifactRef | str) -> ArtifactRef:
        """The reference recorded at commit."""
        return self.stored(ref_or_id).ref

    def stored(self, ref_or_id: ArtifactRef | str) -> StoredArtifact:
        """The reference recorded at commit, with its commit time."""
        artifact_id = self._locate(ref_or_id)[0]
        try:
            with self._open_beneath(artifact_id, _META) as file:
                raw = file.read()
        except FileNotFoundError:
            raise ArtifactMissing(_missing(artifact_id)) from None
        except OSError as exc:
            raise ArtifactError(f"artifact {artifact_id} is unreadable: {exc}") from exc
        return _parse_meta(artifact_id, raw)

    def exists(self, ref_or_id: ArtifactRef | str) -> bool:
        """Whether a committed artifact has this ID."""
        artifact_id = _id_of(ref_or_id)
        if not _ID.fullmatch(artifact_id):
            return False
        try:
            self._open_beneath(artifact_id, _META).close()
        except (OSError, ArtifactCorrupt):
            return False
        return True

    def verify(self, ref_or_id: ArtifactRef | str) -> None:
        """Re-read the bytes (streaming) and check their size and SHA-256 against the
        metadata and, when given a reference, against that reference too."""
        stored = self.stat(ref_or_id)
        try:
            with self._open_data(stored.id) as stream:
                digest = hashlib.file_digest(stream, "sha256").hexdigest()
                size = stream.tell()
        except OSError as exc:
            raise ArtifactError(f"artifact {stored.id} is unreadable: {exc}") from exc
        if (size, digest) != (stored.size, stored.sha256):
            raise ArtifactCorrupt(
                f"artifact {stored.id} is corrupt: has {size} bytes sha256 {digest}, "
                f"committed {stored.size} bytes sha256 {stored.sha256}"
            )
        if isinstance(ref_or_id, ArtifactRef) and (
            ref_or_id.size != size or ref_or_id.sha256 not in ("", digest)
        ):
            raise ArtifactCorrupt(
                f"artifact {stored.id} does not match its reference: has {size} bytes "
                f"sha256 {digest}, reference says {ref_or_id.size} bytes "
                f"sha256 {ref_or_id.sha256}"
            )

    def list_committed(self) -> Iterator[StoredArtifact]:
        """Every committed artifact, in ID order. Entries whose metadata cannot be read
        are left out (``stat`` reports them); artifacts committed or deleted during
        the iteration may or may not appear."""
        for shard in sorted(os.listdir(self._objects)):
            try:
                names = sorted(os.listdir(self._objects / shard))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for name in names:
                if not _ID.fullmatch(name) or name[:2] != shard:
                    continue
                try:
                    yield self.stored(name)
                except (ArtifactMissing, ArtifactCorrupt):
                    continue

    # Removal ------------------------------------------------------------------------
    def delete(self, ref_or_id: ArtifactRef | str) -> None:
        """Delete a committed artifact; absent or unknown IDs succeed (idempotent)."""
        artifact_id = _id_of(ref_or_id)
        if not _ID.fullmatch(artifact_id):
            return
        try:
            self._discard(self._object_dir(artifact_id))
        except OSError as exc:
            raise ArtifactError(f"cannot delete artifact {artifact_id}: {exc}") from exc

    def collect_garbage(
        self,
        referenced: Callable[[str], bool] | AbstractSet[str],
        older_than_ns: Nanos,
        now_ns: Nanos,
    ) -> GcReport:
        """Delete committed artifacts committed more than ``older_than_ns`` before
        ``now_ns`` that ``referenced`` does not claim, and temp entries last written
        that long ago whose writer is gone. Never touches an open writer, in this
        process or any other, whatever its age.

        The age must exceed the longest gap between a commit and the transaction that
        attaches its reference, or GC may take content a caller is about to attach.
        """
        if older_than_ns < 0:
            raise Invalid(f"older_than_ns must be >= 0, not {older_than_ns}")
        is_referenced = (
            referenced.__contains__ if isinstance(referenced, AbstractSet) else referenced
        )
        cutoff = now_ns - older_than_ns
        deleted: list[str] = []
        deleted_temp: list[str] = []
        counts = {"referenced": 0, "young": 0, "open": 0}
        try:
            for stored in self.list_committed():
                if stored.committed_at >= cutoff:
                    counts["young"] += 1
                elif is_referenced(stored.ref.id):
                    counts["referenced"] += 1
                elif self._discard(self._object_dir(stored.ref.id)):
                    deleted.append(stored.ref.id)
            with self._gc_lock(fcntl.LOCK_EX):
                for name in sorted(os.listdir(self._tmp)):
                    outcome = self._collect_temp(name, cutoff)
                    if outcome == "deleted":
                        deleted_temp.append(name)
                    elif outcome != "gone":
                        counts[outcome] += 1
        except OSError as exc:
            raise ArtifactError(f"garbage collection in {self.root} failed: {exc}") from exc
        return GcReport(
            deleted=tuple(deleted),
            deleted_temp=tuple(deleted_temp),
            skipped_referenced=counts["referenced"],
            skipped_young=counts["young"],
            skipped_writer_open=counts["open"],
        )

    # Internals ----------------------------------------------------------------------
    def _object_dir(self, artifact_id: str) -> Path:
        return self._objects / artifact_id[:2] / artifact_id

    def _locate(self, ref_or_id: ArtifactRef | str) -> tuple[str, Path]:
        artifact_id = _id_of(ref_or_id)
        # Checked before any path is built: an ID is never allowed to walk the tree.
        if not _ID.fullmatch(artifact_id):
            raise ArtifactMissing(_missing(artifact_id))
        return artifact_id, self._object_dir(artifact_id)

    def _open_data(self, ref_or_id: ArtifactRef | str) -> BufferedReader:
        artifact_id = self._locate(ref_or_id)[0]
        try:
            return self._open_beneath(artifact_id, _DATA)
        except FileNotFoundError:
            raise ArtifactMissing(_missing(artifact_id)) from None
        except OSError as exc:
            raise ArtifactError(f"artifact {artifact_id} is unreadable: {exc}") from exc

    def _open_beneath(self, artifact_id: str, name: str) -> BufferedReader:
        """Open one file of a committed artifact, following no link below the root and
        refusing anything but a regular file with one name (``ArtifactCorrupt``: a hard
        link planted there would serve whatever it names): the console serves these
        bytes to every viewer."""
        parts = ("objects", artifact_id[:2], artifact_id, name)
        try:
            return os.fdopen(open_beneath(self.root, parts, single_link=True), "rb")
        except NotRegular as exc:
            raise ArtifactCorrupt(
                f"artifact {artifact_id}: {'/'.join(parts)} is not a regular file inside "
                f"the store ({exc.strerror}); refused"
            ) from None

    def _discard(self, path: Path) -> bool:
        """Unpublish ``path`` with one rename into tmp/, then remove it. False if it
        was not there. Leftovers of a crash here are trash entries that GC removes."""
        trash = self._tmp / f"{path.name}.{secrets.token_hex(4)}{_TRASH_SUFFIX}"
        try:
            os.rename(path, trash)
        except FileNotFoundError:
            return False
        fsync_dir(path.parent)  # so power loss cannot bring the artifact back
        shutil.rmtree(trash, ignore_errors=True)
        return True

    def _collect_temp(
        self, name: str, cutoff: Nanos
    ) -> Literal["deleted", "gone", "young", "open"]:
        """Remove one tmp/ entry if its writer is gone and it is old. Called with
        gc.lock held exclusively, so no writer is between mkdir and flock."""
        entry = self._tmp / name
        if name.endswith(_TRASH_SUFFIX):
            # Already unpublished by a delete that crashed or is still removing it.
            _remove_tree(entry)
            return "deleted"
        target = entry / _DATA if entry.is_dir() else entry
        try:
            fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            # Committed or aborted meanwhile, or a crash between mkdir and open.
            if not entry.exists():
                return "gone"
            fd = -1
        try:
            if fd >= 0:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return "open"
            # Holding the lock: its writer is gone, so nobody renames the entry away
            # from under us any more; it was renamed already if it no longer exists.
            if not entry.exists():
                return "gone"
            written_at = (os.fstat(fd) if fd >= 0 else os.stat(entry)).st_mtime_ns
            if written_at >= cutoff:
                return "young"
            _remove_tree(entry)
            return "deleted"
        finally:
            if fd >= 0:
                os.close(fd)

    @contextlib.contextmanager
    def _gc_lock(self, operation: int) -> Iterator[None]:
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, operation)
            yield
        finally:
            os.close(fd)


def _id_of(ref_or_id: ArtifactRef | str) -> str:
    return ref_or_id.id if isinstance(ref_or_id, ArtifactRef) else ref_or_id


def _missing(artifact_id: str) -> str:
    return f"artifact {artifact_id!r} is not committed, was deleted or never existed"


def write_meta(path: Path, ref: ArtifactRef, committed_at: Nanos) -> None:
    """Write an artifact's ``meta.json`` durably, as the store lays it out; a backup
    writes the copies in its bundle with it, so a restored store reads them as its own."""
    meta = {
        "format": META_FORMAT,
        "id": ref.id,
        "media_type": ref.media_type,
        "size": ref.size,
        "sha256": ref.sha256,
        "committed_at": committed_at,
    }
    with path.open("xb") as file:
        file.write(json.dumps(meta, sort_keys=True).encode())
        fsync_open(file)


def _parse_meta(artifact_id: str, raw: bytes) -> StoredArtifact:
    try:
        meta = json.loads(raw)
        fields = (meta["id"], meta["media_type"], meta["size"], meta["sha256"])
        committed_at, meta_format = meta["committed_at"], meta["format"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ArtifactCorrupt(f"artifact {artifact_id} has unreadable metadata: {exc}") from None
    stored_id, media_type, size, sha256 = fields
    if meta_format != META_FORMAT:
        raise ArtifactCorrupt(
            f"artifact {artifact_id} has metadata format {meta_format!r}; "
            f"this code reads format {META_FORMAT}"
        )
    if (
        stored_id != artifact_id
        or not isinstance(media_type, str)
        or not _MEDIA_TYPE.fullmatch(media_type)
        or type(size) is not int
        or size < 0
        or not isinstance(sha256, str)
        or not _SHA256.fullmatch(sha256)
        or type(committed_at) is not int
    ):
        raise ArtifactCorrupt(f"artifact {artifact_id} has invalid metadata: {meta!r}")
    return StoredArtifact(ArtifactRef(artifact_id, size, media_type, sha256), committed_at)


def _remove_tree(path: Path) -> None:
    """Remove a file or directory tree; parts another process removed first are fine."""

    def ignore_missing(function: Callable[..., object], name: str, exc: BaseException) -> None:
        if not isinstance(exc, FileNotFoundError):
            raise exc

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, onexc=ignore_missing)
    else:
        path.unlink(missing_ok=True)

"""Routed runs' files in a backup: the workspaces, journals and journal keys.

A backup copies the routed-run state directory (the setting ``ROUTED_STATE_DIR``) into
the bundle's ``routed/``, file by file through descriptors: a link is never followed
(a worker may have planted one in its workspace; it is left out and said so), and
every copy is private, files 0600 and directories 0700, in the bundle and again when
restored, so a journal key is never more readable in a backup than where it came
from. The manifest lists every copied file with its size and SHA-256 like any other.
The files are copied after the database snapshot and may be newer than it (a journal
with events past the snapshot's progress), never older.

``verify_routed`` is ``backup verify``'s part: the copies are still private and every
journal in them verifies under its copied key (``storage.routed.verify``, without a
database).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from ..beneath import NotRegular, open_file_at, walk_beneath
from ..routed.verify import ERROR, runs_in, verify_run
from .bundle import ROUTED, FileEntry, Manifest, Progress, copy_stream

PRIVATE_FILE, PRIVATE_DIR = 0o600, 0o700


def configured_routed_root() -> Path | None:
    from django.conf import settings

    root = getattr(settings, "ROUTED_STATE_DIR", None)
    return None if root is None else Path(root)


def is_routed(rel: str) -> bool:
    return rel.startswith(f"{ROUTED}/")


def private_dirs(base: Path, rel: str) -> Path:
    """``base/rel``'s parent directories made 0700 from ``base`` down; returns the
    target path."""
    parts = PurePosixPath(rel).parts
    directory = base
    for part in parts[:-1]:
        directory = directory / part
        if not directory.is_dir():
            directory.mkdir(mode=PRIVATE_DIR)
    return base.joinpath(*parts)


def copy_routed_state(root: Path | None, dest: Path, say: Progress) -> list[FileEntry]:
    """Copy every regular file beneath ``root`` into ``dest/routed/`` (0600 in 0700
    directories), never through a link; the manifest entries of the copies."""
    if root is None or not root.is_dir():
        return []
    files: list[FileEntry] = []
    for directory, rel, name, _st in walk_beneath(root):
        try:
            fd = open_file_at(directory, name)
        except (NotRegular, FileNotFoundError):
            say(f"routed state: {rel} is not a regular file; left out")
            continue
        target = private_dirs(dest, f"{ROUTED}/{rel}")
        with os.fdopen(fd, "rb") as stream:
            copied = copy_stream(stream, target, say, rel)
        os.chmod(target, PRIVATE_FILE)
        files.append(FileEntry(f"{ROUTED}/{rel}", copied.size, copied.sha256))
    say(f"routed state: {len(files)} files copied")
    return files


def verify_routed(bundle: Path, manifest: Manifest, problems: list[str]) -> None:
    """The bundle's routed files are still private and its journals verify."""
    routed = [e for e in manifest.files if is_routed(e.path)]
    for entry in routed:
        path = bundle.joinpath(*PurePosixPath(entry.path).parts)
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode != PRIVATE_FILE:
            problems.append(f"{entry.path} has mode {mode:o}, not 600")
    if not routed:
        return
    root = bundle / ROUTED
    for run_id in runs_in(root):
        for finding in verify_run(root, run_id):
            if finding.level == ERROR:
                problems.append(f"{ROUTED}/{finding.where}: {finding.message}")

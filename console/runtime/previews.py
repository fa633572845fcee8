"""Logs and reports shown on the Work page, so reading why an attempt failed takes no
download: the last lines of a text artifact, a JSON one pretty-printed, each with
the result of checking its recorded SHA-256 against the bytes read.

Bounds, so a page never reads more than it shows:
- an artifact of at most ``INLINE_LIMIT`` bytes (256 KiB) is read whole, in one read,
  and its digest checked; a text one shows its last ``TAIL_LINES`` (50) lines with the
  rest behind "show all", a JSON one is pretty-printed whole;
- a larger text artifact has only its last ``TAIL_BYTES`` (64 KiB) read (a seek, then
  one read), so its digest cannot be checked (the page says so) and its last lines
  are shown; a larger JSON one stays a download (half a document is no document);
- binary media types are download-only;
- only the artifacts of the ``PREVIEWED_ATTEMPTS`` newest attempts are read.

Content is shown only when it can be trusted (issue 34): bytes whose SHA-256 does not
match the recorded digest are not shown at all, and the page says so (the Work page
then offers no download either); a routed run's artifacts (``checked_only``) are shown
only when read whole and matching, since their workspace is writable by the worker.

Bytes are read through ``FileArtifactStore.open`` (``storage.beneath``: no link
followed, regular files with one hard link only), once per artifact. The text is
escaped by the template and its control and bidi characters made visible by
``|visible``.

Artifacts carry no logical name (``ArtifactRef`` holds an ID, size, media type and
digest; neither the attempt's Binding nor the store keeps one), so a readable one is
derived from the attempt and media type: "log" for text, "report" for JSON, numbered
when an attempt has several ("log 2"), and the page says the name is derived.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import BinaryIO, Literal

from storage import ArtifactError, ArtifactRef, Execution
from storage.artifacts import FileArtifactStore

INLINE_LIMIT = 256 * 1024
TAIL_BYTES = 64 * 1024
TAIL_LINES = 50
PREVIEWED_ATTEMPTS = 3

# Anything but letters, digits, dot, dash and underscore, in a download's file name.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

Shape = Literal["text", "json", "binary"]
Digest = Literal["match", "mismatch", "unchecked", "unrecorded", "unread"]


def shape_of(media_type: str) -> Shape:
    """How an artifact can be shown: text/*, JSON (application/json or +json), else
    binary."""
    base = media_type.split(";", 1)[0].strip().lower()
    if base == "application/json" or base.endswith("+json"):
        return "json"
    if base.startswith("text/"):
        return "text"
    return "binary"


def logical_names(artifacts: Sequence[ArtifactRef]) -> list[str]:
    """A readable name per artifact of one attempt (see the module docstring)."""
    seen: Counter[str] = Counter()
    names = []
    for ref in artifacts:
        shape = shape_of(ref.media_type)
        base = {"text": "log", "json": "report"}.get(shape) or _subtype(ref.media_type)
        seen[base] += 1
        names.append(base if seen[base] == 1 else f"{base} {seen[base]}")
    return names


def download_name(x: Execution, ref: ArtifactRef, extension: str) -> str:
    """The file name a download is saved under: Work, attempt and derived name, as in
    ``<work>-attempt-2-log.txt``, reduced to safe file-name characters."""
    names = dict(zip((r.id for r in x.artifacts), logical_names(x.artifacts), strict=True))
    stem = f"{x.work_id}-attempt-{x.attempt}-{names.get(ref.id, ref.id)}"
    return _UNSAFE.sub("_", stem)[:120] + extension


def _subtype(media_type: str) -> str:
    return media_type.split(";", 1)[0].rpartition("/")[2].strip() or "file"


@dataclass(frozen=True, slots=True)
class Preview:
    ref: ArtifactRef
    execution_id: str
    attempt: int
    name: str  # derived (logical_names)
    shape: Shape
    shown: str = ""  # the last lines, or the pretty JSON
    whole: str = ""  # all of the text, when it has more lines than were shown
    total_lines: int = 0  # lines in what was read
    shown_lines: int = 0
    partial: bool = False  # only the tail was read
    digest: Digest = "unread"
    problem: str = ""  # why nothing (or the raw text) is shown
    unreadable: bool = False  # the content is missing or refused
    newest: bool = False  # of the newest attempt: shown open


@dataclass(frozen=True, slots=True)
class AttemptArtifacts:
    previews: list[Preview]  # the newest attempts' artifacts, newest attempt first
    missing: set[str]  # IDs of artifacts whose content cannot be read
    names: dict[str, dict[str, str]]  # Execution ID -> artifact ID -> derived name


def attempt_artifacts(store: FileArtifactStore, attempts: Iterable[Execution]) -> AttemptArtifacts:
    """Previews of the ``PREVIEWED_ATTEMPTS`` newest attempts' artifacts (``attempts``
    newest first); older attempts' artifacts are only checked for presence."""
    shown: list[Preview] = []
    missing: set[str] = set()
    names: dict[str, dict[str, str]] = {}
    for n, x in enumerate(attempts):
        names[x.id] = dict(
            zip((r.id for r in x.artifacts), logical_names(x.artifacts), strict=True)
        )
        for ref in x.artifacts:
            if n >= PREVIEWED_ATTEMPTS:
                if not store.exists(ref):
                    missing.add(ref.id)
                continue
            preview = read_preview(store, ref, x, names[x.id][ref.id], newest=n == 0)
            if preview.unreadable:
                missing.add(ref.id)
            shown.append(preview)
    return AttemptArtifacts(shown, missing, names)


def read_preview(
    store: FileArtifactStore, ref: ArtifactRef, x: Execution, name: str, *, newest: bool = False
) -> Preview:
    """One artifact's preview: at most one open and one read of its content."""
    base = Preview(ref, x.id, x.attempt, name, shape_of(ref.media_type), newest=newest)
    return preview_content(base, lambda: store.open(ref))


MISMATCH = (
    "Its SHA-256 does not match the recorded one: the content was changed after it was "
    "recorded, so it is not shown."
)


def preview_content(
    base: Preview, open_stream: Callable[[], BinaryIO], *, checked_only: bool = False
) -> Preview:
    """``base`` (its ref: size, media type, SHA-256) previewed from the stream
    ``open_stream`` gives, opened at most once: the Work page's artifacts and the
    routed-run workflow page's (``console.routed``) alike. With ``checked_only`` only
    content read whole whose digest matches is shown."""
    ref, shape = base.ref, base.shape
    if shape == "binary":
        return replace(base, problem=f"{ref.media_type}: download only")
    whole = ref.size <= INLINE_LIMIT
    if not whole and shape == "json":
        return replace(base, problem=f"larger than {INLINE_LIMIT // 1024} KiB: download it")
    if not whole and checked_only:
        limit = INLINE_LIMIT // 1024
        return replace(base, problem=f"larger than {limit} KiB: its SHA-256 cannot be checked here")
    try:
        with open_stream() as stream:
            if whole:
                data = stream.read(INLINE_LIMIT + 1)
            else:
                stream.seek(ref.size - TAIL_BYTES)
                data = stream.read(TAIL_BYTES)
    except (ArtifactError, OSError) as exc:
        return replace(base, problem=f"content unreadable: {exc}", unreadable=True)
    base = replace(base, digest=_digest(ref, data) if whole else "unchecked", partial=not whole)
    if base.digest == "mismatch" or (checked_only and base.digest != "match"):
        return replace(base, problem=MISMATCH if base.digest == "mismatch" else UNCHECKED)
    text = data.decode("utf-8", "replace")
    if not whole:
        text = text.partition("\n")[2]  # the read began mid-file: drop the partial line
    if shape == "json":
        try:
            pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return _text(replace(base, shape="text", problem="not valid JSON: shown as text"), text)
        lines = pretty.count("\n") + 1
        return replace(base, shown=pretty, total_lines=lines, shown_lines=lines)
    return _text(base, text)


UNCHECKED = "No SHA-256 was recorded to check it against, so it is not shown."


def _text(base: Preview, text: str) -> Preview:
    """``base`` showing the last TAIL_LINES lines of ``text``, the rest kept for
    "show all" when the whole artifact was read."""
    lines = text.splitlines()
    tail = lines[-TAIL_LINES:]
    rest = "\n".join(lines) if not base.partial and len(lines) > TAIL_LINES else ""
    return replace(
        base, shown="\n".join(tail), whole=rest, total_lines=len(lines), shown_lines=len(tail)
    )


def _digest(ref: ArtifactRef, data: bytes) -> Digest:
    """Whether the bytes read are the bytes recorded: their size and SHA-256."""
    if not ref.sha256:
        return "unrecorded"
    if len(data) != ref.size or hashlib.sha256(data).hexdigest() != ref.sha256:
        return "mismatch"
    return "match"

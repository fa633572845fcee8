"""Two attempts' artifacts paired and diffed, for the Compare page
(``console/works/compare.py``).

Artifacts carry no name, so they are paired by the name ``previews.logical_names``
derives from the media type: A's "log" with B's "log", A's "report 2" with B's
"report 2". A pair is then:

- the same content when both recorded SHA-256s (and sizes) agree: nothing is read;
- otherwise, for text and JSON of at most ``DIFF_LIMIT`` bytes each, read through
  ``previews.read_preview`` (one open and one read each, the digest checked: content
  that does not match its recorded SHA-256 is never shown, so never diffed) and diffed
  line by line with ``difflib.unified_diff``, a report pretty-printed first so it
  diffs key by key; the diff is cut at ``DIFF_LINES`` lines;
- otherwise not diffed, and the page says why (binary, larger than the limit, content
  unreadable), with both downloads.

Bounds. ``difflib``'s cost grows with the lines that differ, not only with the size:
measured on the 2-core development machine, a 64 KiB log with every second line
changed diffs in 0.35 s, every seventh in 0.13 s; at 256 KiB (the Work page's inline
limit) every seventh took 2.4 s. So the limit is 64 KiB, and at most ``MAX_DIFFS``
pairs are read and diffed per page (an attempt may carry many logs); the rest say so.
The whole page at that worst (four pairs of 58 KiB logs, every second line changed)
took 1.0-1.8 s through the test client; the same attempt on both sides, 21 ms.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from console.runtime.previews import Preview, logical_names, read_preview, shape_of
from storage import ArtifactRef, Execution
from storage.artifacts import FileArtifactStore

DIFF_LIMIT = 64 * 1024
DIFF_LINES = 400
MAX_DIFFS = 4

Verdict = Literal["same", "differs", "only A", "only B", "not compared"]
LineKind = Literal["hunk", "del", "add", "ctx", "head"]


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: LineKind
    text: str  # with its "-", "+" or " " prefix: the change is marked in text


@dataclass(frozen=True, slots=True)
class ArtifactPair:
    """One derived name's artifact on each side (None where that attempt has none)."""

    name: str
    a: ArtifactRef | None
    b: ArtifactRef | None
    verdict: Verdict
    note: str = ""  # why it was not diffed, or what "same" rests on
    diff: tuple[DiffLine, ...] = ()
    cut: int = 0  # diff lines left out past DIFF_LINES

    @property
    def differs(self) -> bool:
        """Known to differ ("not compared" is not known either way)."""
        return self.verdict in ("differs", "only A", "only B")


def pair_artifacts(
    store: FileArtifactStore, a: Execution, b: Execution, *, limit: int = DIFF_LIMIT
) -> list[ArtifactPair]:
    """Both attempts' artifacts paired by derived name (A's order, then B's others),
    the pairs that differ diffed within the bounds of the module docstring."""
    mine = dict(zip(logical_names(a.artifacts), a.artifacts, strict=True))
    theirs = dict(zip(logical_names(b.artifacts), b.artifacts, strict=True))
    names = list(mine) + [n for n in theirs if n not in mine]
    pairs: list[ArtifactPair] = []
    diffed = 0
    for name in names:
        ra, rb = mine.get(name), theirs.get(name)
        if ra is None or rb is None:
            pairs.append(ArtifactPair(name, ra, rb, "only A" if rb is None else "only B"))
            continue
        if ra.sha256 and ra.sha256 == rb.sha256 and ra.size == rb.size:
            pairs.append(ArtifactPair(name, ra, rb, "same", "the same SHA-256: not read"))
            continue
        why = _not_diffable(ra, rb, limit) or (
            f"only {MAX_DIFFS} pairs are diffed per page" if diffed >= MAX_DIFFS else ""
        )
        if why:
            verdict: Verdict = "differs" if ra.sha256 and rb.sha256 else "not compared"
            pairs.append(ArtifactPair(name, ra, rb, verdict, f"not diffed: {why}"))
            continue
        diffed += 1
        pairs.append(
            _diffed(name, read_preview(store, ra, a, name), read_preview(store, rb, b, name))
        )
    return pairs


def _not_diffable(a: ArtifactRef, b: ArtifactRef, limit: int) -> str:
    shapes = {shape_of(a.media_type), shape_of(b.media_type)}
    if "binary" in shapes:
        return "binary content (download both)"
    if max(a.size, b.size) > limit:
        return f"larger than {limit // 1024} KiB (download both)"
    return ""


def _diffed(name: str, pa: Preview, pb: Preview) -> ArtifactPair:
    """The pair from two whole-read previews: their full text diffed, or why not."""
    for side, p in (("A", pa), ("B", pb)):
        if not p.shown and p.problem:
            return ArtifactPair(name, pa.ref, pb.ref, "not compared", f"{side}'s {p.problem}")
    lines = list(
        difflib.unified_diff(
            _text(pa).splitlines(),
            _text(pb).splitlines(),
            fromfile=f"A: attempt {pa.attempt} {name}",
            tofile=f"B: attempt {pb.attempt} {name}",
            lineterm="",
        )
    )
    if not lines:
        return ArtifactPair(name, pa.ref, pb.ref, "same", "the same text")
    shown = tuple(DiffLine(_kind(n, line), line) for n, line in enumerate(lines[:DIFF_LINES]))
    return ArtifactPair(
        name, pa.ref, pb.ref, "differs", diff=shown, cut=max(0, len(lines) - DIFF_LINES)
    )


def _text(p: Preview) -> str:
    """All the text a whole-read preview holds: "show all"'s, else what it shows."""
    return p.whole or p.shown


def _kind(n: int, line: str) -> LineKind:
    if n < 2:
        return "head"  # the "---" and "+++" file lines
    if line.startswith("@@"):
        return "hunk"
    return {"-": "del", "+": "add"}.get(line[:1], "ctx")  # type: ignore[return-value]


def artifact_summary(refs: Sequence[ArtifactRef]) -> tuple[str, ...]:
    """An attempt's artifacts in a line each: derived name, media type and size."""
    return tuple(
        f"{name}: {ref.media_type}, {ref.size} bytes"
        for name, ref in zip(logical_names(refs), refs, strict=True)
    )

"""The artifact path rule, and the caps (the spec's ``ArtifactMax*``, resolution 13).

A path a worker names is a relative POSIX path of at most 8 segments and 512 bytes of
UTF-8. It is split on ``/`` and never normalised: ``a/./b``, ``a//b``, ``a/``, ``..``
anywhere, an absolute path, a backslash (a Windows separator a worker might hope
something converts), a NUL or another control character are refused as written, so
no spelling reaches a name the check did not see. Percent-encoded or full-width dots
are no spelling of ``..`` here: nothing decodes them, they name files literally.
"""

from __future__ import annotations

from .errors import InvalidPath

ARTIFACT_MAX_PER_FILE = 25 * 1024 * 1024  # 25 MiB
ARTIFACT_MAX_TOTAL = 100 * 1024 * 1024  # 100 MiB per run
ARTIFACT_MAX_PATH_LEN = 512  # bytes of the UTF-8 path
ARTIFACT_MAX_SEGMENTS = 8


def check_relative_path(rel_path: object) -> tuple[str, ...]:
    """The segments of ``rel_path``; ``InvalidPath`` naming the first thing wrong."""
    if not isinstance(rel_path, str) or not rel_path:
        raise InvalidPath(f"an artifact path is a non-empty string, not {rel_path!r}")
    try:
        size = len(rel_path.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidPath(f"{rel_path!r} is not valid Unicode") from None
    if size > ARTIFACT_MAX_PATH_LEN:
        raise InvalidPath(f"the path is {size} bytes, over {ARTIFACT_MAX_PATH_LEN}")
    if rel_path.startswith("/"):
        raise InvalidPath(f"{rel_path!r} is absolute")
    if "\\" in rel_path:
        raise InvalidPath(f"{rel_path!r} holds a backslash")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in rel_path):
        raise InvalidPath(f"{rel_path!r} holds a control character")
    parts = tuple(rel_path.split("/"))
    if len(parts) > ARTIFACT_MAX_SEGMENTS:
        raise InvalidPath(f"{rel_path!r} has {len(parts)} segments, over {ARTIFACT_MAX_SEGMENTS}")
    for part in parts:
        if part in ("", ".", ".."):
            raise InvalidPath(f"{rel_path!r} has a segment {part!r}")
    return parts

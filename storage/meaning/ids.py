"""The meaning of an ID prefix search (``Tx.find_ids``): which IDs a prefix selects,
and the range of binary-ordered strings that holds exactly them.

The reference double answers with ``str.startswith``; the ORM backend range-scans
each ID's index between ``prefix`` and ``prefix_upper(prefix)``. Both agree because
every backend orders IDs by code point (SQLite's BINARY and PostgreSQL's byte
comparison of UTF-8 are code point order, as Python's ``str`` is), so a prefix's
matches are one contiguous run of the index whatever characters it holds: ``%``,
``_`` and ``\\`` mean nothing here, unlike in LIKE.
"""

from __future__ import annotations

from ..records import IdKind

# The most matches of one kind a single find_ids returns: a search box lists
# candidates, it never pages through them.
FIND_IDS_MAX = 100

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)

# The answer's order: kinds as IdKind lists them, IDs ascending within a kind.
KIND_ORDER = tuple(IdKind)


def prefix_upper(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``, in code point
    order, or None when there is none (``prefix`` is all U+10FFFF).

    The last character that is not U+10FFFF is raised by one, and what follows it is
    dropped: every extension of ``prefix`` sorts below the result, and every string in
    [prefix, result) extends ``prefix``. The surrogates are skipped: no valid string
    holds one (the identifier rule refuses them), and UTF-8 cannot encode one."""
    chars = list(prefix)
    while chars:
        code = ord(chars.pop()) + 1
        if code <= _MAX_CODE_POINT:
            if code in _SURROGATES:
                code = _SURROGATES.stop
            return "".join(chars) + chr(code)
    return None


def matches(prefix: str, ids: list[str], limit: int) -> list[str]:
    """The first ``limit`` of ``ids`` (any order) that start with ``prefix``, ascending."""
    return sorted(i for i in ids if i.startswith(prefix))[:limit]

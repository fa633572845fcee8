"""The meaning of the triage marks storage keeps on each Work (``Work.exhausted`` and
``Work.error_group``) and of the error groups read.

- ``error_key``: the group of a failure message. Numbers, UUIDs, hex strings and IDs
  (any word holding a digit) become placeholders and whitespace collapses, so "order
  8812 declined (req 3f9a0c1e)" and "order 17 declined (req 0b1c2d3e)" are one group.
- ``failure_key``: the group of a Work from its latest attempt: the failure message's
  key when it failed, "timed out waiting for <event types>" when it ended ``waiting``
  (an executor that cannot resume) and its Wait was cancelled with a timeout Timer
  set (the runtime cancels a Wait so when its timeout fires first; a woken Wait starts
  the next attempt instead), and "" otherwise.
- ``is_exhausted``: what the exhausted mark is, from the Work, its latest attempt and
  whether it has a live attempt or a Timer. The rules (``storage.tx.base``) apply it at every
  commit that touched any of those, so the marks are never stale in a committed state.
- ``select_error_groups``: failed and exhausted Work with a group, grouped, the largest
  group first (ties by key).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from ..records import (
    ErrorGroup,
    Execution,
    ExecutionState,
    Wait,
    WaitState,
    Work,
    WorkQuery,
    WorkState,
)
from .query import check_query, matches

# The stored key fits an indexed column; a message says what went wrong in its start.
MAX_ERROR_KEY = 200
# The group of a failed attempt that gave no message (never "": that means "no group").
NO_MESSAGE = "(no message)"

_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
# A word holding a digit, with the separators IDs use inside them (evt_01H-9, 10.0.0.1).
_TOKEN = re.compile(r"[\w.:/-]*\d[\w.:/-]*")
_NUMBER = re.compile(r"[+-]?[\d.,:]+")
_HEX = re.compile(r"(?:0x)?[0-9a-fA-F]{6,}")
_SPACE = re.compile(r"\s+")


def _placeholder(match: re.Match[str]) -> str:
    token = match.group(0)
    # Sentence punctuation after a number is not part of it ("after 3 tries.").
    core = token.rstrip(".:/-")
    tail = token[len(core) :]
    if _NUMBER.fullmatch(core):
        return "<n>" + tail
    if _HEX.fullmatch(core):
        return "<hex>" + tail
    return "<id>" + tail


def error_key(message: str) -> str:
    """The error group of a failure message: "" for none (blank text)."""
    text = _UUID.sub("<uuid>", message)
    text = _TOKEN.sub(_placeholder, text)
    text = _SPACE.sub(" ", text).strip()
    # Cut at the limit, then drop a trailing space the cut exposed: the key of a key
    # is itself.
    return text[:MAX_ERROR_KEY].rstrip()


def timed_out_key(types: tuple[str, ...]) -> str:
    """The group of Work whose Wait for ``types`` timed out. Event types are dotted
    names, kept as they are (not through ``error_key``: "v2.order.paid" is a name)."""
    awaited = " or ".join(types) if types else "an event"
    return f"timed out waiting for {awaited}"[:MAX_ERROR_KEY].rstrip()


def failure_key(latest: Execution | None, waits: Iterable[Wait] = ()) -> str:
    """The error group of a Work whose latest attempt is ``latest``; ``waits`` are the
    Work's Waits (any, or none when ``latest`` did not end waiting: only its own count)."""
    if latest is None:
        return ""
    if latest.state is ExecutionState.WAITING:
        for wait in waits:
            if (
                wait.execution_id == latest.id
                and wait.state is WaitState.CANCELLED
                and wait.timeout_timer_id
            ):
                return timed_out_key(wait.types)
        return ""
    if latest.state is not ExecutionState.FAILED:
        return ""
    message = latest.outcome.message if latest.outcome is not None else ""
    return error_key(message) or NO_MESSAGE


def is_exhausted(work: Work, attempted: bool, live_attempt: bool, timed: bool) -> bool:
    """Ready, has had an attempt, none live, no Timer: nothing will run it again."""
    return work.state is WorkState.READY and attempted and not live_attempt and not timed


def select_error_groups(query: WorkQuery, works: Iterable[Work]) -> list[ErrorGroup]:
    """The error groups of ``query``'s failed and exhausted Work (its order, cursor and
    limit play no part), the largest first."""
    check_query(query)
    members: dict[str, list[Work]] = {}
    for w in works:
        if w.error_group and (w.state is WorkState.FAILED or w.exhausted) and matches(query, w):
            members.setdefault(w.error_group, []).append(w)
    groups = [
        ErrorGroup(
            key=key,
            count=len(ws),
            kinds=dict(Counter(w.kind for w in ws)),
            failed=sum(1 for w in ws if w.state is WorkState.FAILED),
            exhausted=sum(1 for w in ws if w.exhausted),
            first_seen=min(w.updated_at for w in ws),
            last_seen=max(w.updated_at for w in ws),
        )
        for key, ws in members.items()
    ]
    return sorted(groups, key=lambda g: (-g.count, g.key))

"""A moment in the store's past as a URL names it (``?as_of=``, ``?from=``, ``?to=``),
and the store version it stands for.

Three spellings, each kept as typed in links, so a link shows a colleague exactly what
the sender saw:

- ``v<version>``: once that transaction had committed (the store version, which every
  writing commit raises by one; what the changes page links to);
- ``#<sequence>`` or a bare number: once the Event accepted with that sequence had
  committed (a transaction that accepts an Event stamps it with its own time);
- a time (UTC, ISO 8601, or a duration back from now such as ``15m``, as the lists'
  time filters take): the last version committed at or before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from console.urlstate import FilterError, parse_since
from storage import Nanos, NotFound, StoredEvent, Tx

MAX_TEXT = 64
SEQ_MAX = 2**63 - 1  # a sequence or version is a 64-bit integer on both engines
HELP = (
    "Name a moment as an Event's sequence (#1234), a store version (v5678), a UTC time "
    "like 2025-11-30 14:00, an ISO 8601 instant, or a duration back from now like 15m."
)
_NUMBER = re.compile(r"^[#v]?([0-9]{1,19})$")


@dataclass(frozen=True, slots=True)
class Moment:
    """A moment as typed: exactly one of ``version``, ``sequence``, ``at`` is set."""

    text: str
    version: int | None = None
    sequence: int | None = None
    at: Nanos | None = None


@dataclass(frozen=True, slots=True)
class Resolved:
    """A moment in one View: its store ``version``, its time ``at`` (the Events the
    Work had then are those received at or before it), the Event it was named by,
    and ``known`` False when the version log no longer reaches back to it."""

    moment: Moment
    version: int
    at: Nanos
    event: StoredEvent | None
    known: bool
    present: bool  # the moment is now: nothing has committed since


# The present: the last committed version (no version, sequence or time named).
NOW = Moment("now")


def parse_moment(raw: str, name: str, now: Nanos) -> Moment:
    """The moment ``raw`` names; ``FilterError`` (on ``name``) when it names none."""
    text = raw.strip()
    if not text or len(text) > MAX_TEXT:
        raise FilterError({name: HELP})
    match = _NUMBER.match(text) if text.isascii() else None
    if match:
        number = int(match.group(1))
        if number > SEQ_MAX:
            raise FilterError({name: HELP})
        if text.startswith("v"):  # v0: the empty store, before the first commit
            return Moment(text, version=number)
        if not number:
            raise FilterError({name: HELP})
        return Moment(text, sequence=number)
    try:
        return Moment(text, at=parse_since(text, now))
    except FilterError:
        raise FilterError({name: HELP}) from None


def version_of(tx: Tx, moment: Moment, name: str, current: int) -> int:
    """The store version ``moment`` names, in ``tx`` (``current``: its version now):
    an Event's by its acceptance time, a time's by the last commit at or before it.
    ``NotFound`` for a sequence no Event has; ``FilterError`` (on ``name``) for a
    version the store has not reached: shown as now, the link would change meaning
    once it is."""
    if moment.sequence is not None:
        return tx.version_at(event_of(tx, moment.sequence).event.received_at)
    if moment.at is not None:
        return tx.version_at(max(0, moment.at))
    if moment.version is None:  # NOW
        return current
    version = moment.version
    if version > current:
        raise FilterError({name: f"The store is at version {current}: v{version} is to come."})
    return version


def event_at(tx: Tx, sequence: int) -> StoredEvent | None:
    """The Event accepted with ``sequence`` (None: none has it), one index seek."""
    found = tx.events(after=sequence - 1, limit=1)
    return found[0] if found and found[0].sequence == sequence else None


def event_of(tx: Tx, sequence: int) -> StoredEvent:
    """``event_at``, ``NotFound`` when no Event has the sequence (a moment named by
    it is a 404)."""
    event = event_at(tx, sequence)
    if event is None:
        raise NotFound(f"no Event has the sequence {sequence}")
    return event


def resolve(tx: Tx, moment: Moment, name: str = "as_of") -> Resolved:
    """The version and time ``moment`` stands for, read in ``tx`` (``version_of``):
    a sequence's time is its Event's acceptance, a version's its own log rows' (or,
    for one that changed no record, the next logged one's, less a nanosecond)."""
    current = tx.store_version()
    event = None
    if moment.sequence is not None:  # version_of's lookup, keeping the Event it reads
        event = event_of(tx, moment.sequence)
        at = event.event.received_at
        version = tx.version_at(at)
    else:
        version = version_of(tx, moment, name, current)
        if moment.at is not None:
            at = max(0, moment.at)
        else:
            at = tx.now if version >= current else _time_of(tx, version)
    present = version >= current
    return Resolved(moment, version, at, event, version >= tx.version_horizon(), present)


def _time_of(tx: Tx, version: int) -> Nanos:
    own = tx.version_changes(after=version - 1, upto=version, limit=1) if version else []
    if own:
        return own[0].at
    later = tx.version_changes(after=version, limit=1)
    return later[0].at - 1 if later else tx.now

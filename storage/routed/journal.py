"""``ControlJournal``: the per-attempt, append-only, authenticated control journal.

Layout under the routed-run state root (the setting ``ROUTED_STATE_DIR``)::

    runs/<run_id>/                 0700
        control-key                0600, 32 random bytes: the run's HMAC key
        control/<attempt_id>/      0700
            00000000000000000001.event   0600, one canonical-JSON event each
        artifacts/                 the worker's workspace (``workspace.py``)

The key lives beside ``control/``, outside the directory a worker can read (resolution
14); it is made once with link(2), so racing openers agree on one key. Each event is
its own file, published by ``files.write_at`` with link(2): written to a private
temporary file, fsynced, linked to its sequence's name (which fails if the name
exists, so two appenders of one sequence cannot both succeed), the directory fsynced.
A process killed at any point leaves the whole event or none.

Every path component is opened relative to its parent's descriptor with
``O_NOFOLLOW``, on write and on read: a link anywhere is ``SymlinkRejected``.
``read`` verifies every event from the first: the names are exactly 1..N (an event
removed leaves a gap), each file's own sequence is its name's (an event duplicated,
swapped or moved is caught), and its HMAC-SHA256 under the run's key over the attempt
ID, sequence, timestamp, kind and payload (altered content, or a replaced key, is
caught). Any of these is ``JournalInvalid`` and ``read`` returns nothing.

The end is anchored: ``tail`` (0600, beside the events) holds the last sequence with
its HMAC under the run's key, rewritten (atomically) after every append. A reader
and the next append compare it with the events: a tail past the last event means
events were removed from the end (``JournalInvalid``); a tail one behind is the one
window a kill between the event and its tail leaves, accepted (the next append
anchors again); no tail beside one event is that window for the first event. More
events without a tail (its file removed) are ``JournalInvalid`` too, and so are the
journals written before the tail existed until they are anchored, once per deployment
at the upgrade (``anchoring.py``).
What the files alone cannot show is a rollback to an older, consistent copy (an old
tail with the events before it): the progress tailer's stored ``last_sequence``
catches that much (``verify.verify_run``).

The journal is authoritative for attempt state (recovery precedence: the control
journal, then the event WAL, then the inbox WAL); nothing here overrides it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..beneath import NotRegular, open_dir_at, open_dir_beneath, open_file_at
from ..files import write_at
from .codec import SCHEMA_VERSION, marshal_canonical, unmarshal_strict
from .enums import InvokeJobEventKind
from .errors import (
    InvalidArgument,
    JournalInvalid,
    JournalSequenceConflict,
    SizeCapExceeded,
    SymlinkRejected,
    UnsafePermissions,
)
from .ids import AttemptID, RunID, check_id

KEY_FILE = "control-key"
TAIL_FILE = "tail"  # the anchored last sequence, in each attempt's journal directory
KEY_BYTES = 32
CONTROL = "control"
PAYLOAD_LIMIT = 65_536  # 64 KB = 65,536 bytes (resolution 13)
# An event file: the payload, its JSON escaping (at most 6 bytes a byte) and the rest.
EVENT_FILE_LIMIT = 6 * PAYLOAD_LIMIT + 4096
_EVENT_NAME = re.compile(r"(\d{20})\.event")
_PRIVATE_DIR = 0o700
_STALE_SECONDS = 60.0
_PRIVATE_FILE = 0o600


@dataclass(frozen=True)
class InvokeJobEvent:
    """One journal event. ``timestamp`` in UTC nanoseconds; ``hmac`` is hex, set by
    ``append`` (whatever the caller put there is replaced)."""

    sequence: int
    timestamp: int
    event_kind: InvokeJobEventKind
    payload: str = ""
    hmac: str = ""
    schema_version: str = SCHEMA_VERSION


def event_name(sequence: int) -> str:
    return f"{sequence:020d}.event"


def event_mac(key: bytes, attempt_id: str, event: InvokeJobEvent) -> str:
    """HMAC-SHA256 over the attempt ID, sequence, timestamp, kind and payload, each
    length-prefixed so no two different tuples give the same input. The attempt ID is
    ours: the key is per run, and it keeps one attempt's events out of another's."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in (
        attempt_id,
        str(event.sequence),
        str(event.timestamp),
        event.event_kind.name,
        event.payload,
    ):
        raw = part.encode()
        mac.update(len(raw).to_bytes(8, "big") + raw)
    return mac.hexdigest()


def tail_mac(key: bytes, attempt_id: str, last_sequence: int) -> str:
    """HMAC-SHA256 of the tail anchor: the attempt and its last sequence."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in (TAIL_FILE, attempt_id, str(last_sequence)):
        raw = part.encode()
        mac.update(len(raw).to_bytes(8, "big") + raw)
    return mac.hexdigest()


def open_run_dir(state_root: Path, run_id: RunID, *, create: bool) -> int:
    """The descriptor of ``state_root/runs/<run_id>`` (made 0700 when ``create``),
    never through a link."""
    check_id(RunID, run_id)
    if create:  # the state root is configuration: made if absent, private
        Path(state_root).mkdir(mode=_PRIVATE_DIR, parents=True, exist_ok=True)
    try:
        return open_dir_beneath(
            Path(state_root), ("runs", run_id), create=_PRIVATE_DIR if create else None
        )
    except FileNotFoundError:
        raise JournalInvalid(f"there is no state for run {run_id}") from None
    except NotRegular:
        raise SymlinkRejected(f"runs/{run_id}: a symbolic link or not a directory") from None


def read_or_create_key(run_dir: int, *, create: bool) -> bytes:
    """The run's 32-byte key, made once (0600) when ``create`` and absent. A key that
    is a link, not 0600, has other links or is not 32 bytes is refused."""
    if create:
        write_at(run_dir, KEY_FILE, secrets.token_bytes(KEY_BYTES), replace=False)
    try:
        fd = open_file_at(run_dir, KEY_FILE)
    except NotRegular:
        raise SymlinkRejected(f"{KEY_FILE} is a symbolic link or not a file") from None
    except FileNotFoundError:
        raise JournalInvalid(f"the run has no {KEY_FILE}") from None
    try:
        private_file(os.fstat(fd), KEY_FILE)
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != KEY_BYTES:
        raise JournalInvalid(f"{KEY_FILE} holds {len(key)} bytes, not {KEY_BYTES}")
    return key


def private_file(st: os.stat_result, what: str) -> None:
    """A journal file or key: mode 0600 exactly. (A second hard link is no threat
    here, unlike in the workspace: making one needs the 0700 directory's owner, and a
    writer killed between link(2) and unlinking its temporary file leaves one, which
    the next writer's opening removes: ``drop_temporaries``.)"""
    if stat.S_IMODE(st.st_mode) != _PRIVATE_FILE:
        raise UnsafePermissions(f"{what} has mode {stat.S_IMODE(st.st_mode):o}, not 600")


def drop_temporaries(directory: int) -> None:
    """Remove the temporary files killed writers left in ``directory`` (dot names
    ending ``.tmp``, made by ``files.write_at``) once a minute old, so a live writer's
    is never taken from under it: a writer's opening does this, never a reader's."""
    old = time.time() - _STALE_SECONDS
    for name in os.listdir(directory):
        if name.startswith(".") and name.endswith(".tmp"):
            with contextlib.suppress(FileNotFoundError):
                if os.stat(name, dir_fd=directory, follow_symlinks=False).st_mtime < old:
                    os.unlink(name, dir_fd=directory)


def private_dir(fd: int, what: str) -> None:
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    if mode & 0o077:
        raise UnsafePermissions(f"{what} has mode {mode:o}; a journal directory is 700")


class ControlJournal:
    """Open with ``open_control_journal``; ``close`` when done (idempotent)."""

    def __init__(self, directory: int, key: bytes, run_id: RunID, attempt_id: AttemptID) -> None:
        self._dir: int | None = directory
        self._key = key
        self.run_id = run_id
        self.attempt_id = attempt_id

    def close(self) -> None:
        if self._dir is not None:
            os.close(self._dir)
            self._dir = None

    def __enter__(self) -> ControlJournal:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @property
    def _fd(self) -> int:
        if self._dir is None:
            raise InvalidArgument("the control journal is closed")
        return self._dir

    # -- writing -------------------------------------------------------------------------
    def append(self, event: InvokeJobEvent) -> InvokeJobEvent:
        """Write ``event`` (its sequence exactly the last + 1) atomically, with its
        HMAC; returns it as stored. A ``timestamp`` of 0 is now."""
        if event.event_kind is InvokeJobEventKind.UNSPECIFIED or not isinstance(
            event.event_kind, InvokeJobEventKind
        ):
            raise InvalidArgument("a journal event has a kind")
        size = len(event.payload.encode())
        if size > PAYLOAD_LIMIT:
            raise SizeCapExceeded(f"the payload is {size} bytes, over {PAYLOAD_LIMIT}")
        if event.payload:
            try:
                json.loads(event.payload)
            except ValueError as exc:
                raise InvalidArgument(f"the payload is not JSON ({exc})") from exc
        last = self._anchored(self._sequences())
        if last and self.anchored_sequence() != last:
            self._anchor(last)  # a kill's window closed before the next event opens one
        if event.sequence != last + 1:
            raise JournalSequenceConflict(
                f"the journal is at sequence {last}; {event.sequence} is not the next"
            )
        stamped = replace(event, timestamp=event.timestamp or time.time_ns(), hmac="")
        signed = replace(stamped, hmac=event_mac(self._key, self.attempt_id, stamped))
        name = event_name(event.sequence)
        if not write_at(self._fd, name, marshal_canonical(signed), replace=False):
            raise JournalSequenceConflict(f"sequence {event.sequence} was appended meanwhile")
        self._anchor(event.sequence)
        return signed

    def _anchor(self, last: int) -> None:
        """Write the tail anchor at ``last`` (two appenders race only past the event's
        link, which admits one of them per sequence; a later one's tail is higher)."""
        body = json.dumps(
            {"last_sequence": last, "hmac": tail_mac(self._key, self.attempt_id, last)},
            sort_keys=True,
        )
        write_at(self._fd, TAIL_FILE, body.encode())

    def anchored_sequence(self) -> int | None:
        """The tail anchor's last sequence, verified; None when there is no anchor."""
        try:
            fd = open_file_at(self._fd, TAIL_FILE)
        except NotRegular:
            raise SymlinkRejected("the journal's tail is a symbolic link or not a file") from None
        except FileNotFoundError:
            return None
        try:
            private_file(os.fstat(fd), "the journal's tail")
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
        try:
            data = json.loads(raw)
            last, mac = data["last_sequence"], data["hmac"]
            valid = (
                type(last) is int
                and isinstance(mac, str)
                and set(data)
                == {
                    "last_sequence",
                    "hmac",
                }
            )
        except (ValueError, TypeError, KeyError):
            valid = False
        if not valid or not hmac.compare_digest(tail_mac(self._key, self.attempt_id, last), mac):
            raise JournalInvalid(
                "the journal's tail anchor does not verify (altered, or another key)"
            )
        return int(last)

    def _anchored(self, sequences: list[int]) -> int:
        """The last sequence, checked against the tail anchor (module docstring)."""
        last = max(sequences, default=0)
        tail = self.anchored_sequence()
        if tail is None:  # none yet: at most the first event, its tail not yet written
            if last > 1:
                raise JournalInvalid(f"the journal holds {last} events but no tail anchor")
            return last
        if tail > last:
            raise JournalInvalid(
                f"the tail anchor names event {tail} but the journal ends at {last}: "
                "events were removed from its end"
            )
        if tail < last - 1:
            raise JournalInvalid(
                f"the tail anchor names event {tail}, {last - tail} behind the end"
            )
        return last

    def anchor_unanchored(self, ingested: int = 0) -> int | None:
        """Anchor a journal written before the tail existed (record format 9): when it
        has no tail, verify every event (names exactly 1..N, each HMAC) and anchor at
        N, returned; None when a tail is already there (nothing written). N below
        ``ingested`` (what the store's progress read from it) is ``JournalInvalid``:
        its end was cut. Trusting a missing tail is right only for a journal no
        anchoring writer ever touched: call it only through ``storage.routed.anchoring``,
        which runs it once per deployment, before a format-9 runtime first writes."""
        if self.anchored_sequence() is not None:
            return None
        sequences = self._sequences()
        if sequences != list(range(1, len(sequences) + 1)):
            missing = sorted(set(range(1, (sequences or [0])[-1] + 1)) - set(sequences))
            raise JournalInvalid(f"events {missing[:5]} are missing from the journal")
        for seq in sequences:
            self.read_event(seq)
        last = len(sequences)
        if last < ingested:
            raise JournalInvalid(
                f"the journal holds {last} events but {ingested} were ingested: "
                "events were removed from its end"
            )
        if last:
            self._anchor(last)
        return last

    def last_sequence(self) -> int:
        """The highest sequence named in the directory (0 when empty), unverified."""
        return max(self._sequences(), default=0)

    def _sequences(self) -> list[int]:
        found = []
        for name in os.listdir(self._fd):
            if name.startswith(".") or name == TAIL_FILE:
                continue  # a temporary file of an append (or one a kill left behind)
            match = _EVENT_NAME.fullmatch(name)
            if match is None:
                raise JournalInvalid(f"{name!r} is no journal event")
            found.append(int(match.group(1)))
        return sorted(found)

    # -- reading -------------------------------------------------------------------------
    def read(self, from_seq: int = 1) -> list[InvokeJobEvent]:
        """Every event with sequence >= ``from_seq``, in order, after verifying the
        whole journal; ``JournalInvalid`` (nothing returned) if any event was altered,
        removed, duplicated or reordered, or the key does not match."""
        sequences = self._sequences()
        self._anchored(sequences)
        if sequences != list(range(1, len(sequences) + 1)):
            missing = sorted(set(range(1, (sequences or [0])[-1] + 1)) - set(sequences))
            raise JournalInvalid(f"events {missing[:5]} are missing from the journal")
        events = [self.read_event(seq) for seq in sequences]
        return [e for e in events if e.sequence >= from_seq]

    def read_event(self, sequence: int) -> InvokeJobEvent:
        name = event_name(sequence)
        try:
            fd = open_file_at(self._fd, name)
        except NotRegular:
            raise SymlinkRejected(f"event {sequence} is a symbolic link or not a file") from None
        except FileNotFoundError:
            raise JournalInvalid(f"event {sequence} is missing") from None
        try:
            private_file(os.fstat(fd), f"event {sequence}")
            raw = os.read(fd, EVENT_FILE_LIMIT + 1)
        finally:
            os.close(fd)
        event = self.verify(raw)
        if event.sequence != sequence:
            raise JournalInvalid(
                f"the file of event {sequence} holds event {event.sequence} "
                "(duplicated, swapped or moved)"
            )
        return event

    def verify(self, raw: bytes) -> InvokeJobEvent:
        """The event ``raw`` encodes, if it decodes strictly and its HMAC verifies."""
        if len(raw) > EVENT_FILE_LIMIT:
            raise JournalInvalid(f"an event of over {EVENT_FILE_LIMIT} bytes")
        try:
            event = unmarshal_strict(InvokeJobEvent, raw)
        except (InvalidArgument, UnicodeDecodeError) as exc:
            raise JournalInvalid(f"an event does not decode: {exc}") from None
        expected = event_mac(self._key, self.attempt_id, replace(event, hmac=""))
        if not hmac.compare_digest(expected, event.hmac):
            raise JournalInvalid(f"event {event.sequence} fails its HMAC (altered, or another key)")
        if len(event.payload.encode()) > PAYLOAD_LIMIT:
            raise JournalInvalid(f"event {event.sequence} carries an oversized payload")
        return event


def open_control_journal(
    state_root: Path, run_id: RunID, attempt_id: AttemptID, *, create: bool = True
) -> ControlJournal:
    """The journal of ``attempt_id`` under ``state_root/runs/<run_id>/control/``, and
    the run's key; without ``create`` nothing is made (offline verification, a
    backup's copy) and a missing key or directory is ``JournalInvalid``."""
    check_id(AttemptID, attempt_id)
    run_dir = open_run_dir(state_root, run_id, create=create)
    try:
        if create:
            drop_temporaries(run_dir)
        key = read_or_create_key(run_dir, create=create)
        mode = _PRIVATE_DIR if create else None
        try:
            control = _enter(run_dir, CONTROL, mode)
            try:
                private_dir(control, CONTROL)
                directory = _enter(control, attempt_id, mode)
            finally:
                os.close(control)
        except FileNotFoundError:
            raise JournalInvalid(f"run {run_id} has no journal for {attempt_id}") from None
        try:
            private_dir(directory, f"{CONTROL}/{attempt_id}")
            if create:
                drop_temporaries(directory)
        except BaseException:
            os.close(directory)
            raise
    finally:
        os.close(run_dir)
    return ControlJournal(directory, key, run_id, attempt_id)


def journal_attempts(state_root: Path, run_id: RunID) -> list[AttemptID]:
    """The attempts that have a journal directory in the run (for verification)."""
    try:
        run_dir = open_run_dir(state_root, run_id, create=False)
    except JournalInvalid:
        return []
    try:
        control = _enter(run_dir, CONTROL, None)
    except FileNotFoundError:
        return []
    finally:
        os.close(run_dir)
    try:
        return [AttemptID(name) for name in sorted(os.listdir(control)) if AttemptID.valid(name)]
    finally:
        os.close(control)


def _enter(directory: int, name: str, create: int | None) -> int:
    try:
        return open_dir_at(directory, name, create=create)
    except NotRegular:
        raise SymlinkRejected(f"{name} is a symbolic link or not a directory") from None

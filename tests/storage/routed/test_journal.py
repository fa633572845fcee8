"""The control journal: append-only, atomic, authenticated per run; every tamper the
test makes is detected and ``read`` returns nothing; a process killed during ``append``
leaves the whole event or none. Files only: no store involved."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from storage.routed.enums import InvokeJobEventKind
from storage.routed.errors import (
    InvalidArgument,
    JournalInvalid,
    JournalSequenceConflict,
    SizeCapExceeded,
    SymlinkRejected,
    UnsafePermissions,
)
from storage.routed.ids import AttemptID, RunID
from storage.routed.journal import (
    KEY_FILE,
    PAYLOAD_LIMIT,
    TAIL_FILE,
    ControlJournal,
    InvokeJobEvent,
    event_name,
    open_control_journal,
)

KIND = InvokeJobEventKind


@pytest.fixture
def ids() -> tuple[RunID, AttemptID]:
    return RunID.new(), AttemptID.new()


@pytest.fixture
def journal(tmp_path: Path, ids: tuple[RunID, AttemptID]) -> Iterator[ControlJournal]:
    with open_control_journal(tmp_path, *ids) as opened:
        yield opened


def run_dir(tmp_path: Path, journal: ControlJournal) -> Path:
    return tmp_path / "runs" / journal.run_id


def events_dir(tmp_path: Path, journal: ControlJournal) -> Path:
    return run_dir(tmp_path, journal) / "control" / journal.attempt_id


def event(
    seq: int, kind: InvokeJobEventKind = KIND.PROGRESS_REF, payload: str = ""
) -> InvokeJobEvent:
    return InvokeJobEvent(seq, 0, kind, payload or json.dumps({"heartbeat": {"phase": f"p{seq}"}}))


def fill(journal: ControlJournal, n: int = 3) -> list[InvokeJobEvent]:
    return [journal.append(event(seq)) for seq in range(1, n + 1)]


def test_it_appends_and_reads_back_verified_events(journal: ControlJournal) -> None:
    written = [
        journal.append(event(1, KIND.ACCEPTED, "{}")),
        journal.append(event(2, KIND.STARTED, "{}")),
        journal.append(event(3)),
    ]
    assert journal.read() == written
    assert journal.read(from_seq=3) == written[2:]
    assert all(e.timestamp > 0 and len(e.hmac) == 64 for e in written)
    assert journal.last_sequence() == 3


def test_it_keeps_key_files_and_directories_private(
    tmp_path: Path, journal: ControlJournal
) -> None:
    fill(journal, 1)
    run = run_dir(tmp_path, journal)
    assert stat.S_IMODE((run / KEY_FILE).stat().st_mode) == 0o600
    assert (run / KEY_FILE).stat().st_size == 32
    for directory in (run, run / "control", events_dir(tmp_path, journal)):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((events_dir(tmp_path, journal) / event_name(1)).stat().st_mode) == 0o600


def test_the_key_is_per_run_and_shared_by_its_attempts(
    tmp_path: Path, ids: tuple[RunID, AttemptID]
) -> None:
    run_id, first = ids
    second = AttemptID.new()
    with open_control_journal(tmp_path, run_id, first) as a:
        a.append(event(1))
    with open_control_journal(tmp_path, run_id, second) as b:
        b.append(event(1))
        assert len(b.read()) == 1
    assert sorted(p.name for p in (tmp_path / "runs" / run_id / "control").iterdir()) == sorted(
        [first, second]
    )
    # One attempt's event moved into another's journal does not verify: the MAC binds
    # the attempt.
    shutil.copy(
        tmp_path / "runs" / run_id / "control" / first / event_name(1),
        tmp_path / "runs" / run_id / "control" / second / event_name(1),
    )
    with open_control_journal(tmp_path, run_id, second) as b, pytest.raises(JournalInvalid):
        b.read()


# -- append's refusals ----------------------------------------------------------------------
@pytest.mark.parametrize("seq", [0, 2, 5, -1])
def test_append_refuses_a_sequence_that_is_not_the_next(
    tmp_path: Path, journal: ControlJournal, seq: int
) -> None:
    with pytest.raises(JournalSequenceConflict):
        journal.append(event(seq))
    assert list(events_dir(tmp_path, journal).iterdir()) == []


def test_append_refuses_a_duplicate_sequence(journal: ControlJournal) -> None:
    fill(journal, 2)
    with pytest.raises(JournalSequenceConflict):
        journal.append(event(2))
    assert journal.last_sequence() == 2


def test_of_two_appenders_of_one_sequence_exactly_one_wins(
    tmp_path: Path, ids: tuple[RunID, AttemptID]
) -> None:
    with open_control_journal(tmp_path, *ids) as a, open_control_journal(tmp_path, *ids) as b:
        a.append(event(1))
        # ``b`` read the directory before ``a`` wrote: it still means sequence 1.
        b.last_sequence = lambda: 0  # type: ignore[method-assign]
        with pytest.raises(JournalSequenceConflict):
            b.append(event(1, payload='{"other": true}'))
        assert [e.payload for e in a.read()] == [event(1).payload]


def test_append_takes_a_65536_byte_payload_and_refuses_one_more(
    tmp_path: Path, journal: ControlJournal
) -> None:
    exact = json.dumps("x" * (PAYLOAD_LIMIT - 2))
    assert len(exact.encode()) == PAYLOAD_LIMIT
    journal.append(event(1, payload=exact))
    with pytest.raises(SizeCapExceeded):
        journal.append(event(2, payload=json.dumps("x" * (PAYLOAD_LIMIT - 1))))
    assert [e.payload for e in journal.read()] == [exact]


@pytest.mark.parametrize(
    "bad", [event(1, KIND.UNSPECIFIED), InvokeJobEvent(1, 0, KIND.STARTED, "not json")]
)
def test_append_refuses_an_event_without_a_kind_or_with_a_payload_that_is_not_json(
    tmp_path: Path, journal: ControlJournal, bad: InvokeJobEvent
) -> None:
    with pytest.raises(InvalidArgument):
        journal.append(bad)
    assert list(events_dir(tmp_path, journal).iterdir()) == []


# -- tampering ------------------------------------------------------------------------------
def rewrite(path: Path, change: Callable[[dict[str, object]], None]) -> None:
    doc = json.loads(path.read_bytes())
    change(doc)
    path.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")))


def flip_char(text: str, at: int) -> str:
    swapped = "0" if text[at] != "0" else "1"
    return text[:at] + swapped + text[at + 1 :]


TAMPERS: dict[str, Callable[[Path], None]] = {
    "a payload byte flipped": lambda d: rewrite(
        d / event_name(2), lambda e: e.update(payload=str(e["payload"]).replace("p2", "p9"))
    ),
    "an HMAC byte flipped": lambda d: rewrite(
        d / event_name(2), lambda e: e.update(hmac=flip_char(str(e["hmac"]), 10))
    ),
    "the sequence changed in the file": lambda d: rewrite(
        d / event_name(2), lambda e: e.update(sequence=4)
    ),
    "the timestamp changed": lambda d: rewrite(
        d / event_name(2), lambda e: e.update(timestamp=int(str(e["timestamp"])) + 1)
    ),
    "the kind changed": lambda d: rewrite(
        d / event_name(2), lambda e: e.update(event_kind="SUCCEEDED")
    ),
    "a raw byte flipped": lambda d: (d / event_name(2)).write_bytes(
        bytes([(d / event_name(2)).read_bytes()[0] ^ 0x01]) + (d / event_name(2)).read_bytes()[1:]
    ),
    "an event deleted": lambda d: (d / event_name(2)).unlink(),
    "the first event deleted": lambda d: (d / event_name(1)).unlink(),
    "an event duplicated over the next": lambda d: shutil.copy(
        d / event_name(2), d / event_name(3)
    ),
    "an event duplicated at the end": lambda d: shutil.copy(d / event_name(2), d / event_name(4)),
    "two events swapped": lambda d: (
        os.rename(d / event_name(1), d / "swap"),
        os.rename(d / event_name(2), d / event_name(1)),
        os.rename(d / "swap", d / event_name(2)),
    ),
    "an event renamed past the end": lambda d: os.rename(d / event_name(3), d / event_name(5)),
    "a foreign file added": lambda d: (d / "notes.txt").write_text("hi"),
    # The end is anchored (TAIL_FILE): removing the last events is seen too.
    "the last event deleted": lambda d: (d / event_name(3)).unlink(),
    "the last two events deleted": lambda d: (
        (d / event_name(3)).unlink(),
        (d / event_name(2)).unlink(),
    ),
    "the tail anchor deleted": lambda d: (d / TAIL_FILE).unlink(),
    "the tail anchor moved back with the last event": lambda d: (
        (d / event_name(3)).unlink(),
        rewrite(d / TAIL_FILE, lambda e: e.update(last_sequence=2)),
    ),
}


@pytest.mark.parametrize("tamper", TAMPERS.values(), ids=TAMPERS.keys())
def test_read_detects_tampering_and_returns_nothing(
    tmp_path: Path, journal: ControlJournal, tamper: Callable[[Path], None]
) -> None:
    fill(journal)
    directory = events_dir(tmp_path, journal)
    for f in directory.iterdir():
        f.chmod(0o600)
    tamper(directory)
    for f in directory.iterdir():
        f.chmod(0o600)  # rewritten files keep the mode; the tamper is the content
    with pytest.raises(JournalInvalid):
        journal.read()
    with pytest.raises(JournalInvalid):
        journal.read(from_seq=3)


def test_read_detects_a_replaced_key(
    tmp_path: Path, journal: ControlJournal, ids: tuple[RunID, AttemptID]
) -> None:
    fill(journal)
    key = run_dir(tmp_path, journal) / KEY_FILE
    key.unlink()
    key.write_bytes(os.urandom(32))
    key.chmod(0o600)
    with open_control_journal(tmp_path, *ids) as reopened, pytest.raises(JournalInvalid):
        reopened.read()


def test_it_refuses_a_key_readable_by_others(
    tmp_path: Path, journal: ControlJournal, ids: tuple[RunID, AttemptID]
) -> None:
    (run_dir(tmp_path, journal) / KEY_FILE).chmod(0o644)
    with pytest.raises(UnsafePermissions):
        open_control_journal(tmp_path, *ids)


def test_it_refuses_an_event_file_made_readable_by_others(
    tmp_path: Path, journal: ControlJournal
) -> None:
    fill(journal)
    (events_dir(tmp_path, journal) / event_name(2)).chmod(0o644)
    with pytest.raises(UnsafePermissions):
        journal.read()


@pytest.mark.parametrize("where", ["key", "attempt directory", "control directory"])
def test_it_refuses_symlinks_on_the_path_on_write_and_read(
    tmp_path: Path, journal: ControlJournal, ids: tuple[RunID, AttemptID], where: str
) -> None:
    fill(journal, 2)
    run = run_dir(tmp_path, journal)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(run, elsewhere)
    target = {
        "key": run / KEY_FILE,
        "attempt directory": events_dir(tmp_path, journal),
        "control directory": run / "control",
    }[where]
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink()
    target.symlink_to(elsewhere / target.relative_to(run))
    with pytest.raises(SymlinkRejected):
        open_control_journal(tmp_path, *ids)  # to append or to read: the same opening
    with pytest.raises(SymlinkRejected):
        open_control_journal(tmp_path, *ids, create=False)


def test_it_refuses_a_symlinked_event_on_read_and_never_writes_through_one(
    tmp_path: Path, journal: ControlJournal
) -> None:
    fill(journal, 2)
    outside = tmp_path / "outside.json"
    outside.write_text("untouched")
    # A link planted at the next event's name: append links its file beside it,
    # never opening the name, so the target is never written.
    (events_dir(tmp_path, journal) / event_name(3)).symlink_to(outside)
    with pytest.raises(JournalSequenceConflict):
        journal.append(event(3))
    journal.append(event(4))
    assert outside.read_text() == "untouched"
    with pytest.raises(SymlinkRejected):
        journal.read()


def test_opening_without_create_makes_nothing(tmp_path: Path, ids: tuple[RunID, AttemptID]) -> None:
    (tmp_path / "runs").mkdir()
    with pytest.raises(JournalInvalid):
        open_control_journal(tmp_path, *ids, create=False)
    assert list((tmp_path / "runs").iterdir()) == []


# -- death during append ----------------------------------------------------------------------
def appender(tmp_path: Path, ids: tuple[RunID, AttemptID], die: Callable[[], None] | None) -> None:
    """In a forked child: append 64 KiB events until killed; never returns."""
    try:
        with open_control_journal(tmp_path, *ids) as j:
            while True:
                seq = j.last_sequence() + 1
                if die is not None and seq == 3:
                    die()
                j.append(event(seq, payload=json.dumps("y" * 60_000)))
    finally:
        os._exit(1)


def check_whole(tmp_path: Path, ids: tuple[RunID, AttemptID]) -> int:
    with open_control_journal(tmp_path, *ids) as j:
        events = j.read()  # verifies every event: a torn one would fail here
        assert [e.sequence for e in events] == list(range(1, len(events) + 1))
        return len(events)


def test_a_process_killed_at_random_during_append_leaves_whole_events(
    tmp_path: Path, ids: tuple[RunID, AttemptID]
) -> None:
    rng = random.Random(17)  # noqa: S311 - kill timings, not secrets
    seen = 0
    for _ in range(25):
        pid = os.fork()
        if pid == 0:
            appender(tmp_path, ids, None)
        time.sleep(rng.uniform(0.005, 0.05))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        count = check_whole(tmp_path, ids)
        assert count >= seen  # nothing once whole is ever lost
        seen = count
    with open_control_journal(tmp_path, *ids) as j:  # and the journal goes on
        j.append(event(seen + 1))
    assert check_whole(tmp_path, ids) == seen + 1


@pytest.mark.parametrize("step", ["write", "fsync", "link", "dir fsync"])
def test_a_process_killed_at_each_step_of_append_leaves_the_whole_event_or_none(
    tmp_path: Path, ids: tuple[RunID, AttemptID], step: str
) -> None:
    """Deterministic: the child kills itself at one step of ``write_at`` while
    appending event 3 (temporary file written, fsynced, linked, directory fsynced)."""

    def die_at_step() -> None:
        import storage.files as files

        kill = lambda *_: os.kill(os.getpid(), signal.SIGKILL)  # noqa: E731
        if step == "write":
            real_fsync = files.fsync_open
            files.fsync_open = lambda f: (f.flush(), kill())  # type: ignore[assignment,func-returns-value]
            del real_fsync
        elif step == "fsync":
            real = files.fsync_open
            files.fsync_open = lambda f: (real(f), kill())  # type: ignore[assignment,func-returns-value]
        elif step == "link":
            real_link = os.link
            os.link = lambda *a, **k: (real_link(*a, **k), kill())  # type: ignore[assignment]
        else:
            real_fsync_fd = os.fsync
            os.fsync = lambda fd: (  # type: ignore[assignment]
                kill() if stat.S_ISDIR(os.fstat(fd).st_mode) else real_fsync_fd(fd)
            )

    pid = os.fork()
    if pid == 0:
        appender(tmp_path, ids, die_at_step)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    assert os.WTERMSIG(status) == signal.SIGKILL
    count = check_whole(tmp_path, ids)
    assert count == (3 if step in ("link", "dir fsync") else 2)
    with open_control_journal(tmp_path, *ids) as j:
        j.append(event(count + 1))  # a stray temporary file blocks nothing
    assert check_whole(tmp_path, ids) == count + 1


def test_an_append_after_the_last_event_was_removed_is_refused(
    tmp_path: Path, journal: ControlJournal
) -> None:
    """Publishing the removed sequence again would hide the removal."""
    fill(journal)
    (events_dir(tmp_path, journal) / event_name(3)).unlink()
    with pytest.raises(JournalInvalid, match="removed from its end"):
        journal.append(event(3))


def test_a_kill_between_an_event_and_its_tail_is_read_and_anchored_again(
    tmp_path: Path, journal: ControlJournal
) -> None:
    """The one window a kill leaves: the event published, the tail one behind."""
    fill(journal, 2)
    directory = events_dir(tmp_path, journal)
    before = (directory / TAIL_FILE).read_bytes()
    journal.append(event(3))
    (directory / TAIL_FILE).write_bytes(before)  # as if killed before the tail moved
    assert [e.sequence for e in journal.read()] == [1, 2, 3]
    journal.append(event(4))
    assert journal.anchored_sequence() == 4
    assert [e.sequence for e in journal.read()] == [1, 2, 3, 4]

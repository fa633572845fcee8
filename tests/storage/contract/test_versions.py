"""The record-version log (``storage.versions``, issue 32): every writing transaction
appends each changed record's state before it, stamped with its store version, time,
first Event and lease; the past is read back from it (``record_as_of``,
``version_changes``, ``version_at``) and pruned by age under a horizon.

The differential property at the end is the log's definition: replaying it to any
version gives the state a fresh store reaches by the same transactions up to there."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from storage import (
    PRUNE_BATCH,
    ExecutionState,
    Fenced,
    Invalid,
    NotFound,
    ReadOnly,
    RecordAt,
    Store,
    Tx,
    WorkState,
    view,
)
from storage.memory import MemoryStore

from ..support import (
    CLOCK_START,
    FakeClock,
    fails,
    make_event,
    make_execution,
    make_scope,
    make_timer,
    make_work,
    raises,
    start_attempt,
    tx,
)
from ._helpers import terminate

SECOND = 1_000_000_000


def _version(store: Store) -> int:
    return tx(store, lambda t: t.store_version())


def test_each_changed_record_gets_one_row_with_its_state_before(
    store: Store, clock: FakeClock
) -> None:
    """A transaction that writes a record several times logs it once, as it was before
    the transaction; a created record's row holds None; reads change nothing."""
    tx(store, lambda t: t.put_work(make_work("w1")))
    first = _version(store)
    created = tx(store, lambda t: t.work("w1"))

    def twice(t: Tx) -> None:
        t.put_work(replace(t.work("w1"), state=WorkState.CANCELLED))
        t.put_scope(make_scope("s1"))
        t.kv_put("ns", "k", b"one")
        t.kv_put("ns", "k", b"two")

    tx(store, twice)
    second = _version(store)
    assert second == first + 1
    rows = tx(store, lambda t: t.version_changes(after=first))
    assert [(r.version, r.kind, r.id, r.key) for r in rows] == [
        (second, "kv", "ns", "k"),
        (second, "scope", "s1", ""),
        (second, "work", "w1", ""),
    ]
    assert [r.before for r in rows] == [None, None, created]
    assert all(r.at == rows[0].at and r.event_sequence == 0 for r in rows)
    assert all(r.execution_id == "" for r in rows)
    tx(store, lambda t: (t.work("w1"), t.kv_get("ns", "k")))  # a read-only transaction
    assert tx(store, lambda t: t.version_changes(after=second)) == []
    assert [r.version for r in tx(store, lambda t: t.record_versions("work", "w1"))] == [
        first,
        second,
    ]


def test_rows_name_the_first_event_and_the_lease(store: Store, clock: FakeClock) -> None:
    lease = start_attempt(store, work_id="w1", execution_id="x1")

    def under_lease(t: Tx) -> None:
        t.kv_put("progress", "w1", b"half")

    tx(store, under_lease, lease=lease)
    leased = tx(store, lambda t: t.record_versions("kv", "progress", "w1"))
    assert [(r.execution_id, r.event_sequence) for r in leased] == [("x1", 0)]

    def routed(t: Tx) -> None:
        stored, _ = t.accept_event(make_event("e1", work_id="w1"))
        t.accept_event(make_event("e2", work_id="w1"))
        t.put_scope(make_scope("s9"))
        t.mark_routed(stored.event.id, "w1", "routed")

    tx(store, routed)
    e1 = tx(store, lambda t: t.event("e1")).sequence
    row = tx(store, lambda t: t.record_versions("scope", "s9"))[0]
    assert (row.event_sequence, row.execution_id) == (e1, "")


def test_a_record_as_of_each_version(store: Store, clock: FakeClock) -> None:
    """Work, attempt, Timer (deleted and re-created) and KV as they were at every
    version, and now; a version before the record existed reads None."""
    start = _version(store)
    lease = start_attempt(store, work_id="w1", execution_id="x1")
    v_claimed = _version(store)
    tx(store, lambda t: t.put_timer(make_timer("t1", t.now + 60 * SECOND, work_id="w1")))
    v_armed = _version(store)
    timer = tx(store, lambda t: t.timer("t1"))
    tx(store, lambda t: t.delete_timer("t1", t.timer("t1").revision))
    v_deleted = _version(store)
    tx(store, lambda t: terminate(t, "x1", ExecutionState.COMPLETED, WorkState.COMPLETED))
    v_done = _version(store)
    tx(store, lambda t: t.put_timer(make_timer("t1", t.now + SECOND, work_id="w1")))
    del lease

    def at(kind: Any, id: str, version: int, key: str = "") -> Any:
        found = tx(store, lambda t: t.record_as_of(kind, id, version, key))
        assert found.known
        return found.record

    assert at("work", "w1", start) is None
    assert at("work", "w1", v_claimed).state is WorkState.RUNNING
    assert at("execution", "x1", v_claimed).state is ExecutionState.RUNNING
    assert at("execution", "x1", v_deleted).state is ExecutionState.RUNNING
    assert at("execution", "x1", v_done).state is ExecutionState.COMPLETED
    assert at("work", "w1", v_done).state is WorkState.COMPLETED
    assert at("timer", "t1", v_claimed) is None
    assert at("timer", "t1", v_armed) == timer
    assert at("timer", "t1", v_deleted) is None
    now = tx(store, lambda t: t.timer("t1"))
    assert at("timer", "t1", _version(store)) == now
    assert at("timer", "t1", 10**12) == now  # a version not reached yet: the present
    assert at("kv", "ns", v_done, "never") is None


def _skip_to_version(store: Store, version: int) -> None:
    """Move the store's version counter on, as if ``version`` writing transactions had
    committed (the double's state, the ORM's clock row): the log's positions of later
    ones pass 2**39, the largest version, at version 32,768."""
    if isinstance(store, MemoryStore):
        store._state.version = version
        return
    from django.db import connections

    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT value FROM conduit_meta WHERE key = 'clock'")
        now = cursor.fetchone()[0].split()[0]
        cursor.execute(
            "UPDATE conduit_meta SET value = %s WHERE key = 'clock'", [f"{now} {version}"]
        )


def test_pages_resume_after_positions_past_the_largest_version(
    store: Store, clock: FakeClock
) -> None:
    """A cursor is a position, which passes the largest version (2**39 - 1) once the
    store passes version 32,768: it is bounded as a position, never as a version, or
    the next page would start over."""
    _skip_to_version(store, 40_000)
    tx(store, lambda t: t.put_work(make_work("w1")))
    for n in range(3):
        tx(
            store,
            lambda t, n=n: [
                t.kv_put("ns", "k", b"%d" % n),
                t.put_timer(make_timer(f"t{n}", t.now + SECOND, work_id="w1")),
            ],
        )
    everything = tx(store, lambda t: t.version_changes(after=40_000))
    assert len(everything) == 7  # the Work, then three KV entries and Timers
    assert everything[0].position > 2**39
    of_w1 = [r for r in everything if r.work_id == "w1"]
    for read, expected in (
        (lambda t, s: t.version_changes(after=40_000, start=s, limit=2), everything),
        (lambda t, s: t.work_versions("w1", start=s, limit=2), of_w1),
    ):
        pages: list[Any] = []
        start = 0
        while page := tx(store, lambda t, s=start, read=read: read(t, s)):
            pages += page
            start = page[-1].position
            assert len(pages) <= len(expected), "a page started over"
        assert pages == expected


def test_changes_page_by_position_between_two_versions(store: Store, clock: FakeClock) -> None:
    before = _version(store)
    for n in range(5):
        tx(store, lambda t, n=n: [t.kv_put("ns", f"k{n}", b"x"), t.kv_put("ns", "all", b"%d" % n)])
    last = _version(store)
    rows = tx(store, lambda t: t.version_changes(after=before, upto=last))
    assert len(rows) == 10
    assert [r.position for r in rows] == sorted(r.position for r in rows)
    pages: list[Any] = []
    start = 0
    while True:
        page = tx(store, lambda t, s=start: t.version_changes(after=before, start=s, limit=3))
        if not page:
            break
        pages += page
        start = page[-1].position
    assert pages == rows
    middle = tx(store, lambda t: t.version_changes(after=before + 1, upto=before + 3))
    assert {r.version for r in middle} == {before + 2, before + 3}
    newest = tx(store, lambda t: t.record_versions("kv", "ns", "all", newest_first=True, limit=2))
    assert [r.before for r in newest] == [b"3", b"2"]
    bounded = tx(
        store, lambda t: t.record_versions("kv", "ns", "all", after=before + 1, upto=last - 1)
    )
    assert [r.before for r in bounded] == [b"0", b"1", b"2"]


def test_a_works_changes_and_the_work_as_of_a_version(store: Store, clock: FakeClock) -> None:
    """``work_versions`` gives the rows of the Work's own records only, in order and
    bounded; ``work_as_of`` its attempts, Waits and Timers then, and says when the
    version is older than the horizon."""
    start_attempt(store, work_id="w1", execution_id="x1")
    start_attempt(store, work_id="w2", execution_id="x2")
    claimed = _version(store)
    tx(store, lambda t: t.put_timer(make_timer("t1", t.now + 60 * SECOND, work_id="w1")))
    tx(store, lambda t: terminate(t, "x1", ExecutionState.FAILED, WorkState.READY))
    tx(store, lambda t: t.kv_put("ns", "w1", b"not the Work's"))
    rows = tx(store, lambda t: t.work_versions("w1"))
    assert {(r.kind, r.id) for r in rows} == {("work", "w1"), ("execution", "x1"), ("timer", "t1")}
    assert all(r.work_id == "w1" for r in rows)
    assert [r.position for r in rows] == sorted(r.position for r in rows)
    later = tx(store, lambda t: t.work_versions("w1", after=claimed))
    assert [(r.kind, r.before is None) for r in later] == [
        ("timer", True),
        ("execution", False),
        ("work", False),
    ]
    assert tx(store, lambda t: t.work_versions("w1", after=claimed, limit=1)) == later[:1]
    paged = tx(store, lambda t: t.work_versions("w1", start=later[0].position))
    assert paged == later[1:]
    then = tx(store, lambda t: t.work_as_of("w1", claimed))
    assert then.work.state is WorkState.RUNNING
    assert [x.state for x in then.executions] == [ExecutionState.RUNNING]
    assert then.timers == []
    assert then.waits == []
    last = _version(store)
    now = tx(store, lambda t: t.work_as_of("w1", last))
    assert now.work.state is WorkState.READY
    assert [t.id for t in now.timers] == ["t1"]
    assert tx(store, lambda t: t.work_as_of("w1", 0)).work is None
    later = tx(store, lambda t: t.later_versions("execution", [("x1", claimed), ("x2", last)]))
    assert list(later) == ["x1"]
    assert later["x1"].before.state is ExecutionState.RUNNING
    assert later["x1"].version > claimed
    fails(store, Invalid, lambda t: t.later_versions("kv", [("ns", 0)]), "KV later versions")
    fails(store, Invalid, lambda t: t.later_versions("work", [("w", 0)] * 1001), "too many")
    fails(store, Invalid, lambda t: t.later_versions("work", [("", 0)]), "empty ID")
    fails(store, Invalid, lambda t: t.work_versions(""), "empty Work ID")
    fails(store, Invalid, lambda t: t.work_as_of("w1", -1), "negative version")
    while tx(store, lambda t: t.prune_versions(2**62)):
        pass
    gone = tx(store, lambda t: t.work_as_of("w1", claimed))
    assert (gone.known, gone.work) == (False, None)


def test_version_at_a_time(store: Store, clock: FakeClock) -> None:
    times = []
    for n in range(3):
        clock.advance(10)
        tx(store, lambda t, n=n: t.kv_put("ns", "k", b"%d" % n))
        times.append((clock(), _version(store)))
    for at, version in times:
        assert tx(store, lambda t, at=at: t.version_at(at)) == version
        assert tx(store, lambda t, at=at: t.version_at(at + 5 * SECOND)) == version
    assert tx(store, lambda t: t.version_at(times[0][0] - 1)) == times[0][1] - 1
    assert tx(store, lambda t: t.version_at(2**63 - 1)) == _version(store)


def test_pruning_cuts_the_oldest_rows_and_raises_the_horizon(
    store: Store, clock: FakeClock
) -> None:
    for n in range(4):
        tx(store, lambda t, n=n: t.kv_put("ns", "k", b"%d" % n))
        clock.advance(60)
    versions = [r.version for r in tx(store, lambda t: t.record_versions("kv", "ns", "k"))]
    cutoff = tx(store, lambda t: t.record_versions("kv", "ns", "k"))[2].at  # keeps 2 and 3
    assert tx(store, lambda t: t.version_horizon()) == 0
    assert tx(store, lambda t: t.prune_versions(cutoff, 1)) == 1
    assert tx(store, lambda t: t.version_horizon()) == versions[0]
    assert tx(store, lambda t: t.prune_versions(cutoff)) == 1
    assert tx(store, lambda t: t.prune_versions(cutoff)) == 0
    horizon = tx(store, lambda t: t.version_horizon())
    assert horizon == versions[1]
    kept = tx(store, lambda t: t.record_versions("kv", "ns", "k"))
    assert [r.version for r in kept] == versions[2:]
    gone = tx(store, lambda t: t.record_as_of("kv", "ns", horizon - 1, "k"))
    assert gone == RecordAt(None, known=False)
    assert tx(store, lambda t: t.record_as_of("kv", "ns", horizon, "k")) == RecordAt(b"1")
    assert tx(store, lambda t: t.record_as_of("kv", "ns", versions[3], "k")) == RecordAt(b"3")


def test_a_namespace_as_of_a_version_lists_the_keys_that_were_there(
    store: Store, clock: FakeClock
) -> None:
    """``kv_list_as_of``: keys deleted since are listed with their value then, keys
    created since are not, changed ones read as they were; the prefix, cursor and
    limit page it as ``kv_list`` pages now, also across keys created since."""
    tx(store, lambda t: [t.kv_put("ns", k, k.encode()) for k in ("a", "b/1", "b/2", "c")])
    then = _version(store)
    tx(store, lambda t: [t.kv_delete("ns", "b/1"), t.kv_put("ns", "c", b"changed")])
    # Keys created since, around and among the old ones: a page of two must read on.
    tx(store, lambda t: [t.kv_put("ns", k, b"new") for k in ("a0", "a1", "a2", "b/0", "b/15")])
    tx(store, lambda t: t.kv_put("other", "a", b"elsewhere"))
    now = [("a", b"a"), ("a0", b"new"), ("a1", b"new"), ("a2", b"new"), ("b/0", b"new")]
    assert tx(store, lambda t: t.kv_list("ns"))[:5] == now

    def as_of(prefix: str = "", after: str = "", limit: int = 0) -> list[tuple[str, bytes]]:
        got = tx(store, lambda t: t.kv_list_as_of("ns", then, prefix, after, limit))
        assert got.known
        return got.entries

    assert as_of() == [("a", b"a"), ("b/1", b"b/1"), ("b/2", b"b/2"), ("c", b"c")]
    assert as_of(limit=2) == [("a", b"a"), ("b/1", b"b/1")]
    assert as_of(after="a", limit=2) == [("b/1", b"b/1"), ("b/2", b"b/2")]
    assert as_of(after="b/2", limit=2) == [("c", b"c")]
    assert as_of("b/") == [("b/1", b"b/1"), ("b/2", b"b/2")]
    assert as_of("b/", after="b/1", limit=1) == [("b/2", b"b/2")]
    assert as_of("z") == []
    latest = _version(store)
    assert tx(store, lambda t: t.kv_list_as_of("ns", latest).entries) == tx(
        store, lambda t: t.kv_list("ns")
    )
    assert tx(store, lambda t: t.kv_list_as_of("ns", then - 1).entries) == []
    assert tx(store, lambda t: t.kv_list_as_of("never", then).entries) == []


def test_a_namespace_before_the_horizon_is_not_known(store: Store, clock: FakeClock) -> None:
    for n in range(3):
        tx(store, lambda t, n=n: t.kv_put("ns", "k", b"%d" % n))
        clock.advance(60)
    cutoff = tx(store, lambda t: t.record_versions("kv", "ns", "k"))[2].at
    while tx(store, lambda t: t.prune_versions(cutoff)):
        pass
    horizon = tx(store, lambda t: t.version_horizon())
    gone = tx(store, lambda t: t.kv_list_as_of("ns", horizon - 1))
    assert (gone.entries, gone.known) == ([], False)
    kept = tx(store, lambda t: t.kv_list_as_of("ns", horizon))
    assert (kept.entries, kept.known) == ([("k", b"1")], True)


def test_a_namespace_as_of_refuses_what_kv_list_refuses(store: Store, clock: FakeClock) -> None:
    for what, op in [
        ("empty namespace", lambda t: t.kv_list_as_of("", 1)),
        ("prefix with NUL", lambda t: t.kv_list_as_of("ns", 1, "\x00")),
        ("cursor past a key's bytes", lambda t: t.kv_list_as_of("ns", 1, after="k" * 1025)),
        ("negative limit", lambda t: t.kv_list_as_of("ns", 1, limit=-1)),
        ("negative version", lambda t: t.kv_list_as_of("ns", -1)),
        ("version not an integer", lambda t: t.kv_list_as_of("ns", "1")),  # type: ignore[arg-type]
    ]:
        fails(store, Invalid, op, f"kv_list_as_of: {what}")


def test_pruning_is_a_control_plane_write(store: Store, clock: FakeClock) -> None:
    lease = start_attempt(store)
    fails(store, Fenced, lambda t: t.prune_versions(2**62), "prune under a lease", lease=lease)
    raises(
        ReadOnly, lambda: view(store, None, lambda t: t.prune_versions(2**62)), "prune in a View"
    )
    for limit in (0, PRUNE_BATCH + 1, True, 1.5):
        fails(store, Invalid, lambda t, n=limit: t.prune_versions(2**62, n), f"limit {limit!r}")
    assert len(tx(store, lambda t: t.version_changes())) == 2  # nothing was pruned


def test_bad_arguments_are_invalid(store: Store, clock: FakeClock) -> None:
    for what, op in [
        ("unknown kind", lambda t: t.record_versions("event", "e1")),
        ("key on a record", lambda t: t.record_versions("work", "w1", "k")),
        ("KV without a key", lambda t: t.record_as_of("kv", "ns", 0)),
        ("empty ID", lambda t: t.record_versions("work", "")),
        ("negative after", lambda t: t.version_changes(after=-1)),
        ("negative version", lambda t: t.record_as_of("work", "w1", -1)),
        ("text limit", lambda t: t.version_changes(limit="3")),
        ("bool time", lambda t: t.version_at(True)),
    ]:
        fails(store, Invalid, op, what)
    huge = tx(store, lambda t: t.version_changes(after=2**70, upto=2**80))
    assert huge == []
    assert tx(store, lambda t: t.record_as_of("work", "w1", 2**64)) == RecordAt(None)


def test_a_store_without_the_log_writes_none(store: Store, clock: FakeClock) -> None:
    store.version_log = False  # type: ignore[attr-defined]
    tx(store, lambda t: [t.put_work(make_work("w1")), t.kv_put("ns", "k", b"v")])
    assert tx(store, lambda t: t.version_changes()) == []
    assert tx(store, lambda t: t.kv_get("ns", "k")) == b"v"


# -- the differential property ------------------------------------------------------


@dataclass
class Model:
    """What the generated program has made so far, so each step is a valid one."""

    prefix: str
    works: dict[str, str] = field(default_factory=dict)  # ID -> "ready"/"running"/"done"
    attempts: dict[str, str] = field(default_factory=dict)  # Work ID -> running attempt
    timers: set[str] = field(default_factory=set)
    scopes: set[str] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)
    made: set[tuple[str, str, str]] = field(default_factory=set)  # (kind, ID, key)
    serial: itertools.count[int] = field(default_factory=itertools.count)

    def name(self, what: str) -> str:
        return f"{self.prefix}-{what}{next(self.serial)}"


Step = Callable[[Tx], None]
OPS = ("work", "claim", "finish", "timer", "untimer", "scope", "kv", "unkv")


def _step(model: Model, op: str, pick: int, data: bytes) -> Step | None:
    """One valid operation of kind ``op`` on the model's records (``pick`` chooses
    which), or None when none applies; the model is updated as if it committed."""

    def one(items: Any) -> Any:
        ordered = sorted(items)
        return ordered[pick % len(ordered)] if ordered else None

    if op == "work":
        id = model.name("w")
        model.works[id] = "ready"
        model.made.add(("work", id, ""))
        return lambda t: t.put_work(make_work(id))
    if op == "claim":
        id = one(w for w, state in model.works.items() if state == "ready")
        if id is None:
            return None
        x = model.name("x")
        model.works[id], model.attempts[id] = "running", x
        model.made.add(("execution", x, ""))
        return lambda t: [
            t.put_execution(make_execution(x, id, 1)),
            t.claim(x, "runner", t.now + 3600 * SECOND),
        ]
    if op == "finish":
        id = one(w for w, state in model.works.items() if state == "running")
        if id is None:
            return None
        x = model.attempts.pop(id)
        model.works[id] = "done"
        return lambda t: terminate(t, x, ExecutionState.COMPLETED, WorkState.COMPLETED)
    if op == "timer":
        fire = CLOCK_START + (pick % 7 + 1) * 3600 * SECOND
        if model.timers and pick % 2:  # reschedule a live Timer, or move it to a Work
            id = one(model.timers)
            other = one(w for w, state in model.works.items() if state != "done")
            work = other if pick % 4 == 3 and other else None
            return lambda t: t.put_timer(
                replace(t.timer(id), fire_at=fire, work_id=work or t.timer(id).work_id)
            )
        id = model.name("t")
        work = one(w for w, state in model.works.items() if state != "done")
        model.timers.add(id)
        model.made.add(("timer", id, ""))
        return lambda t: t.put_timer(make_timer(id, fire, work_id=work or ""))
    if op == "untimer":
        id = one(model.timers)
        if id is None:
            return None
        model.timers.discard(id)
        return lambda t: t.delete_timer(id, t.timer(id).revision)
    if op == "scope":
        name = data.hex() or "scope"
        if model.scopes and pick % 2:  # rename one
            id = one(model.scopes)
            return lambda t: t.put_scope(replace(t.scope(id), name=name))
        id = model.name("s")
        model.scopes.add(id)
        model.made.add(("scope", id, ""))
        return lambda t: t.put_scope(replace(make_scope(id), name=name))
    if op == "kv":
        key = one(model.keys) if model.keys and pick % 2 else model.name("k")
        model.keys.add(key)
        model.made.add(("kv", model.prefix, key))
        return lambda t: t.kv_put(model.prefix, key, data)
    key = one(model.keys)
    if key is None:
        return None
    model.keys.discard(key)
    return lambda t: t.kv_delete(model.prefix, key)


def _state(
    store: Store, made: set[tuple[str, str, str]], namespace: str
) -> dict[tuple[str, str, str], Any]:
    """Every record the program made, as ``store`` holds it now (None: absent), each
    Work's records as ``work_as_of`` gives them (``("of", Work ID, "")``), and the
    program's KV namespace listed (``("list", namespace, "")``)."""

    def read(t: Tx) -> dict[tuple[str, str, str], Any]:
        out: dict[tuple[str, str, str], Any] = {("list", namespace, ""): t.kv_list(namespace)}
        for kind, id, _ in sorted(made):
            if kind == "work":
                try:
                    work = t.work(id)
                except NotFound:
                    out[("of", id, "")] = None
                    continue
                attempts = sorted(t.executions(id), key=lambda x: x.attempt)
                out[("of", id, "")] = (work, attempts, t.waits(id), t.timers(id))
        for kind, id, key in sorted(made):
            try:
                out[(kind, id, key)] = t.kv_get(id, key) if kind == "kv" else getattr(t, kind)(id)
            except NotFound:
                out[(kind, id, key)] = None
        return out

    return view(store, None, read)


_serial = itertools.count()
PROGRAMS = st.lists(
    st.lists(
        st.tuples(st.sampled_from(OPS), st.integers(0, 50), st.binary(max_size=6)),
        min_size=1,
        max_size=3,
    ),
    min_size=1,
    max_size=7,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=PROGRAMS)
# Every kind of change, always tried first: a KV entry written, rewritten and deleted;
# a Timer armed, moved and deleted; a Work created, claimed and finished; a Scope
# created and renamed.
@example(program=[[("kv", 0, b"a")], [("kv", 1, b"b")], [("unkv", 0, b"")]])
@example(
    program=[[("work", 0, b"")], [("timer", 0, b"")], [("timer", 1, b"")], [("untimer", 0, b"")]]
)
@example(program=[[("work", 0, b""), ("claim", 0, b"")], [("finish", 0, b"")]])
@example(program=[[("scope", 0, b"x")], [("scope", 1, b"y")]])
# A Timer moved from one Work to another, then deleted: each Work as of each moment.
@example(
    program=[
        [("work", 0, b""), ("work", 0, b"")],
        [("timer", 0, b"")],
        [("timer", 3, b"")],
        [("untimer", 0, b"")],
    ]
)
def test_replaying_the_log_to_any_version_is_what_a_fresh_store_reached(
    store: Store, clock: FakeClock, program: list[list[tuple[str, int, bytes]]]
) -> None:
    """For each transaction k of a random program: the store's records as of the
    version k committed (``record_as_of``) equal those of a fresh reference double
    that ran the same transactions 1..k, at the same times, and nothing else; and a
    version between two transactions reads the earlier one's state."""
    model = Model(prefix=f"p{next(_serial)}")
    fresh = MemoryStore()
    commits: list[list[Step]] = []
    for steps in program:
        chosen = [s for s in (_step(model, *op) for op in steps) if s is not None]
        if chosen:
            commits.append(chosen)
    expected: list[tuple[int, dict[tuple[str, str, str], Any]]] = []
    for steps in commits:
        at = clock.advance(1)

        def run(t: Tx, steps: list[Step] = steps) -> None:
            for step in steps:
                step(t)

        tx(store, run, clock=lambda at=at: at)
        tx(fresh, run, clock=lambda at=at: at)
        version = view(store, None, lambda t: t.store_version())
        expected.append((version, _state(fresh, model.made, model.prefix)))
    assert _state(store, model.made, model.prefix) == _state(fresh, model.made, model.prefix)
    previous: dict[tuple[str, str, str], Any] = dict.fromkeys(model.made)
    previous.update({("of", id, ""): None for kind, id, _ in model.made if kind == "work"})
    previous[("list", model.prefix, "")] = []
    for version, records in expected:

        def as_of(t: Tx, version: int) -> dict[tuple[str, str, str], Any]:
            # The namespace then, whole and walked two keys a page: the same entries.
            whole = t.kv_list_as_of(model.prefix, version)
            assert whole.known
            paged: list[tuple[str, bytes]] = []
            while page := t.kv_list_as_of(
                model.prefix, version, after=paged[-1][0] if paged else "", limit=2
            ).entries:
                paged += page
            assert paged == whole.entries
            out: dict[tuple[str, str, str], Any] = {("list", model.prefix, ""): whole.entries}
            for kind, id, key in sorted(model.made):
                found = t.record_as_of(kind, id, version, key)  # type: ignore[arg-type]
                assert found.known
                out[(kind, id, key)] = found.record
                if kind == "work":
                    then = t.work_as_of(id, version)
                    assert then.known
                    out[("of", id, "")] = (
                        (then.work, then.executions, then.waits, then.timers)
                        if then.work is not None
                        else None
                    )
            return out

        assert view(store, None, lambda t, v=version: as_of(t, v)) == records, f"as of {version}"
        # The version before: the program's previous commit (each of its commits
        # writes), or before it began, when none of its records existed.
        assert view(store, None, lambda t, v=version - 1: as_of(t, v)) == previous
        previous = records

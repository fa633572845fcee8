"""The shared storage contract cases.

Each case is a plain function ``case_<name>(store, clock)`` that drives a fresh, empty
store and fails with a plain ``assert`` whose message names the broken rule.
``test_contract.py`` runs every case against every backend; the negative controls run
chosen cases against deliberately broken backends and match those messages, so keep
them stable. Each docstring names the checklist items it proves
(``shared/spec/storage-contract-checklist.md``); scenario cases are the 25 of §23.2.

Cases read through ordinary transactions, so a read never depends on the backend's
View; the View cases are the only ones that call ``view``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast

import storage
from storage import (
    KV_VALUE_LIMIT,
    ArtifactRef,
    Binding,
    Cancelled,
    CancelToken,
    Conflict,
    CorrelationKey,
    Event,
    Execution,
    ExecutionState,
    Fenced,
    Guard,
    Invalid,
    LeaseRef,
    NotFound,
    Outcome,
    OutcomeKind,
    Payload,
    ReadOnly,
    Scope,
    StorageError,
    Store,
    StoredEvent,
    TimerNext,
    Tx,
    TxClosed,
    Viewer,
    Wait,
    WaitState,
    Work,
    WorkKey,
    WorkOrder,
    WorkQuery,
    WorkState,
    seconds,
    to_ns,
)

from .support import (
    BLOCK_TIMEOUT,
    EVENT_SOURCE,
    TTL,
    Crash,
    FakeClock,
    TransactOnlyStore,
    Worker,
    crashes,
    fails,
    get_execution,
    get_work,
    ids,
    key,
    lease_of,
    make_event,
    make_execution,
    make_scope,
    make_timer,
    make_wait,
    make_work,
    outcome,
    park,
    payload,
    put_works,
    raises,
    start_attempt,
    tx,
    update_work,
)

Case = Callable[..., None]

READY = WorkState.READY
RUNNING = WorkState.RUNNING
WAITING = WorkState.WAITING
COMPLETED = WorkState.COMPLETED
FAILED = WorkState.FAILED
CANCELLED = WorkState.CANCELLED

X_PENDING = ExecutionState.PENDING
X_RUNNING = ExecutionState.RUNNING
X_PARKED = ExecutionState.PARKED
X_COMPLETED = ExecutionState.COMPLETED
X_FAILED = ExecutionState.FAILED
X_WAITING = ExecutionState.WAITING
X_HANDOFF = ExecutionState.HANDOFF
X_CANCELLED = ExecutionState.CANCELLED

# The outcome each Execution state requires (O-02..O-04); None means "no outcome".
OUTCOME_FOR: dict[ExecutionState, OutcomeKind | None] = {
    X_PENDING: None,
    X_RUNNING: None,
    X_PARKED: OutcomeKind.WAITING,
    X_COMPLETED: OutcomeKind.COMPLETED,
    X_FAILED: OutcomeKind.FAILED,
    X_WAITING: OutcomeKind.WAITING,
    X_HANDOFF: OutcomeKind.HANDOFF,
    X_CANCELLED: None,
}

# Dotted namespace identifiers (resolution 1): lowercase [a-z0-9_-] segments joined by
# dots, at least two segments, at most 200 characters.
VALID_DOTTED = [
    "a.b",
    "conduit.github.issue",
    "x-1.y_2",
    "a0.b1.c2.d3",
    "a" * 99 + "." + "b" * 100,  # exactly 200 characters
]
INVALID_DOTTED = [
    "",
    "nodot",
    "Conduit.test",
    "a..b",
    ".a.b",
    "a.b.",
    "a b.c",
    "a.b/c",
    "a.b:c",
    "\u00e9t\u00e9.b",
    "a" * 100 + "." + "b" * 100,  # 201 characters
]

# Every write operation of a Tx (T-01, V-02).
WRITE_OPERATIONS = (
    "accept_event",
    "mark_routed",
    "set_event_scope",
    "put_work",
    "put_execution",
    "claim",
    "renew",
    "release",
    "set_execution_executor",
    "put_scope",
    "put_timer",
    "delete_timer",
    "fire_timer",
    "put_wait",
    "kv_put",
    "kv_delete",
)

# Valid JSON written with odd spacing, key order and escapes: it must come back byte
# for byte, never re-serialised (ID-10).
RAW_JSON = b'{ "b" :1,\n  "a":[1, 2.50, "\\u00e9", {"z": null}] }'
INVALID_JSON = [b"{not json", b"", b'{"a": 1', b"\xff\xfe", b"[1,]"]


def stored_state(store: Store, work_id: str) -> WorkState:
    return get_work(store, work_id).state


def terminate(t: Tx, execution_id: str, state: ExecutionState, work: WorkState | None) -> None:
    """Inside a transaction: end an attempt in ``state`` (with its required outcome)
    and optionally move its Work to ``work``."""
    execution = t.execution(execution_id)
    kind = OUTCOME_FOR[state]
    t.put_execution(
        replace(execution, state=state, outcome=outcome(kind) if kind is not None else None)
    )
    if work is not None:
        t.put_work(replace(t.work(execution.work_id), state=work))


# ---------------------------------------------------------------------------------
# 1. Identity and records (ID)
# ---------------------------------------------------------------------------------


def case_empty_ids_rejected(store: Store, clock: FakeClock) -> None:
    """ID-02: every record with an empty ID is refused with Invalid and nothing is
    written."""
    start_attempt(store)

    def check(t: Tx) -> None:
        t.put_work(make_work("w2"))
        raises(Invalid, lambda: t.put_work(make_work("")), "ID-02 empty Work ID")
        raises(Invalid, lambda: t.accept_event(make_event("")), "ID-02 empty Event ID")
        raises(Invalid, lambda: t.put_scope(make_scope("")), "ID-02 empty Scope ID")
        raises(
            Invalid,
            lambda: t.put_execution(make_execution("", "w2", 1)),
            "ID-02 empty Execution ID",
        )
        raises(Invalid, lambda: t.put_timer(make_timer("", t.now)), "ID-02 empty Timer ID")
        raises(Invalid, lambda: t.put_wait(make_wait("", "w1", "x1")), "ID-02 empty Wait ID")

    tx(store, check)

    def listed(t: Tx) -> list[str]:
        return [
            *ids(t.works()),
            *ids(t.events()),
            *ids(t.scopes()),
            *ids(t.executions()),
            *ids(t.timers()),
            *ids(t.waits()),
        ]

    assert "" not in tx(store, listed), "ID-02: a record with an empty ID was stored"


def case_ids_stored_verbatim(store: Store, clock: FakeClock) -> None:
    """ID-02: caller-allocated IDs are stored verbatim, never generated or normalised."""
    work_id, scope_id, execution_id, event_id = (
        " Work/\u00dcn\u00efcode 1 ",
        "Scope:Mixed.Case",
        "X#1/attempt",
        "EVT 0001",
    )

    def write(t: Tx) -> None:
        t.put_scope(make_scope(scope_id))
        t.put_work(make_work(work_id, scope_id=scope_id))
        t.put_execution(make_execution(execution_id, work_id))
        t.accept_event(make_event(event_id, work_id=work_id))

    tx(store, write)

    def read(t: Tx) -> tuple[str, str, str, str, list[str]]:
        return (
            t.work(work_id).id,
            t.scope(scope_id).id,
            t.execution(execution_id).work_id,
            t.event(event_id).event.work_id,
            ids(t.works()),
        )

    assert tx(store, read) == (work_id, scope_id, work_id, work_id, [work_id]), (
        "ID-02: an ID was rewritten or normalised"
    )


def case_ids_never_reused(store: Store, clock: FakeClock) -> None:
    """ID-03: creating a Work or Execution whose ID exists, even terminal, conflicts."""
    start_attempt(store)
    tx(store, lambda t: terminate(t, "x1", X_COMPLETED, COMPLETED))
    put_works(store, make_work("w2"))
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w1")),
        "ID-03 Work ID reused after the Work became terminal",
    )
    fails(
        store,
        Conflict,
        lambda t: t.put_execution(make_execution("x1", "w2", 1)),
        "ID-03 Execution ID reused for another Work",
    )
    assert get_work(store, "w1").state == COMPLETED, "ID-03: the terminal Work was replaced"
    assert get_execution(store, "x1").work_id == "w1", "ID-03: the Execution was replaced"


def case_create_if_absent(store: Store, clock: FakeClock) -> None:
    """ID-04: revision 0 creates with revision 1; revision 0 on an existing ID
    conflicts and leaves the record unchanged."""
    (created,) = put_works(store, make_work("w1"))
    assert created.revision == 1, f"ID-04: first revision is {created.revision}, expected 1"
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w1", state=READY, context=payload())),
        "ID-04 create over an existing Work",
    )
    assert get_work(store, "w1") == created, "ID-04: a refused create changed the record"


def case_revisions(store: Store, clock: FakeClock) -> None:
    """Scenario "revisions" (ID-04, ID-05, SC-01, T-06): exact revision or Conflict,
    +1 per write, retry with re-read state succeeds; for Work, Scope, Execution and
    Timer."""
    (w1,) = put_works(store, make_work("w1"))
    w2 = tx(store, lambda t: t.put_work(replace(w1, state=RUNNING)))
    assert w2.revision == w1.revision + 1 == 2, (
        f"revisions: Work revision went {w1.revision} -> {w2.revision}, expected 1 -> 2"
    )
    fails(store, Conflict, lambda t: t.put_work(replace(w1, state=FAILED)), "revisions stale")
    fails(store, Conflict, lambda t: t.put_work(replace(w2, revision=9, state=FAILED)), "revisions")
    assert get_work(store, "w1") == w2, "revisions: a stale update changed the Work"
    w3 = tx(store, lambda t: t.put_work(replace(t.work("w1"), state=FAILED)))
    assert (w3.revision, w3.state) == (3, FAILED), "revisions: retry with re-read state failed"

    s1 = tx(store, lambda t: t.put_scope(make_scope("s1")))
    s2 = tx(store, lambda t: t.put_scope(replace(s1, name="renamed")))
    assert (s1.revision, s2.revision) == (1, 2), "revisions: Scope revisions are not 1, 2"
    fails(store, Conflict, lambda t: t.put_scope(replace(s1, name="stale")), "revisions Scope")
    assert tx(store, lambda t: t.scope("s1")) == s2, "revisions: a stale update changed the Scope"

    put_works(store, make_work("w-x"))
    x1 = tx(store, lambda t: t.put_execution(make_execution("x1", "w-x")))
    x2 = tx(store, lambda t: t.put_execution(replace(x1, trace_id="trace-1")))
    assert (x1.revision, x2.revision) == (1, 2), "revisions: Execution revisions are not 1, 2"
    fails(
        store,
        Conflict,
        lambda t: t.put_execution(replace(x1, trace_id="stale")),
        "revisions Execution",
    )
    assert get_execution(store, "x1") == x2, "revisions: a stale update changed the Execution"

    t1 = tx(store, lambda t: t.put_timer(make_timer("t1", clock() + seconds(60))))
    t2 = tx(store, lambda t: t.put_timer(replace(t1, fire_at=t1.fire_at + 1)))
    assert (t1.revision, t2.revision) == (1, 2), "revisions: Timer revisions are not 1, 2"
    fails(store, Conflict, lambda t: t.put_timer(replace(t1, purpose="x")), "revisions Timer")
    assert tx(store, lambda t: t.timer("t1")) == t2, "revisions: a stale update changed the Timer"


def case_update_check_order(store: Store, clock: FakeClock) -> None:
    """ID-05, ID-11 (lead rule): an update is checked for a missing record (NotFound),
    then its revision (Conflict), then the transition/immutability rules (Invalid)."""
    fails(
        store,
        NotFound,
        lambda t: t.put_work(replace(make_work("ghost"), revision=3)),
        "check order: update of a missing Work",
    )
    (w,) = put_works(store, make_work("w1"))
    fails(
        store,
        Conflict,
        lambda t: t.put_work(replace(w, revision=5, kind="conduit.other", state=COMPLETED)),
        "check order: wrong revision and an invalid change",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_work(replace(w, kind="conduit.other")),
        "check order: current revision and an invalid change",
    )
    fails(
        store,
        NotFound,
        lambda t: t.put_execution(replace(make_execution("ghost", "w1"), revision=2)),
        "check order: update of a missing Execution",
    )
    x = tx(store, lambda t: t.put_execution(make_execution("x1", "w1")))
    fails(
        store,
        Conflict,
        lambda t: t.put_execution(
            replace(x, revision=4, state=X_COMPLETED, outcome=outcome(OutcomeKind.COMPLETED))
        ),
        "check order: Execution wrong revision and an invalid transition",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_execution(
            replace(x, state=X_COMPLETED, outcome=outcome(OutcomeKind.COMPLETED))
        ),
        "check order: Execution pending -> completed",
    )
    fails(
        store,
        NotFound,
        lambda t: t.put_scope(replace(make_scope("ghost"), revision=2)),
        "check order: update of a missing Scope",
    )
    fails(
        store,
        NotFound,
        lambda t: t.put_timer(replace(make_timer("ghost", clock()), revision=2)),
        "check order: update of a missing Timer",
    )


def case_backend_owned_fields_ignored(store: Store, clock: FakeClock) -> None:
    """ID-06, Q-08: revision, timestamps and latest_executor in the input are ignored;
    created time is the creating tx's now and never changes; updated time is the
    writing tx's now."""
    forged = replace(make_work("w1"), latest_executor="forged", created_at=5, updated_at=6)
    created, first_now = tx(store, lambda t: (t.put_work(forged), t.now))
    assert (created.created_at, created.updated_at) == (first_now, first_now), (
        "ID-06: Work timestamps were taken from the caller, not from tx.now"
    )
    assert created.latest_executor == "", "ID-06: a writer's latest_executor was stored"
    clock.advance(seconds=7)
    update = replace(created, state=RUNNING, created_at=1, updated_at=2, latest_executor="x")
    updated, second_now = tx(store, lambda t: (t.put_work(update), t.now))
    assert second_now > first_now, "ID-06: tx.now did not follow the clock"
    assert (updated.created_at, updated.updated_at) == (first_now, second_now), (
        "ID-06: an update changed created_at or did not set updated_at to tx.now"
    )
    assert get_work(store, "w1") == updated, "ID-06: the returned Work differs from the stored"

    def others(t: Tx) -> list[tuple[int, int]]:
        scope = t.put_scope(replace(make_scope("s1"), created_at=3, updated_at=4))
        timer = t.put_timer(replace(make_timer("t1", t.now), created_at=3, updated_at=4))
        execution = t.put_execution(
            replace(make_execution("x1"), created_at=3, updated_at=4, started_at=5, finished_at=6)
        )
        stored, _ = t.accept_event(replace(make_event("e1"), received_at=7))
        return [
            (scope.created_at, scope.updated_at),
            (timer.created_at, timer.updated_at),
            (execution.created_at, execution.updated_at),
            (stored.event.received_at, stored.event.received_at),
        ]

    clock.advance(seconds=1)
    stamps = tx(store, others)
    now = clock()
    assert stamps == [(now, now)] * 4, f"ID-06: forged timestamps were kept: {stamps}"
    execution = get_execution(store, "x1")
    assert (execution.started_at, execution.finished_at) == (0, 0), (
        "ID-06: a writer's started_at/finished_at was stored"
    )


def _try_mutate(fn: Callable[[], object]) -> None:
    """Mutate a returned value if its type allows it (read-only mappings may refuse)."""
    with contextlib.suppress(TypeError, AttributeError):
        fn()


def case_copy_isolation(store: Store, clock: FakeClock) -> None:
    """Scenario "copy isolation" (ID-07, KV-04, SC-04): mutating a caller object after
    the write, or a returned record, map or list, never changes stored state."""
    config: dict[str, Any] = {"retries": 3, "labels": ["a", "b"]}
    routes: list[Any] = [{"match": "github.*", "to": ["x"]}]
    secret_refs = ["vault:token"]
    written = tx(
        store,
        lambda t: t.put_scope(
            Scope(
                id="s1",
                config=config,
                routes=tuple(routes),
                secret_refs=tuple(secret_refs),
            )
        ),
    )
    config["retries"] = 99
    config["labels"].append("c")
    routes[0]["to"].append("y")
    secret_refs.append("vault:other")
    _try_mutate(lambda: written.config["labels"].append("w"))
    _try_mutate(lambda: written.routes[0]["to"].append("w"))

    expected_config = {"retries": 3, "labels": ["a", "b"]}
    expected_routes = ({"match": "github.*", "to": ["x"]},)
    first = tx(store, lambda t: t.scope("s1"))
    assert dict(first.config) == expected_config, (
        f"copy isolation: the stored Scope config aliases the caller's map: {first.config}"
    )
    assert first.routes == expected_routes, "copy isolation: stored routes alias the caller's"
    assert first.secret_refs == ("vault:token",), "copy isolation: secret refs aliased"

    _try_mutate(lambda: first.config.__setitem__("retries", 42))
    _try_mutate(lambda: first.config["labels"].append("z"))
    _try_mutate(lambda: first.routes[0]["to"].append("z"))
    second = tx(store, lambda t: t.scope("s1"))
    assert dict(second.config) == expected_config, (
        "copy isolation: mutating a returned Scope changed the stored config"
    )
    assert second.routes == expected_routes, (
        "copy isolation: mutating a returned Scope changed the stored routes"
    )

    put_works(store, make_work("w1"), make_work("w2"))

    def lists(t: Tx) -> tuple[int, int, int]:
        works = t.works()
        works.clear()
        t.kv_put("ns", "k", b"v")
        entries = t.kv_list("ns")
        entries.clear()
        events = t.events()
        events.append(cast(StoredEvent, None))
        return len(t.works()), len(t.kv_list("ns")), len(t.events())

    assert tx(store, lists) == (2, 1, 0), "copy isolation: a returned list aliases stored state"


def case_dotted_identifiers(store: Store, clock: FakeClock) -> None:
    """ID-08 (resolution 1): Work kind, Event type and payload schema are dotted
    identifiers; malformed ones are Invalid, valid ones are stored exactly."""

    def check(t: Tx) -> None:
        for n, value in enumerate(INVALID_DOTTED):
            bad_work = make_work(f"bad-{n}", kind=value)
            bad_type = make_event(f"bad-{n}", type=value)
            bad_schema = make_event(f"bad-p{n}", payload=payload(schema=value))
            raises(Invalid, lambda w=bad_work: t.put_work(w), f"ID-08 Work kind {value!r}")
            raises(Invalid, lambda e=bad_type: t.accept_event(e), f"ID-08 event type {value!r}")
            raises(
                Invalid, lambda e=bad_schema: t.accept_event(e), f"ID-08 payload schema {value!r}"
            )
        for n, value in enumerate(VALID_DOTTED):
            t.put_work(make_work(f"ok-{n}", kind=value))
            t.accept_event(make_event(f"ok-{n}", type=value, payload=payload(schema=value)))

    tx(store, check)

    def read(t: Tx) -> tuple[list[str], list[str], list[str]]:
        works = [t.work(f"ok-{n}").kind for n in range(len(VALID_DOTTED))]
        events = [t.event(f"ok-{n}").event for n in range(len(VALID_DOTTED))]
        schemas = [e.payload.schema if e.payload else "" for e in events]
        return works, [e.type for e in events], schemas

    assert tx(store, read) == (VALID_DOTTED, VALID_DOTTED, VALID_DOTTED), (
        "ID-08: a valid dotted identifier was not stored exactly"
    )
    assert ids(tx(store, lambda t: t.works())) == [f"ok-{n}" for n in range(len(VALID_DOTTED))], (
        "ID-08: a Work with a malformed kind was stored"
    )


def case_payload_json_round_trip(store: Store, clock: FakeClock) -> None:
    """ID-09, ID-10, O-07: payloads need a dotted schema and valid JSON bytes; valid
    bytes round-trip byte for byte; an absent payload stays absent."""

    def write(t: Tx) -> None:
        for n, data in enumerate(INVALID_JSON):
            event = make_event(f"bad-{n}", payload=payload(data))
            work = make_work(f"bad-{n}", context=payload(data))
            raises(Invalid, lambda e=event: t.accept_event(e), f"ID-09 event payload {data!r}")
            raises(Invalid, lambda w=work: t.put_work(w), f"ID-09 Work context {data!r}")
        raises(
            Invalid,
            lambda: t.accept_event(make_event("no-schema", payload=Payload("", b"{}"))),
            "ID-09 payload bytes without a schema",
        )
        t.accept_event(make_event("raw", payload=payload(RAW_JSON)))
        t.accept_event(make_event("absent"))
        t.put_work(make_work("w1", context=payload(RAW_JSON)))
        t.put_work(make_work("w2"))

    tx(store, write)

    def read(t: Tx) -> tuple[Payload | None, Payload | None, Payload | None, Payload | None]:
        return (
            t.event("raw").event.payload,
            t.event("absent").event.payload,
            t.work("w1").context,
            t.work("w2").context,
        )

    raw, absent, context, no_context = tx(store, read)
    assert raw == Payload("test.payload", RAW_JSON), (
        f"ID-10: Event payload bytes were not kept byte for byte: {raw!r}"
    )
    assert context == Payload("test.payload", RAW_JSON), (
        f"ID-10: Work context bytes were not kept byte for byte: {context!r}"
    )
    assert absent is None, "ID-09: an absent Event payload came back present"
    assert no_context is None, "ID-09: an absent Work context came back present"
    assert ids(tx(store, lambda t: t.events())) == ["raw", "absent"], (
        "ID-09: an Event with an invalid payload was stored"
    )
    assert ids(tx(store, lambda t: t.works())) == ["w1", "w2"], (
        "ID-09: a Work with an invalid context was stored"
    )


def case_work_fixed_fields(store: Store, clock: FakeClock) -> None:
    """ID-11: Work kind, scope and parent are fixed at creation; changing any is
    Invalid and leaves the record unchanged."""
    tx(store, lambda t: [t.put_scope(make_scope("s1")), t.put_scope(make_scope("s2"))])
    put_works(store, make_work("wp"), make_work("wq"))
    (w,) = put_works(store, make_work("w1", scope_id="s1", parent_id="wp"))
    for what, changed in [
        ("kind", replace(w, kind="conduit.other")),
        ("scope", replace(w, scope_id="s2")),
        ("scope cleared", replace(w, scope_id="")),
        ("parent", replace(w, parent_id="wq")),
        ("parent cleared", replace(w, parent_id="")),
    ]:
        fails(store, Invalid, lambda t, c=changed: t.put_work(c), f"ID-11 {what} change")
    assert get_work(store, "w1") == w, "ID-11: a refused kind/scope/parent change was applied"


def case_work_parent_and_scope_must_exist(store: Store, clock: FakeClock) -> None:
    """ID-12: a Work's parent must exist (NotFound) and not be itself (Invalid); a
    parent created earlier in the same tx counts; a named scope must exist."""
    fails(
        store,
        NotFound,
        lambda t: t.put_work(make_work("w1", parent_id="ghost")),
        "ID-12 missing parent",
    )
    fails(store, Invalid, lambda t: t.put_work(make_work("w1", parent_id="w1")), "ID-12 self")
    fails(store, NotFound, lambda t: t.put_work(make_work("w1", scope_id="ghost")), "missing scope")

    def same_tx(t: Tx) -> Work:
        t.put_work(make_work("parent"))
        return t.put_work(make_work("child", parent_id="parent"))

    child = tx(store, same_tx)
    assert child.parent_id == "parent", "ID-12: a parent created in the same tx was refused"
    assert ids(tx(store, lambda t: t.works())) == ["child", "parent"], (
        "ID-12: a Work with a bad parent or scope was stored"
    )


def case_terminal_work_is_a_tombstone(store: Store, clock: FakeClock) -> None:
    """ID-13, CK-02: terminal Work stays readable and keeps owning its keys; the API
    has no Work delete."""
    k = key("issue-1")
    put_works(store, make_work("w1", keys=[k]))
    update_work(store, "w1", state=CANCELLED)

    def read(t: Tx) -> tuple[Work, Work, bool]:
        return t.work("w1"), t.work_by_key(k), hasattr(t, "delete_work")

    work, owner, deletable = tx(store, read)
    assert work.state == CANCELLED, "ID-13: a terminal Work is no longer readable"
    assert owner.id == "w1", "ID-13: a terminal Work no longer owns its key"
    assert not deletable, "ID-13: the storage API exposes a Work delete"
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w2", keys=[k])),
        "ID-13 replay of a terminal Work's key",
    )


# ---------------------------------------------------------------------------------
# 2. Correlation keys (CK)
# ---------------------------------------------------------------------------------


def case_key_parts_nonempty(store: Store, clock: FakeClock) -> None:
    """CK-01: a key with an empty source or external ID is Invalid, on create and on
    attach."""
    fails(
        store,
        Invalid,
        lambda t: t.put_work(make_work("w1", keys=[CorrelationKey("", "1")])),
        "CK-01 empty key source",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_work(make_work("w1", keys=[CorrelationKey("github.acme", "")])),
        "CK-01 empty external ID",
    )
    (w,) = put_works(store, make_work("w1", keys=[key("1")]))
    fails(
        store,
        Invalid,
        lambda t: t.put_work(replace(w, keys=(key("1"), CorrelationKey("", "2")))),
        "CK-01 attach of an empty key",
    )
    assert get_work(store, "w1").keys == (key("1"),), "CK-01: an empty key was attached"


def case_key_lookup(store: Store, clock: FakeClock) -> None:
    """CK-02, EV-07: lookup by each key returns the owning Work, also once it is
    terminal; an unowned key is NotFound."""
    k1, k2 = key("1"), key("2", source="gitlab.corp")
    put_works(store, make_work("w1", keys=[k1, k2]), make_work("w2"))

    def owners(t: Tx) -> list[str]:
        return [t.work_by_key(k1).id, t.work_by_key(k2).id]

    assert tx(store, owners) == ["w1", "w1"], "CK-02: key lookup did not return the owner"
    fails(store, NotFound, lambda t: t.work_by_key(key("3")), "CK-02 lookup of an unowned key")
    update_work(store, "w1", state=FAILED)
    assert tx(store, owners) == ["w1", "w1"], "CK-02: a terminal Work lost its keys"


def case_key_owned_elsewhere_conflicts(store: Store, clock: FakeClock) -> None:
    """CK-03: creating or attaching a key owned by another Work conflicts, whatever
    that Work's scope or state."""
    tx(store, lambda t: [t.put_scope(make_scope("s1")), t.put_scope(make_scope("s2"))])
    k_live, k_dead = key("live"), key("dead")
    put_works(
        store,
        make_work("owner", scope_id="s1", keys=[k_live]),
        make_work("gone", keys=[k_dead]),
        make_work("w3", scope_id="s2"),
    )
    update_work(store, "gone", state=CANCELLED)
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w4", scope_id="s2", keys=[k_live])),
        "CK-03 create with a key owned in another scope",
    )
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w4", keys=[k_dead])),
        "CK-03 create with a key owned by a terminal Work",
    )
    fails(
        store,
        Conflict,
        lambda t: t.put_work(replace(t.work("w3"), keys=(k_live,))),
        "CK-03 attach of a key owned elsewhere",
    )
    assert get_work(store, "w3").keys == (), "CK-03: a foreign key was attached"


def case_key_conflict_is_atomic(store: Store, clock: FakeClock) -> None:
    """CK-04: a create or attach naming one free and one owned key stores neither the
    Work nor the free key."""
    k_free, k_owned, k3 = key("free"), key("owned"), key("k3")
    put_works(store, make_work("owner", keys=[k_owned]), make_work("w3"))
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w2", keys=[k_free, k_owned])),
        "CK-04 create with a free and an owned key",
    )
    before = get_work(store, "w3")
    fails(
        store,
        Conflict,
        lambda t: t.put_work(replace(t.work("w3"), keys=(k3, k_owned))),
        "CK-04 attach of a free and an owned key",
    )

    def state(t: Tx) -> tuple[list[str], Work]:
        unowned = []
        for k in (k_free, k3):
            try:
                t.work_by_key(k)
            except NotFound:
                unowned.append(k.external_id)
        return unowned, t.work("w3")

    unowned, after = tx(store, state)
    assert unowned == ["free", "k3"], "CK-04: a conflicting write still claimed its free key"
    assert after == before, "CK-04: a conflicting attach changed the Work"
    assert "w2" not in ids(tx(store, lambda t: t.works())), (
        "CK-04: a Work whose key conflicted was created"
    )


def case_key_append_keeps_order(store: Store, clock: FakeClock) -> None:
    """CK-05, Q-02: appended keys keep attach order, the first key (and the source it
    defines) is stable, and re-listing owned keys is a no-op."""
    k1, k2, k3 = key("1", source="gitlab.corp"), key("2"), key("3", source="jira.acme")
    (w,) = put_works(store, make_work("w1", keys=[k1]))
    w = tx(store, lambda t: t.put_work(replace(w, keys=(k1, k2))))
    w = tx(store, lambda t: t.put_work(replace(w, keys=(k1, k2, k3))))
    assert w.keys == (k1, k2, k3), f"CK-05: keys lost their attach order: {w.keys}"
    again = tx(store, lambda t: t.put_work(replace(t.work("w1"), keys=(k1, k2, k3))))
    assert again.keys == (k1, k2, k3), "CK-05: re-listing owned keys changed them"
    stored = get_work(store, "w1")
    assert stored.source == "gitlab.corp", f"CK-05: the first key changed: {stored.keys}"
    assert tx(store, lambda t: t.work_by_key(k3).id) == "w1", "CK-05: an appended key is unowned"


def case_keys_cannot_be_removed(store: Store, clock: FakeClock) -> None:
    """CK-06: an update that omits or reorders existing keys is Invalid."""
    k1, k2 = key("1"), key("2")
    (w,) = put_works(store, make_work("w1", keys=[k1, k2]))
    for what, keys in [("omit", (k1,)), ("reorder", (k2, k1)), ("clear", ())]:
        fails(
            store,
            Invalid,
            lambda t, ks=keys: t.put_work(replace(w, keys=ks)),
            f"CK-06 {what} keys",
        )
    assert get_work(store, "w1") == w, "CK-06: a key was removed or reordered"


def case_keys_never_transfer(store: Store, clock: FakeClock) -> None:
    """CK-07, ID-13: a key never moves to another Work, even from terminal Work, and
    nothing can be attached to terminal Work."""
    k = key("1")
    put_works(store, make_work("a", keys=[k]), make_work("b"))
    update_work(store, "a", state=RUNNING)
    update_work(store, "a", state=COMPLETED)
    fails(
        store,
        Conflict,
        lambda t: t.put_work(replace(t.work("b"), keys=(k,))),
        "CK-07 transfer of a terminal Work's key",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_work(replace(t.work("a"), keys=(k, key("2")))),
        "CK-07 attach to a terminal Work",
    )
    assert tx(store, lambda t: t.work_by_key(k).id) == "a", "CK-07: a key was transferred"
    fails(store, NotFound, lambda t: t.work_by_key(key("2")), "CK-07 key attached to terminal")


def case_concurrent_key_ownership(store: Store, clock: FakeClock) -> None:
    """Scenario "concurrent key ownership" (CK-08, T-06): two concurrent transactions
    creating different Works with the same key: exactly one commits, the other gets
    Conflict."""
    k = key("contested")
    barrier = threading.Barrier(2, timeout=BLOCK_TIMEOUT)

    def create(work_id: str) -> Callable[[], object]:
        def run() -> object:
            barrier.wait()
            return tx(store, lambda t: t.put_work(make_work(work_id, keys=[k])))

        return run

    workers = {name: Worker(create(name), name=name) for name in ("wa", "wb")}
    for name, worker in workers.items():
        assert worker.join(), f"concurrent key ownership: {name} never finished"
    winners = [name for name, w in workers.items() if w.error is None]
    errors = [type(w.error).__name__ for w in workers.values() if w.error is not None]
    assert len(winners) == 1, (
        f"concurrent key ownership: {len(winners)} transactions committed the same key"
    )
    assert errors == ["Conflict"], f"concurrent key ownership: the loser got {errors}"
    owner = tx(store, lambda t: t.work_by_key(k).id)
    assert owner == winners[0], "concurrent key ownership: the key is owned by the loser"
    assert ids(tx(store, lambda t: t.works())) == winners, (
        "concurrent key ownership: the losing Work was stored"
    )


# ---------------------------------------------------------------------------------
# 3. Events and acceptance (EV)
# ---------------------------------------------------------------------------------


def case_delivery_identity_versus_correlation(store: Store, clock: FakeClock) -> None:
    """Scenario "delivery identity versus correlation" (EV-02, CK-09, EV-07): a
    repeated (source, delivery_id) returns the original envelope with added=False and
    stores nothing, even under another ID and key; distinct deliveries sharing a key
    are all kept."""
    k, other = key("issue-7"), key("issue-8")
    put_works(store, make_work("w1", keys=[k]))
    first = make_event("e1", delivery_id="d1", keys=[k], payload=payload(b'{"v": 1}'))

    def accept_two(t: Tx) -> tuple[StoredEvent, bool, StoredEvent, bool]:
        a, added_a = t.accept_event(first)
        b, added_b = t.accept_event(make_event("e2", delivery_id="d2", keys=[k]))
        return a, added_a, b, added_b

    e1, added1, e2, added2 = tx(store, accept_two)
    assert added1, "delivery identity: a new delivery was not added"
    assert added2, "delivery identity: a second delivery sharing a key was not added"
    assert e2.sequence > e1.sequence, "delivery identity: sequences do not increase"
    latest = tx(store, lambda t: t.latest_sequence())
    retry = make_event("e1-retry", delivery_id="d1", keys=[other], payload=payload(b"[2]"))
    stored, added = tx(store, lambda t: t.accept_event(retry))
    assert not added, "delivery identity: a duplicate delivery reported added=True"
    assert stored == e1, (
        f"delivery identity: a duplicate delivery did not return the original: {stored}"
    )

    def after(t: Tx) -> tuple[int, list[str], str, list[str]]:
        return (
            t.latest_sequence(),
            ids(t.events()),
            t.event_by_delivery(EVENT_SOURCE, "d1").id,
            ids(t.work_events("w1")),
        )

    sequence, events, by_delivery, _ = tx(store, after)
    assert events == ["e1", "e2"], f"delivery identity: duplicate stored again: {events}"
    assert sequence == latest, "delivery identity: a duplicate delivery moved latest_sequence"
    assert by_delivery == "e1", "delivery identity: lookup by delivery lost the original"
    fails(store, NotFound, lambda t: t.event("e1-retry"), "delivery identity: retry ID stored")

    # The same delivery ID under another source is another delivery.
    third, added3 = tx(
        store, lambda t: t.accept_event(make_event("e3", source="other.hooks", delivery_id="d1"))
    )
    assert added3, "delivery identity: identity ignored the source and merged two deliveries"
    assert third.id == "e3", "delivery identity: another source's delivery returned the original"


def case_accept_assigns_increasing_sequence(store: Store, clock: FakeClock) -> None:
    """EV-01, EN-05: a new delivery is added with a sequence above every earlier one,
    no routing checkpoint and no scope; latest_sequence follows (0 when empty)."""
    assert tx(store, lambda t: t.latest_sequence()) == 0, "EN-05: empty store sequence is not 0"
    sequences: list[int] = []
    for batch in (["e1", "e2"], ["e3"]):

        def accept(t: Tx, names: list[str] = batch) -> None:
            for name in names:
                stored, added = t.accept_event(make_event(name))
                assert added, f"EV-01: new Event {name} reported added=False"
                assert stored.route is None, "EV-01: a new Event already has a route"
                assert stored.scope_id == "", "EV-01: a new Event already has a scope"
                sequences.append(stored.sequence)

        tx(store, accept)
    assert sequences == sorted(set(sequences)), (
        f"EV-01: acceptance sequences are not strictly increasing: {sequences}"
    )
    assert sequences[0] > 0, f"EV-01: the first sequence is {sequences[0]}, not positive"
    assert tx(store, lambda t: t.latest_sequence()) == sequences[-1], (
        "EN-05: latest_sequence is not the highest committed sequence"
    )


def case_event_id_reuse_conflicts(store: Store, clock: FakeClock) -> None:
    """EV-03: an Event ID already used by another delivery conflicts."""
    tx(store, lambda t: t.accept_event(make_event("e1", delivery_id="d1")))
    fails(
        store,
        Conflict,
        lambda t: t.accept_event(make_event("e1", delivery_id="d2")),
        "EV-03 Event ID reused by another delivery",
    )
    fails(
        store,
        NotFound,
        lambda t: t.event_by_delivery(EVENT_SOURCE, "d2"),
        "EV-03 conflicting delivery was stored",
    )


def case_envelope_is_immutable(store: Store, clock: FakeClock) -> None:
    """EV-04, EV-05: routing and scope live beside the envelope; the envelope reads
    back identical and an Event accepted without a Work never gains one."""
    tx(store, lambda t: t.put_scope(make_scope("s1")))
    put_works(store, make_work("w1"))
    original, _ = tx(store, lambda t: t.accept_event(make_event("e1", keys=[key("1")])))
    clock.advance(seconds=2)

    def route(t: Tx) -> int:
        t.mark_routed("e1", "w1", "routed")
        t.set_event_scope("e1", "s1")
        return t.now

    routed_at = tx(store, route)
    after = tx(store, lambda t: t.event("e1"))
    assert after.event == original.event, "EV-04: routing or scope changed the Event envelope"
    assert after.event.work_id == "", "EV-05: routing wrote a Work ID into the envelope"
    assert after.route is not None, "EV-04: route not recorded"
    assert after.route.work_id == "w1", "EV-04: route recorded another Work"
    assert (after.route.disposition, after.route.routed_at) == ("routed", routed_at), (
        "EV-04: route metadata is not (disposition, tx.now)"
    )
    assert after.sequence == original.sequence, "EV-04: routing changed the sequence"


def case_causation(store: Store, clock: FakeClock) -> None:
    """EV-06: a causation ID must name a stored Event (NotFound) and not the Event
    itself (Invalid); derived_events lists the Events an Event caused."""

    def accept(t: Tx) -> None:
        t.accept_event(make_event("root"))
        t.accept_event(make_event("child-1", causation_id="root"))  # same tx counts

    tx(store, accept)
    tx(store, lambda t: t.accept_event(make_event("child-2", causation_id="root")))
    tx(store, lambda t: t.accept_event(make_event("grandchild", causation_id="child-1")))
    fails(
        store,
        NotFound,
        lambda t: t.accept_event(make_event("orphan", causation_id="ghost")),
        "EV-06 dangling causation",
    )
    fails(
        store,
        Invalid,
        lambda t: t.accept_event(make_event("self", causation_id="self")),
        "EV-06 self causation",
    )

    def derived(t: Tx) -> tuple[list[str], list[str], list[str]]:
        return (
            ids(t.derived_events("root")),
            ids(t.derived_events("child-1")),
            ids(t.derived_events("grandchild")),
        )

    assert tx(store, derived) == (["child-1", "child-2"], ["grandchild"], []), (
        "EV-06: derived_events does not list exactly the Events caused, in order"
    )


def case_event_lookup(store: Store, clock: FakeClock) -> None:
    """EV-07: lookup by ID or by delivery identity; unknown -> NotFound."""
    stored, _ = tx(store, lambda t: t.accept_event(make_event("e1", delivery_id="d1")))

    def read(t: Tx) -> tuple[StoredEvent, StoredEvent]:
        return t.event("e1"), t.event_by_delivery(EVENT_SOURCE, "d1")

    assert tx(store, read) == (stored, stored), "EV-07: lookup did not return the stored Event"
    fails(store, NotFound, lambda t: t.event("ghost"), "EV-07 unknown Event ID")
    fails(store, NotFound, lambda t: t.event_by_delivery(EVENT_SOURCE, "d2"), "EV-07 delivery")
    fails(store, NotFound, lambda t: t.event_by_delivery("other", "d1"), "EV-07 other source")


def case_invalid_event_stores_nothing(store: Store, clock: FakeClock) -> None:
    """EV-08, T-10: an invalid Event is refused, stores nothing and consumes no
    sequence; required fields id/source/delivery_id must be nonempty."""
    tx(store, lambda t: t.accept_event(make_event("e0")))
    before = tx(store, lambda t: t.latest_sequence())

    def attempt(t: Tx) -> StoredEvent:
        for what, bad in [
            ("empty id", replace(make_event("e1"), id="")),
            ("empty source", replace(make_event("e1"), source="")),
            ("empty delivery", replace(make_event("e1"), delivery_id="")),
            ("bad type", make_event("e1", type="nodot")),
            ("bad payload", make_event("e1", payload=payload(b"{oops"))),
        ]:
            raises(Invalid, lambda bad=bad: t.accept_event(bad), f"EV-08 {what}")
        stored, _ = t.accept_event(make_event("e1"))
        return stored

    stored = tx(store, attempt)
    assert stored.sequence == before + 1, (
        f"EV-08: refused Events consumed sequences ({before} -> {stored.sequence})"
    )
    assert ids(tx(store, lambda t: t.events())) == ["e0", "e1"], "EV-08: an invalid Event stored"


def case_event_times(store: Store, clock: FakeClock) -> None:
    """EV-01 (lead rule): received_at is always tx.now; occurred_at 0 means tx.now;
    an explicit occurred_at is kept. Event.work_id is not checked for existence."""
    past = clock() - seconds(3600)

    def accept(t: Tx) -> tuple[int, StoredEvent, StoredEvent]:
        a, _ = t.accept_event(replace(make_event("e1", work_id="no-such-work"), received_at=1))
        b, _ = t.accept_event(make_event("e2", occurred_at=past))
        return t.now, a, b

    now, a, b = tx(store, accept)
    assert (a.event.received_at, a.event.occurred_at) == (now, now), (
        "EV-01: received_at/occurred_at of a new Event are not tx.now"
    )
    assert (b.event.received_at, b.event.occurred_at) == (now, past), (
        "EV-01: an explicit occurred_at was not kept"
    )
    assert a.event.work_id == "no-such-work", "EV-05: the Event's Work ID was rewritten"
    assert tx(store, lambda t: t.event("e1")) == a, "EV-01: stored Event differs from returned"


# ---------------------------------------------------------------------------------
# 4. Actor (AC)
# ---------------------------------------------------------------------------------


def case_event_actor_round_trip(store: Store, clock: FakeClock) -> None:
    """Named case event_actor_round_trip (AC-02..AC-05): the actor of a core.manual
    and a core.action Event survives acceptance, Event, Events and a duplicate
    delivery carrying another actor; other sources drop it."""
    manual = make_event("m1", source="core.manual", actor="operator:alice")
    action = make_event("a1", source="core.action", actor="github:octocat")
    hook = make_event("h1", source="github.hooks", actor="github:octocat")

    def accept(t: Tx) -> list[str]:
        return [t.accept_event(e)[0].event.actor for e in (manual, action, hook)]

    assert tx(store, accept) == ["operator:alice", "github:octocat", ""], (
        "event actor: acceptance did not keep core actors and drop the others"
    )

    def read(t: Tx) -> tuple[list[str], list[str]]:
        return (
            [t.event(i).event.actor for i in ("m1", "a1", "h1")],
            [s.event.actor for s in t.events()],
        )

    expected = ["operator:alice", "github:octocat", ""]
    by_id, scanned = tx(store, read)
    assert by_id == expected, f"event actor: Event(id) lost the actor: {by_id}"
    assert scanned == expected, f"event actor: Events() lost the actor: {scanned}"
    dup = replace(manual, id="m1-retry", actor="operator:mallory")
    stored, added = tx(store, lambda t: t.accept_event(dup))
    assert not added, "event actor: a duplicate delivery reported added=True"
    assert stored.event.actor == "operator:alice", (
        "event actor: a duplicate delivery replaced the original actor"
    )
    assert tx(store, lambda t: t.event("m1").event.actor) == "operator:alice", (
        "event actor: the stored actor changed after a duplicate delivery"
    )


def case_actor_format(store: Store, clock: FakeClock) -> None:
    """AC-01, AC-03: on core.manual and core.action a nonempty actor must be
    kind:id; empty is allowed."""

    def check(t: Tx) -> None:
        for n, bad in enumerate(["alice", ":alice", "operator:", "operator"]):
            for source in ("core.manual", "core.action"):
                event = make_event(f"{source}-{n}", source=source, actor=bad)
                raises(Invalid, lambda e=event: t.accept_event(e), f"AC-01 actor {bad!r}")
        t.accept_event(make_event("anon", source="core.action"))

    tx(store, check)
    assert ids(tx(store, lambda t: t.events())) == ["anon"], "AC-01: malformed actor stored"
    assert tx(store, lambda t: t.event("anon").event.actor) == "", "AC-03: empty actor changed"


# ---------------------------------------------------------------------------------
# 5. Event scope (ES)
# ---------------------------------------------------------------------------------


def case_event_scope_recorded_once_and_indexed(store: Store, clock: FakeClock) -> None:
    """Named case event_scope_recorded_once_and_indexed (ES-01..ES-06): the scope is
    write-once, survives routing and a duplicate delivery, and selects exactly what
    scope_events returns."""
    put_works(store, make_work("w1"))

    def setup(t: Tx) -> None:
        t.put_scope(make_scope("s1"))
        t.put_scope(make_scope("s2"))
        for event_id, scope_id in [("e1", "s1"), ("e2", "s2"), ("e3", ""), ("e4", "s1")]:
            t.accept_event(make_event(event_id))
            if scope_id:
                t.set_event_scope(event_id, scope_id)

    tx(store, setup)
    assert tx(store, lambda t: t.event("e1").scope_id) == "s1", "event scope: not recorded"
    tx(store, lambda t: t.set_event_scope("e1", "s1"))
    fails(store, Conflict, lambda t: t.set_event_scope("e1", "s2"), "event scope rewritten")
    assert tx(store, lambda t: t.event("e1").scope_id) == "s1", "event scope: scope rewritten"

    tx(store, lambda t: t.mark_routed("e1", "w1", "routed"))
    assert tx(store, lambda t: t.event("e1").scope_id) == "s1", "event scope: lost on routing"
    dup, added = tx(store, lambda t: t.accept_event(make_event("e1-retry", delivery_id="d-e1")))
    assert not added, "event scope: a duplicate delivery reported added=True"
    assert dup.scope_id == "s1", "event scope: a duplicate delivery did not return the scope"
    assert dup.route is not None, "event scope: a duplicate delivery lost the route"

    def selected(t: Tx) -> dict[str, list[str]]:
        return {
            "s1": ids(t.scope_events(["s1"])),
            "s1+s2": ids(t.scope_events(["s1", "s2"])),
            "none": ids(t.scope_events([""])),
            "s2+none": ids(t.scope_events(["s2", ""])),
        }

    expected = {
        "s1": ["e1", "e4"],
        "s1+s2": ["e1", "e2", "e4"],
        "none": ["e3"],
        "s2+none": ["e2", "e3"],
    }
    assert tx(store, selected) == expected, "event scope: scope_events selected the wrong Events"
    first = tx(store, lambda t: t.event("e1").sequence)
    paged = tx(store, lambda t: ids(t.scope_events(["s1", "s2"], after=first, limit=1)))
    assert paged == ["e2"], f"event scope: scope_events paging is wrong: {paged}"
    tx(store, lambda t: t.set_event_scope("e3", "s2"))
    moved = tx(store, lambda t: (ids(t.scope_events([""])), ids(t.scope_events(["s2"]))))
    assert moved == ([], ["e2", "e3"]), "event scope: a later recorded scope is not indexed"


def case_event_scope_errors(store: Store, clock: FakeClock) -> None:
    """ES-03 (lead rule): empty scope -> Invalid; unknown Event or Scope -> NotFound."""
    tx(store, lambda t: [t.put_scope(make_scope("s1")), t.accept_event(make_event("e1"))])
    fails(store, Invalid, lambda t: t.set_event_scope("e1", ""), "ES-03 empty scope")
    fails(store, NotFound, lambda t: t.set_event_scope("ghost", "s1"), "ES-03 unknown Event")
    fails(store, NotFound, lambda t: t.set_event_scope("e1", "ghost"), "ES-03 unknown Scope")
    assert tx(store, lambda t: t.event("e1").scope_id) == "", "ES-03: a refused scope was kept"


def case_event_scope_defaults_empty(store: Store, clock: FakeClock) -> None:
    """ES-05: an Event accepted on its own has no scope and is listed under ""."""
    tx(store, lambda t: t.accept_event(make_event("e1")))
    stored = tx(store, lambda t: t.event("e1"))
    assert stored.scope_id == "", "ES-05: an Event accepted on its own has a scope"
    assert ids(tx(store, lambda t: t.scope_events([""]))) == ["e1"], (
        "ES-05: scope_events([''] ) does not list unscoped Events"
    )


# ---------------------------------------------------------------------------------
# 6. Scopes (SC)
# ---------------------------------------------------------------------------------


def case_scope_round_trip(store: Store, clock: FakeClock) -> None:
    """SC-01, SC-04, SC-05: a Scope keeps parent, routes, bindings (with PassEnv),
    opaque config and secret references unchanged, with no workspace needed."""
    scope = Scope(
        id="s-child",
        parent_id="s-root",
        name="Child scope",
        routes=({"match": {"type": "github.issue.*"}, "work": "conduit.triage"}, "fallback"),
        bindings=(
            Binding(name="default", executor="shell", pass_env=("HOME", "GITHUB_TOKEN")),
            Binding(name="gpu", executor="k8s"),
        ),
        config={"nested": {"list": [1, 2.5, None, True]}, "unicode": "\u00e9\u00e8"},
        secret_refs=("vault:github/token", "env:API_KEY"),
    )

    def write(t: Tx) -> Scope:
        t.put_scope(make_scope("s-root"))
        return t.put_scope(scope)

    written = tx(store, write)
    read = tx(store, lambda t: t.scope("s-child"))
    assert read == written, "SC-04: the Scope read back differs from the one written"
    assert replace(read, revision=0, created_at=0, updated_at=0) == scope, (
        f"SC-04: Scope fields did not round-trip: {read}"
    )
    assert ids(tx(store, lambda t: t.scopes())) == ["s-child", "s-root"], "EN-01: scopes()"


def case_scope_parent_must_exist(store: Store, clock: FakeClock) -> None:
    """SC-02: a Scope whose parent does not exist is refused, on create and update."""
    fails(
        store,
        NotFound,
        lambda t: t.put_scope(make_scope("s1", parent_id="ghost")),
        "SC-02 create with a missing parent",
    )
    s1 = tx(store, lambda t: t.put_scope(make_scope("s1")))
    fails(
        store,
        NotFound,
        lambda t: t.put_scope(replace(s1, parent_id="ghost")),
        "SC-02 update to a missing parent",
    )
    assert tx(store, lambda t: t.scopes()) == [s1], "SC-02: a Scope with a missing parent stored"


def case_parent_cycles(store: Store, clock: FakeClock) -> None:
    """Scenario "parent cycles" (SC-03, ID-12): Scope updates forming a cycle (self,
    A->B->A, longer) are Invalid and change nothing; an acyclic reparent is allowed;
    a Work cannot be its own parent."""

    def build(t: Tx) -> None:
        t.put_scope(make_scope("a"))
        t.put_scope(make_scope("b", parent_id="a"))
        t.put_scope(make_scope("c", parent_id="b"))
        t.put_scope(make_scope("d"))

    tx(store, build)
    before = tx(store, lambda t: t.scopes())
    for what, parent in [("self", "a"), ("two-cycle", "b"), ("three-cycle", "c")]:
        fails(
            store,
            Invalid,
            lambda t, p=parent: t.put_scope(replace(t.scope("a"), parent_id=p)),
            f"parent cycles: {what}",
        )
    assert tx(store, lambda t: t.scopes()) == before, "parent cycles: a refused cycle was stored"
    moved = tx(store, lambda t: t.put_scope(replace(t.scope("c"), parent_id="d")))
    assert moved.parent_id == "d", "parent cycles: an acyclic reparent was refused"
    # a -> d is acyclic now that c no longer hangs below a.
    tx(store, lambda t: t.put_scope(replace(t.scope("a"), parent_id="d")))
    fails(
        store,
        Invalid,
        lambda t: t.put_scope(replace(t.scope("d"), parent_id="b")),
        "parent cycles: d -> b -> a -> d",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_work(make_work("w1", parent_id="w1")),
        "parent cycles: Work parent itself",
    )


# ---------------------------------------------------------------------------------
# 7. Work lifecycle (W)
# ---------------------------------------------------------------------------------


def case_new_work_must_be_ready(store: Store, clock: FakeClock) -> None:
    """W-07 (resolution 2): a new Work is created ready; any other initial state is
    Invalid; ready Work may stay ready without attempts."""
    for state in (RUNNING, WAITING, COMPLETED, FAILED, CANCELLED):
        fails(
            store,
            Invalid,
            lambda t, s=state: t.put_work(make_work("w1", state=s)),
            f"W-07 Work created {state}",
        )
    put_works(store, make_work("w1"))
    clock.advance(seconds=3600)
    work = get_work(store, "w1")
    assert work.state == READY, "W-07: ready Work changed state on its own"
    assert tx(store, lambda t: t.executions("w1")) == [], "W-07: storage scheduled an attempt"


def case_work_transition_refused_leaves_record(store: Store, clock: FakeClock) -> None:
    """W-01, W-03: ready -> waiting/completed and waiting -> completed are Invalid
    and leave the record unchanged; the allowed moves succeed."""
    (w,) = put_works(store, make_work("w1"))
    for target in (WAITING, COMPLETED):
        fails(
            store, Invalid, lambda t, s=target: t.put_work(replace(w, state=s)), f"ready->{target}"
        )
    assert get_work(store, "w1") == w, "W-01: a refused transition changed the Work"
    update_work(store, "w1", state=RUNNING)
    w = update_work(store, "w1", state=WAITING)
    fails(store, Invalid, lambda t: t.put_work(replace(w, state=COMPLETED)), "W-03 waiting->done")
    assert get_work(store, "w1") == w, "W-03: a refused transition changed the Work"
    for target in (READY, RUNNING, WAITING, RUNNING, COMPLETED):
        w = update_work(store, "w1", state=target)
    assert w.state == COMPLETED, "W-02: an allowed transition chain failed"


def case_work_same_state_write(store: Store, clock: FakeClock) -> None:
    """W-05: same-state writes on nonterminal Work are allowed, check the revision
    and advance it."""
    (w,) = put_works(store, make_work("w1"))
    for state in (READY, RUNNING, WAITING):
        if w.state != state:
            w = update_work(store, "w1", state=state)
        again = tx(store, lambda t, cur=w: t.put_work(replace(cur, context=payload())))
        assert (again.state, again.revision) == (state, w.revision + 1), (
            f"W-05: same-state {state} write did not advance the revision"
        )
        fails(
            store,
            Conflict,
            lambda t, cur=w: t.put_work(cur),
            f"W-05 same-state {state} write with a stale revision",
        )
        w = again


def case_terminal_work_is_immutable(store: Store, clock: FakeClock) -> None:
    """W-04: terminal Work refuses any write, even same-state or a field change."""
    for n, final in enumerate((COMPLETED, FAILED, CANCELLED)):
        work_id = f"w{n}"
        put_works(store, make_work(work_id))
        if final == COMPLETED:
            update_work(store, work_id, state=RUNNING)
        done = update_work(store, work_id, state=final)
        for what, changed in [
            ("same state", done),
            ("context", replace(done, context=payload())),
            ("ready", replace(done, state=READY)),
            ("new key", replace(done, keys=(key(work_id),))),
        ]:
            fails(store, Invalid, lambda t, c=changed: t.put_work(c), f"W-04 {final} {what}")
        assert get_work(store, work_id) == done, f"W-04: terminal {final} Work was changed"


def case_unknown_work_state_refused(store: Store, clock: FakeClock) -> None:
    """W-06: an unknown Work state is Invalid, on create and on update."""
    bogus = cast(WorkState, "paused")
    fails(store, Invalid, lambda t: t.put_work(make_work("w1", state=bogus)), "W-06 create")
    (w,) = put_works(store, make_work("w1"))
    fails(store, Invalid, lambda t: t.put_work(replace(w, state=bogus)), "W-06 unknown state")
    assert get_work(store, "w1") == w, "W-06: an unknown state was stored"


# ---------------------------------------------------------------------------------
# 8. Execution lifecycle (X)
# ---------------------------------------------------------------------------------


def case_execution_create_rules(store: Store, clock: FakeClock) -> None:
    """X-08 (resolution 2): a new Execution is pending and names an existing,
    nonterminal Work."""
    put_works(store, make_work("w1"), make_work("done"))
    update_work(store, "done", state=CANCELLED)
    for state in (X_RUNNING, X_PARKED, X_COMPLETED, X_CANCELLED):
        kind = OUTCOME_FOR[state]
        fails(
            store,
            Invalid,
            lambda t, s=state, k=kind: t.put_execution(
                make_execution("x1", state=s, outcome=outcome(k) if k else None)
            ),
            f"X-08 Execution created {state}",
        )
    fails(
        store,
        NotFound,
        lambda t: t.put_execution(make_execution("x1", "ghost")),
        "X-08 Execution of a missing Work",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_execution(make_execution("x1", "done")),
        "X-08 Execution of a terminal Work",
    )
    created = tx(store, lambda t: t.put_execution(make_execution("x1")))
    assert (created.state, created.revision) == (X_PENDING, 1), "X-08: pending create failed"
    assert tx(store, lambda t: t.executions()) == [created], "X-08: a refused attempt was stored"


def case_execution_running_only_via_claim(store: Store, clock: FakeClock) -> None:
    """X-01: pending -> running and parked -> running through put_execution are
    Invalid; claim does both."""
    put_works(store, make_work("w1"))
    x = tx(store, lambda t: t.put_execution(make_execution("x1")))
    fails(store, Invalid, lambda t: t.put_execution(replace(x, state=X_RUNNING)), "X-01 pending")
    claimed = tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    assert claimed.state == X_RUNNING, "X-01: claim did not move pending -> running"
    parked = tx(
        store,
        lambda t: t.put_execution(
            replace(t.execution("x1"), state=X_PARKED, outcome=outcome(OutcomeKind.WAITING))
        ),
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_execution(replace(parked, state=X_RUNNING, outcome=None)),
        "X-01 parked -> running through put_execution",
    )
    resumed = tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    assert resumed.state == X_RUNNING, "X-01: claim did not resume the parked attempt"


def _to_state(store: Store, execution_id: str, state: ExecutionState) -> Execution:
    """Drive an attempt from pending to ``state`` along allowed moves."""
    if state not in (X_PENDING, X_CANCELLED):
        tx(store, lambda t: t.claim(execution_id, "runner-a", t.now + TTL))
    if state not in (X_PENDING, X_RUNNING):
        tx(store, lambda t: terminate(t, execution_id, state, None))
    return get_execution(store, execution_id)


def case_execution_allowed_moves(store: Store, clock: FakeClock) -> None:
    """X-02, X-03, X-04: pending -> cancelled; running -> parked, completed, failed,
    waiting, handoff, cancelled; parked -> failed, cancelled."""
    moves = [
        (X_PENDING, X_CANCELLED),
        *((X_RUNNING, s) for s in (X_PARKED, X_COMPLETED, X_FAILED, X_WAITING, X_HANDOFF)),
        (X_RUNNING, X_CANCELLED),
        (X_PARKED, X_FAILED),
        (X_PARKED, X_CANCELLED),
    ]
    for n, (source, target) in enumerate(moves):
        work_id, execution_id = f"w{n}", f"x{n}"
        put_works(store, make_work(work_id))
        tx(store, lambda t, w=work_id, x=execution_id: t.put_execution(make_execution(x, w)))
        _to_state(store, execution_id, source)
        tx(store, lambda t, x=execution_id, s=target: terminate(t, x, s, None))
        assert get_execution(store, execution_id).state == target, (
            f"X-02..X-04: {source} -> {target} was not applied"
        )


def case_execution_refused_moves(store: Store, clock: FakeClock) -> None:
    """X-05, X-06: moves outside the table are Invalid and change nothing, terminal
    attempts included."""
    refused = [
        (X_PENDING, X_PARKED),
        (X_PENDING, X_COMPLETED),
        (X_PENDING, X_FAILED),
        (X_RUNNING, X_PENDING),
        (X_PARKED, X_COMPLETED),
        (X_PARKED, X_HANDOFF),
        (X_PARKED, X_WAITING),
        (X_PARKED, X_PENDING),
        *((s, t) for s in storage.TERMINAL_EXECUTION_STATES for t in (X_PENDING, X_CANCELLED)),
        (X_COMPLETED, X_COMPLETED),
        (X_FAILED, X_FAILED),
    ]
    for n, (source, target) in enumerate(refused):
        work_id, execution_id = f"w{n}", f"x{n}"
        put_works(store, make_work(work_id))
        tx(store, lambda t, w=work_id, x=execution_id: t.put_execution(make_execution(x, w)))
        before = _to_state(store, execution_id, source)
        kind = OUTCOME_FOR[target]
        fails(
            store,
            Invalid,
            lambda t, b=before, s=target, k=kind: t.put_execution(
                replace(b, state=s, outcome=outcome(k) if k else None)
            ),
            f"X-05/X-06 {source} -> {target}",
        )
        assert get_execution(store, execution_id) == before, (
            f"X-05/X-06: refused {source} -> {target} changed the attempt"
        )


def case_execution_same_state_write(store: Store, clock: FakeClock) -> None:
    """X-07 (resolution 3): same-state writes on pending, running and parked attempts
    are allowed with a revision check (e.g. attaching an artifact reference)."""
    ref = ArtifactRef(id="art-1", size=12, media_type="text/plain", sha256="ab" * 32)
    put_works(store, make_work("w1"))
    x = tx(store, lambda t: t.put_execution(make_execution("x1")))
    x = tx(store, lambda t: t.put_execution(replace(x, trace_id="trace-1")))
    assert (x.state, x.trace_id, x.revision) == (X_PENDING, "trace-1", 2), "X-07 pending write"
    tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    x = tx(store, lambda t: t.put_execution(replace(t.execution("x1"), artifacts=(ref,))))
    assert (x.state, x.artifacts) == (X_RUNNING, (ref,)), "X-07: running write lost the artifact"
    fails(
        store,
        Conflict,
        lambda t: t.put_execution(replace(x, revision=x.revision - 1, trace_id="t2")),
        "X-07 same-state write with a stale revision",
    )
    tx(store, lambda t: terminate(t, "x1", X_PARKED, None))
    parked = tx(store, lambda t: t.put_execution(replace(t.execution("x1"), trace_id="t3")))
    assert (parked.state, parked.trace_id) == (X_PARKED, "t3"), "X-07: parked write refused"
    assert get_execution(store, "x1").artifacts == (ref,), "X-07: artifact ref lost"


def case_attempt_numbering(store: Store, clock: FakeClock) -> None:
    """X-09: attempts start at 1 and advance by 1 without gaps."""
    put_works(store, make_work("w1"))
    for bad in (0, 2, -1):
        fails(
            store,
            Invalid,
            lambda t, n=bad: t.put_execution(make_execution("x", "w1", n)),
            f"X-09 first attempt numbered {bad}",
        )
    tx(store, lambda t: t.put_execution(make_execution("x1", "w1", 1)))
    tx(store, lambda t: terminate(t, "x1", X_CANCELLED, None))
    for bad in (1, 3):
        fails(
            store,
            Invalid,
            lambda t, n=bad: t.put_execution(make_execution("x", "w1", n)),
            f"X-09 next attempt numbered {bad} after 1",
        )
    tx(store, lambda t: t.put_execution(make_execution("x2", "w1", 2)))
    attempts = [x.attempt for x in tx(store, lambda t: t.executions("w1"))]
    assert attempts == [1, 2], f"X-09: attempts are not gapless: {attempts}"


def case_one_live_attempt(store: Store, clock: FakeClock) -> None:
    """X-10: creating an attempt while another pending, running or parked attempt of
    the same Work exists conflicts."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: t.put_execution(make_execution("x1")))
    for state in (X_PENDING, X_RUNNING, X_PARKED):
        if state == X_RUNNING:
            tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
        if state == X_PARKED:
            tx(store, lambda t: terminate(t, "x1", X_PARKED, None))
        fails(
            store,
            Conflict,
            lambda t: t.put_execution(make_execution("x2", "w1", 2)),
            f"X-10 second attempt beside a {state} one",
        )
    tx(store, lambda t: terminate(t, "x1", X_FAILED, None))
    tx(store, lambda t: t.put_execution(make_execution("x2", "w1", 2)))
    assert ids(tx(store, lambda t: t.live_executions("w1"))) == ["x2"], "X-10: live attempts"


def case_execution_times(store: Store, clock: FakeClock) -> None:
    """X-11: the first claim sets started_at; later claims keep it; a terminal write
    sets finished_at; pending, running and parked have none."""
    put_works(store, make_work("w1"))
    x = tx(store, lambda t: t.put_execution(make_execution("x1")))
    assert (x.started_at, x.finished_at) == (0, 0), "X-11: a pending attempt has times"
    clock.advance(seconds=1)
    first_claim = clock()
    x = tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    assert (x.started_at, x.finished_at) == (first_claim, 0), "X-11: first claim start time"
    clock.advance(seconds=1)
    tx(store, lambda t: terminate(t, "x1", X_PARKED, None))
    clock.advance(seconds=1)
    x = tx(store, lambda t: t.claim("x1", "runner-b", t.now + TTL))
    assert (x.started_at, x.finished_at) == (first_claim, 0), (
        "X-11: resuming a parked attempt changed started_at or set finished_at"
    )
    clock.advance(seconds=TTL / 1e9 + 1)
    x = tx(store, lambda t: t.claim("x1", "runner-c", t.now + TTL))
    assert x.started_at == first_claim, "X-11: recovering an expired lease moved started_at"
    clock.advance(seconds=1)
    finish = clock()
    tx(store, lambda t: terminate(t, "x1", X_COMPLETED, None))
    x = get_execution(store, "x1")
    assert (x.started_at, x.finished_at) == (first_claim, finish), (
        "X-11: a terminal write did not set finished_at = tx.now"
    )


def case_unknown_execution_state_refused(store: Store, clock: FakeClock) -> None:
    """X-06: an unknown Execution state is Invalid."""
    put_works(store, make_work("w1"))
    x = tx(store, lambda t: t.put_execution(make_execution("x1")))
    bogus = cast(ExecutionState, "sleeping")
    fails(store, Invalid, lambda t: t.put_execution(replace(x, state=bogus)), "X-06 unknown")
    assert get_execution(store, "x1") == x, "X-06: an unknown Execution state was stored"


# ---------------------------------------------------------------------------------
# 9. Outcomes (O)
# ---------------------------------------------------------------------------------


def _running(store: Store, n: int) -> Execution:
    work_id, execution_id = f"w{n}", f"x{n}"
    start_attempt(store, work_id=work_id, execution_id=execution_id)
    return get_execution(store, execution_id)


def case_outcome_kind_valid(store: Store, clock: FakeClock) -> None:
    """O-01: an outcome kind outside completed/failed/waiting/handoff is Invalid."""
    x = _running(store, 1)
    bogus = Outcome(cast(OutcomeKind, "exploded"))
    fails(
        store,
        Invalid,
        lambda t: t.put_execution(replace(x, state=X_FAILED, outcome=bogus)),
        "O-01 unknown outcome kind",
    )
    assert get_execution(store, "x1") == x, "O-01: an unknown outcome kind was stored"


def case_outcome_matches_state(store: Store, clock: FakeClock) -> None:
    """O-02, O-03, O-04: completed/failed/handoff need their outcome; parked and
    terminal waiting need a waiting outcome; pending, running and cancelled have
    none."""
    n = 0
    for state in (X_COMPLETED, X_FAILED, X_HANDOFF, X_PARKED, X_WAITING):
        wanted = OUTCOME_FOR[state]
        wrong = [None, *(k for k in OutcomeKind if k != wanted)]
        for bad in wrong:
            n += 1
            x = _running(store, n)
            fails(
                store,
                Invalid,
                lambda t, x=x, s=state, b=bad: t.put_execution(
                    replace(x, state=s, outcome=outcome(b) if b else None)
                ),
                f"O-02/O-04 {state} with outcome {bad}",
            )
    for state in (X_RUNNING, X_CANCELLED):
        for kind in OutcomeKind:
            n += 1
            x = _running(store, n)
            fails(
                store,
                Invalid,
                lambda t, x=x, s=state, k=kind: t.put_execution(
                    replace(x, state=s, outcome=outcome(k))
                ),
                f"O-03 {state} with outcome {kind}",
            )
    put_works(store, make_work("wp"))
    fails(
        store,
        Invalid,
        lambda t: t.put_execution(
            make_execution("xp", "wp", outcome=outcome(OutcomeKind.COMPLETED))
        ),
        "O-03 pending with an outcome",
    )


def case_outcome_round_trip(store: Store, clock: FakeClock) -> None:
    """O-07, X-11: outcome content is opaque and round-trips unchanged."""
    x = _running(store, 1)
    done = Outcome(OutcomeKind.FAILED, "exit status 3", Payload("conduit.exit", RAW_JSON))
    tx(store, lambda t: t.put_execution(replace(x, state=X_FAILED, outcome=done)))
    assert get_execution(store, "x1").outcome == done, "O-07: the outcome did not round-trip"


def case_park_and_terminal_release_authority(store: Store, clock: FakeClock) -> None:
    """O-05: parking or ending an attempt clears owner and expiry, keeps the epoch,
    and the old lease is then fenced."""
    for n, state in enumerate((X_PARKED, X_WAITING, X_COMPLETED, X_FAILED, X_HANDOFF)):
        work_id, execution_id = f"w{n}", f"x{n}"
        lease = start_attempt(store, work_id=work_id, execution_id=execution_id)
        tx(store, lambda t, x=execution_id, s=state: terminate(t, x, s, None), lease=lease)
        x = get_execution(store, execution_id)
        assert (x.owner, x.lease_expires_at, x.epoch) == ("", 0, lease.epoch), (
            f"O-05: {state} did not release authority while keeping the epoch: {x}"
        )
        fails(
            store,
            Fenced,
            lambda t, w=work_id: t.put_work(replace(t.work(w), context=payload())),
            f"O-05 old lease after {state}",
            lease=lease,
        )


# ---------------------------------------------------------------------------------
# 10. Retry, handoff and cancellation (R)
# ---------------------------------------------------------------------------------


def inventory(store: Store, *namespaces: str) -> dict[str, object]:
    """Everything a store holds, for "nothing changed" comparisons."""

    def read(t: Tx) -> dict[str, object]:
        return {
            "works": t.works(),
            "events": t.events(),
            "latest_sequence": t.latest_sequence(),
            "executions": t.executions(),
            "scopes": t.scopes(),
            "timers": t.timers(),
            "waits": t.waits(),
            **{f"kv:{ns}": t.kv_list(ns) for ns in namespaces},
        }

    return tx(store, read)


def case_failed_attempt_does_not_fail_work(store: Store, clock: FakeClock) -> None:
    """R-01: an attempt failing leaves its Work's state alone; storage never
    cascades."""
    start_attempt(store)
    tx(store, lambda t: terminate(t, "x1", X_FAILED, None))
    assert stored_state(store, "w1") == RUNNING, "R-01: a failed attempt changed its Work"


def case_retry_transaction_is_atomic(store: Store, clock: FakeClock) -> None:
    """R-02: failed attempt + MarkRouted + Work running->ready + backoff Timer commit
    together; a failure injected after the last step leaves none of them."""
    start_attempt(store)
    tx(store, lambda t: t.accept_event(make_event("e1", work_id="w1")))
    before = inventory(store)

    def retry(t: Tx, fail: bool) -> None:
        terminate(t, "x1", X_FAILED, READY)
        t.mark_routed("e1", "w1", "routed")
        t.put_timer(make_timer("retry-w1", t.now + seconds(300), work_id="w1", purpose="retry"))
        if fail:
            raise Crash("injected failure after the last retry step")

    crashes(store, lambda t: retry(t, True), "R-02 failed retry")
    assert inventory(store) == before, "R-02: a failed retry transaction left partial effects"
    tx(store, lambda t: retry(t, False))

    def after(t: Tx) -> tuple[ExecutionState, WorkState, bool, list[str]]:
        return (
            t.execution("x1").state,
            t.work("w1").state,
            t.event("e1").routed,
            ids(t.timers("w1")),
        )

    assert tx(store, after) == (X_FAILED, READY, True, ["retry-w1"]), (
        "R-02: the retry transaction did not commit all of its effects"
    )


def case_attempt_exhaustion(store: Store, clock: FakeClock) -> None:
    """Scenario "attempt exhaustion" (R-03, X-09, X-10, O-06): after the last
    automatic attempt fails the Work stays ready with no timer; an operator retry (a
    core.manual Event, then retry_work and MarkRouted) creates attempt N+1 with the
    same binding and executor."""
    from storage.control import retry_work

    binding = Binding(name="default", executor="shell", pass_env=("HOME",))
    put_works(store, make_work("w1"))
    for n in (1, 2, 3):

        def attempt(t: Tx, n: int = n) -> None:
            t.put_execution(make_execution(f"x{n}", "w1", n, executor="shell", binding=binding))
            t.claim(f"x{n}", "runner-a", t.now + TTL)

        tx(store, attempt)
        tx(store, lambda t, n=n: terminate(t, f"x{n}", X_FAILED, READY))
        clock.advance(seconds=1)

    def exhausted(t: Tx) -> tuple[WorkState, list[Any], list[Any]]:
        return t.work("w1").state, t.timers("w1"), t.live_executions("w1")

    assert tx(store, exhausted) == (READY, [], []), (
        "attempt exhaustion: exhausted Work is not ready, idle and timer-free"
    )
    manual = make_event("retry-1", source="core.manual", actor="operator:alice", work_id="w1")
    tx(store, lambda t: t.accept_event(manual))

    def operator_retry(t: Tx) -> Execution:
        execution = retry_work(t, "w1", "x4")
        t.mark_routed("retry-1", "w1", "routed")
        return execution

    x4 = tx(store, operator_retry)
    assert (x4.attempt, x4.state) == (4, X_PENDING), (
        f"attempt exhaustion: operator retry made attempt {x4.attempt} ({x4.state}), expected 4"
    )
    assert (x4.executor, x4.binding) == ("shell", binding), (
        "attempt exhaustion: the retry did not keep the previous binding and executor"
    )
    attempts = [x.attempt for x in tx(store, lambda t: t.executions("w1"))]
    assert attempts == [1, 2, 3, 4], f"attempt exhaustion: attempts have gaps: {attempts}"
    assert stored_state(store, "w1") == READY, "attempt exhaustion: retried Work is not ready"
    fails(
        store,
        Conflict,
        lambda t: retry_work(t, "w1", "x5"),
        "attempt exhaustion: a second retry beside a live attempt",
    )


def case_terminal_failure_policy(store: Store, clock: FakeClock) -> None:
    """R-04, R-09: the failed attempt and Work -> failed commit in one tx; retry of
    failed Work is refused; a successor needs distinct keys."""
    from storage.control import retry_work

    k = key("issue-1")
    start_attempt(store, keys=[k])
    tx(store, lambda t: terminate(t, "x1", X_FAILED, FAILED))
    assert stored_state(store, "w1") == FAILED, "R-04: Work -> failed was refused"
    before = inventory(store)
    fails(store, Invalid, lambda t: retry_work(t, "w1", "x2"), "R-09 retry of failed Work")
    assert inventory(store) == before, "R-09: a refused retry changed the failed Work"
    fails(
        store,
        Conflict,
        lambda t: t.put_work(make_work("w1-gen2", keys=[k])),
        "R-09 successor reusing a terminal Work's key",
    )
    successor = put_works(store, make_work("w1-gen2", keys=[key("issue-1#gen2")]))[0]
    assert successor.state == READY, "R-09: a successor with a distinct key was refused"


def case_retry_work_rules(store: Store, clock: FakeClock) -> None:
    """R-03, R-05 (lead rule): retry_work needs nonterminal Work without a live
    attempt (Conflict otherwise) and returns it to ready with attempt N+1."""
    from storage.control import retry_work

    start_attempt(store, executor="docker")
    fails(store, Conflict, lambda t: retry_work(t, "w1", "x2"), "retry beside a running attempt")
    tx(store, lambda t: park(t, "x1", terminal=True))
    assert stored_state(store, "w1") == WAITING, "retry rules: Work not waiting after park"
    x2 = tx(store, lambda t: retry_work(t, "w1", "x2"))
    assert (x2.attempt, x2.state, x2.executor) == (2, X_PENDING, "docker"), (
        f"retry rules: unexpected attempt {x2}"
    )
    assert stored_state(store, "w1") == READY, "retry rules: retried Work is not ready"


def case_handoff_and_wait_outcomes(store: Store, clock: FakeClock) -> None:
    """Scenario "handoff/wait outcomes" (R-05, O-04, O-06, WT-09): handoff ends the
    attempt and returns Work to ready (not completed); terminal waiting is woken by
    attempt N+1; parked is woken by a new claim of the same attempt."""
    lease = start_attempt(store)

    def handoff(t: Tx) -> None:
        x = t.execution("x1")
        done = Outcome(OutcomeKind.HANDOFF, "continue on gpu")
        t.put_execution(replace(x, state=X_HANDOFF, outcome=done))
        t.put_work(replace(t.work("w1"), state=READY))

    tx(store, handoff, lease=lease)
    assert (get_execution(store, "x1").state, stored_state(store, "w1")) == (X_HANDOFF, READY), (
        "handoff/wait outcomes: handoff did not end the attempt and return Work to ready"
    )

    # Terminal waiting: an executor without resume; the wake creates attempt 3.
    lease = start_attempt(store, execution_id="x2", attempt=2, create_work=False)
    wait1 = make_wait("wt1", "w1", "x2", types=["review.approved"])
    tx(store, lambda t: park(t, "x2", wait1, terminal=True), lease=lease)
    x2 = get_execution(store, "x2")
    assert (x2.state, x2.outcome) == (X_WAITING, outcome(OutcomeKind.WAITING)), (
        "handoff/wait outcomes: terminal waiting lost its waiting outcome"
    )
    tx(store, lambda t: t.accept_event(make_event("wake-1", type="review.approved")))

    def wake_next(t: Tx) -> None:
        t.put_wait(replace(t.wait("wt1"), state=WaitState.WOKEN, woken_by="wake-1"))
        t.put_execution(make_execution("x3", "w1", 3))
        t.put_work(replace(t.work("w1"), state=READY))

    tx(store, wake_next)
    assert (tx(store, lambda t: t.wait("wt1").state), stored_state(store, "w1")) == (
        WaitState.WOKEN,
        READY,
    ), "handoff/wait outcomes: waking terminal waiting did not create attempt N+1"

    # Parked: a resume-capable executor; the wake claims the same attempt again.
    first = tx(store, lambda t: t.claim("x3", "runner-a", t.now + TTL))
    wait2 = make_wait("wt2", "w1", "x3", types=["review.approved"])
    tx(store, lambda t: park(t, "x3", wait2), lease=lease_of(first))
    tx(store, lambda t: t.accept_event(make_event("wake-2", type="review.approved")))

    def wake_parked(t: Tx) -> Execution:
        t.put_wait(replace(t.wait("wt2"), state=WaitState.WOKEN, woken_by="wake-2"))
        return t.claim("x3", "runner-b", t.now + TTL)

    resumed = tx(store, wake_parked)
    assert (resumed.state, resumed.epoch) == (X_RUNNING, first.epoch + 1), (
        "handoff/wait outcomes: the parked attempt was not resumed by a new claim"
    )
    assert resumed.started_at == first.started_at, "handoff/wait outcomes: resume moved start"
    assert stored_state(store, "w1") == RUNNING, "handoff/wait outcomes: resumed Work not running"
    tx(store, lambda t: terminate(t, "x3", X_COMPLETED, COMPLETED), lease=lease_of(resumed))
    assert stored_state(store, "w1") == COMPLETED, "handoff/wait outcomes: completion refused"


def _waiting_work_with_timers(store: Store, clock: FakeClock) -> LeaseRef:
    """w1 waiting on wt1 (timeout timer t-timeout) with its attempt x1 parked, plus a
    retry timer of w1 and an unrelated timer of w2."""
    lease = start_attempt(store, keys=[key("1")])
    put_works(store, make_work("w2"))

    def register(t: Tx) -> None:
        t.put_timer(make_timer("t-timeout", t.now + seconds(600), work_id="w1", purpose="timeout"))
        t.put_timer(make_timer("t-retry", t.now + seconds(300), work_id="w1", purpose="retry"))
        t.put_timer(make_timer("t-other", t.now + seconds(300), work_id="w2"))
        park(t, "x1", make_wait("wt1", keys=[key("1")], timeout_timer_id="t-timeout"))

    tx(store, register, lease=lease)
    return lease


def case_cancel_work(store: Store, clock: FakeClock) -> None:
    """R-06: cancel_work cancels the nonterminal attempt, cancels active waits,
    deletes the Work's timers and cancels the Work, in one transaction; a failure
    after it leaves everything as it was."""
    from storage.control import cancel_work

    _waiting_work_with_timers(store, clock)
    before = inventory(store)

    def cancel_then_fail(t: Tx) -> None:
        cancel_work(t, "w1")
        raise Crash("injected failure after cancel_work")

    crashes(store, cancel_then_fail, "R-06 cancel then failure")
    assert inventory(store) == before, "R-06: a rolled-back cancellation left partial effects"
    tx(store, lambda t: cancel_work(t, "w1"))

    def after(t: Tx) -> tuple[object, ...]:
        return (
            t.work("w1").state,
            t.execution("x1").state,
            t.wait("wt1").state,
            ids(t.timers()),
            t.work("w2").state,
        )

    assert tx(store, after) == (CANCELLED, X_CANCELLED, WaitState.CANCELLED, ["t-other"], READY), (
        "R-06: cancel_work did not cancel attempt, waits, timers and Work together"
    )

    # A pending attempt is cancelled too.
    put_works(store, make_work("w3"))
    tx(store, lambda t: t.put_execution(make_execution("x3", "w3")))
    tx(store, lambda t: cancel_work(t, "w3"))
    assert get_execution(store, "x3").state == X_CANCELLED, "R-06: pending attempt not cancelled"


def case_cancellation_fencing(store: Store, clock: FakeClock) -> None:
    """Scenario "cancellation fencing" (R-07, L-07, O-05): after a cancel commits, a
    transaction guarded by the old lease is Fenced before its callback runs; a stale
    completion cannot reverse the cancellation."""
    from storage.control import cancel_work

    lease = start_attempt(store)
    tx(store, lambda t: cancel_work(t, "w1"))
    calls: list[int] = []

    def stale_completion(t: Tx) -> None:
        calls.append(1)
        terminate(t, "x1", X_COMPLETED, COMPLETED)

    fails(store, Fenced, stale_completion, "cancellation fencing: stale completion", lease=lease)
    assert calls == [], "cancellation fencing: the fenced callback ran"
    fails(
        store,
        Invalid,
        lambda t: terminate(t, "x1", X_COMPLETED, None),
        "cancellation fencing: completion of a cancelled attempt",
    )
    fails(
        store,
        Invalid,
        lambda t: t.claim("x1", "runner-b", t.now + TTL),
        "cancellation fencing: claim of a cancelled attempt",
    )
    assert (stored_state(store, "w1"), get_execution(store, "x1").state) == (
        CANCELLED,
        X_CANCELLED,
    ), "cancellation fencing: a stale writer reversed the cancellation"


def case_cancel_terminal_work_refused(store: Store, clock: FakeClock) -> None:
    """R-08: cancelling terminal Work is Invalid and changes nothing."""
    from storage.control import cancel_work

    start_attempt(store)
    tx(store, lambda t: terminate(t, "x1", X_COMPLETED, COMPLETED))
    before = inventory(store)
    fails(store, Invalid, lambda t: cancel_work(t, "w1"), "R-08 cancel of completed Work")
    assert inventory(store) == before, "R-08: a refused cancel changed something"


# ---------------------------------------------------------------------------------
# 11. Transactions (T)
# ---------------------------------------------------------------------------------


def case_transact_is_the_only_write_path(store: Store, clock: FakeClock) -> None:
    """T-01: the store itself has no write operation; writes need a live Tx."""
    exposed = [name for name in WRITE_OPERATIONS if hasattr(store, name)]
    assert exposed == [], f"T-01: the store exposes writes outside transact: {exposed}"


def case_callback_runs_once(store: Store, clock: FakeClock) -> None:
    """T-02: the callback runs exactly once per transact: on success, on a callback
    error, on a failure at commit and on cancellation; no transparent retries."""
    start_attempt(store)
    calls: list[str] = []

    def counted(name: str, body: Callable[[Tx], object]) -> Callable[[Tx], object]:
        def run(t: Tx) -> object:
            calls.append(name)
            return body(t)

        return run

    def boom(t: Tx) -> None:
        raise Crash("callback error")

    def cancel(t: Tx, token: CancelToken) -> None:
        t.put_work(make_work("w-cancelled"))
        token.cancel()

    tx(store, counted("ok", lambda t: t.put_work(make_work("w2"))))
    crashes(store, counted("error", boom), "T-02 callback error")
    # A Wait registered without parking fails only at commit (WT-02).
    fails(
        store,
        Invalid,
        counted("commit", lambda t: t.put_wait(make_wait("wt1"))),
        "T-02 commit failure",
    )
    token = CancelToken()
    with contextlib.suppress(Cancelled):
        store.transact(Guard(cancel=token), counted("cancel", lambda t: cancel(t, token)))
    assert calls == ["ok", "error", "commit", "cancel"], f"T-02: callback calls were {calls}"


def case_callback_error_rolls_back(store: Store, clock: FakeClock) -> None:
    """T-03, T-10: a storage error returned (raised) by the callback rolls back every
    earlier write and transact raises that same error."""
    put_works(store, make_work("w1"))
    before = inventory(store)
    seen: list[StorageError] = []

    def fn(t: Tx) -> None:
        t.put_work(replace(t.work("w1"), state=RUNNING))
        t.accept_event(make_event("e1"))
        try:
            t.put_work(make_work("w2", kind="nodot"))
        except Invalid as err:
            seen.append(err)
            raise

    caught = fails(store, Invalid, fn, "T-03 callback error")
    assert seen, "T-03: the operation did not raise"
    assert caught is seen[0], "T-03: transact did not return the callback's error"
    assert inventory(store) == before, "T-03: writes before a callback error were committed"


def case_panic_rollback(store: Store, clock: FakeClock) -> None:
    """Scenario "panic rollback" (T-04, T-09): an exception from the callback after
    writes of every kind rolls all of them back and propagates unchanged."""
    put_works(store, make_work("w0", keys=[key("0")]))
    before = inventory(store, "ns")
    boom = Crash("panic inside the callback")

    def fn(t: Tx) -> None:
        t.put_scope(make_scope("s1"))
        t.put_work(make_work("w1", keys=[key("1")]))
        t.put_work(replace(t.work("w0"), state=RUNNING, keys=(key("0"), key("0b"))))
        t.accept_event(make_event("e1", work_id="w1"))
        t.mark_routed("e1", "w1", "routed")
        t.put_execution(make_execution("x1", "w1"))
        t.claim("x1", "runner-a", t.now + TTL)
        t.put_timer(make_timer("t1", t.now + seconds(5), work_id="w1"))
        t.kv_put("ns", "cursor", b"42")
        raise boom

    raised = crashes(store, fn, "panic rollback")
    assert raised is boom, "panic rollback: transact did not propagate the same exception"
    assert inventory(store, "ns") == before, "panic rollback: writes before the panic committed"
    fails(store, NotFound, lambda t: t.work_by_key(key("0b")), "panic rollback: key attached")


def case_cancellation_rollback(store: Store, clock: FakeClock) -> None:
    """Scenario "cancellation rollback" (T-05): a cancel token fired inside the
    callback, or a passed deadline, raises Cancelled and commits nothing."""
    put_works(store, make_work("w0"))
    before = inventory(store, "ns")

    def writes(t: Tx) -> None:
        t.put_work(make_work("w1"))
        t.put_work(replace(t.work("w0"), state=RUNNING))
        t.accept_event(make_event("e1"))
        t.kv_put("ns", "k", b"v")

    token = CancelToken()

    def cancelled_inside(t: Tx) -> None:
        writes(t)
        token.cancel()

    for what, guard, fn in [
        ("cancel token", Guard(cancel=token), cancelled_inside),
        ("deadline", Guard(deadline=time.monotonic() - 1), writes),
    ]:
        try:
            store.transact(guard, fn)
        except Cancelled:
            pass
        else:
            raise AssertionError(f"cancellation rollback: {what} did not raise Cancelled")
        assert inventory(store, "ns") == before, f"cancellation rollback: {what} committed"


def case_stale_read_modify_write_conflicts(store: Store, clock: FakeClock) -> None:
    """T-06, ID-05: two concurrent writers updating the revision they both read: one
    commits, the other gets Conflict, and a retry with re-read state succeeds."""
    (w,) = put_works(store, make_work("w1"))
    barrier = threading.Barrier(2, timeout=BLOCK_TIMEOUT)

    def writer(n: int) -> Callable[[], object]:
        def run() -> object:
            barrier.wait()
            return tx(store, lambda t: t.put_work(replace(w, context=payload(f"[{n}]".encode()))))

        return run

    workers = [Worker(writer(n), name=f"writer-{n}") for n in (1, 2)]
    assert all(worker.join() for worker in workers), "T-06: a writer never finished"
    errors = [type(worker.error).__name__ for worker in workers if worker.error is not None]
    assert errors == ["Conflict"], f"T-06: concurrent writers of one revision got {errors}"
    retried = update_work(store, "w1", state=RUNNING)
    assert retried.revision == 3, "T-06: retry with re-read state did not commit"


def case_tx_closed_after_return(store: Store, clock: FakeClock) -> None:
    """T-08: a Tx used after its transact returned raises TxClosed."""
    put_works(store, make_work("w1"))
    leaked: Tx = tx(store, lambda t: t)
    raises(TxClosed, lambda: leaked.work("w1"), "T-08 read through a leaked Tx")
    raises(TxClosed, lambda: leaked.put_work(make_work("w2")), "T-08 write through a leaked Tx")
    assert ids(tx(store, lambda t: t.works())) == ["w1"], "T-08: a leaked Tx wrote"


def case_nested_transact_refused(store: Store, clock: FakeClock) -> None:
    """T-08: transact inside a callback raises TxClosed (run in a thread so a
    deadlocking backend fails instead of hanging)."""

    def outer() -> object:
        def callback(t: Tx) -> object:
            t.put_work(make_work("w1"))
            try:
                tx(store, lambda inner: inner.put_work(make_work("w2")))
            except TxClosed:
                return "refused"
            return "nested transaction ran"

        return tx(store, callback)

    worker = Worker(outer, name="nested")
    assert worker.join(), "T-08: a nested transact deadlocked"
    assert worker.error is None, f"T-08: nested transact raised {worker.error!r}"
    assert worker.result == "refused", f"T-08: {worker.result}"
    assert "w2" not in ids(tx(store, lambda t: t.works())), "T-08: a nested transaction wrote"


def case_tx_refused_from_other_thread(store: Store, clock: FakeClock) -> None:
    """T-08: using a Tx from another thread raises TxClosed."""
    put_works(store, make_work("w1"))

    def callback(t: Tx) -> BaseException | None:
        worker = Worker(lambda: t.put_work(make_work("w2")), name="intruder")
        assert worker.join(), "T-08: a Tx used from another thread blocked"
        return worker.error

    error = tx(store, callback)
    assert isinstance(error, TxClosed), f"T-08: another thread's use of a Tx gave {error!r}"
    assert ids(tx(store, lambda t: t.works())) == ["w1"], "T-08: another thread wrote via a Tx"


def case_everything_in_one_transaction(store: Store, clock: FakeClock) -> None:
    """T-09: Event acceptance, Work create/correlate/update, route progress, attempt
    create/claim, Wait registration, Timer and KV writes commit together."""
    put_works(store, make_work("w0"))

    def fn(t: Tx) -> None:
        t.accept_event(make_event("e1", keys=[key("1")]))
        t.put_work(make_work("w1", keys=[key("1")]))
        t.put_work(replace(t.work("w0"), state=RUNNING))
        t.mark_routed("e1", "w1", "routed")
        t.put_execution(make_execution("x1", "w1"))
        t.claim("x1", "runner-a", t.now + TTL)
        t.put_timer(make_timer("t1", t.now + seconds(60), work_id="w1", purpose="timeout"))
        park(t, "x1", make_wait("wt1", keys=[key("1")], timeout_timer_id="t1"))
        t.kv_put("ns", "cursor", b"1")

    tx(store, fn)

    def read(t: Tx) -> tuple[object, ...]:
        return (
            t.event("e1").routed,
            t.work("w1").state,
            t.work("w0").state,
            t.execution("x1").state,
            t.wait("wt1").state,
            t.timer("t1").id,
            t.kv_get("ns", "cursor"),
        )

    assert tx(store, read) == (True, WAITING, RUNNING, X_PARKED, WaitState.ACTIVE, "t1", b"1"), (
        "T-09: one transaction did not commit all of its operations"
    )


def case_swallowed_error_leaves_no_partial_effect(store: Store, clock: FakeClock) -> None:
    """T-10 (resolution 6): an operation that raises has no effect; a callback that
    swallows the error can go on and commit its other writes."""
    put_works(store, make_work("owner", keys=[key("owned")]))

    def fn(t: Tx) -> None:
        raises(
            Conflict,
            lambda: t.put_work(make_work("w1", keys=[key("free"), key("owned")])),
            "T-10 conflicting create",
        )
        raises(Invalid, lambda: t.kv_put("", "k", b"v"), "T-10 empty namespace")
        t.put_work(make_work("w2", keys=[key("free")]))

    tx(store, fn)
    assert tx(store, lambda t: t.work_by_key(key("free")).id) == "w2", (
        "T-10: a failed operation left a partial effect or blocked the rest"
    )
    assert ids(tx(store, lambda t: t.works())) == ["owner", "w2"], "T-10: failed create stored"


def case_now_is_fixed_for_the_transaction(store: Store, clock: FakeClock) -> None:
    """T-11, L-01: tx.now is fixed for a transaction; every timestamp it writes is
    that value even when the clock moves during the callback."""

    def fn(t: Tx) -> tuple[int, list[int]]:
        now = t.now
        stamps = [t.put_work(make_work("w1")).created_at]
        clock.advance(seconds=5)
        assert t.now == now, "T-11: tx.now moved during the transaction"
        stamps.append(t.put_scope(make_scope("s1")).updated_at)
        clock.advance(seconds=5)
        stamps.append(t.accept_event(make_event("e1"))[0].event.received_at)
        t.put_execution(make_execution("x1"))
        stamps.append(t.claim("x1", "runner-a", now + TTL).started_at)
        return now, stamps

    now, stamps = tx(store, fn)
    assert stamps == [now] * 4, f"T-11: timestamps of one transaction differ: {stamps}"


def case_now_never_decreases(store: Store, clock: FakeClock) -> None:
    """L-02, resolution 11: tx.now = max(clock, last committed now), so a clock that
    steps back never moves trusted time backwards; Guard.clock overrides the clock."""
    clock.advance(seconds=10)
    first = tx(store, lambda t: t.put_work(make_work("w1")).created_at)
    clock.set(first - seconds(60))
    second = tx(store, lambda t: t.put_work(make_work("w2")).created_at)
    assert second >= first, f"L-02: tx.now went backwards ({first} -> {second})"
    later = first + seconds(3600)
    third = store.transact(
        Guard(clock=lambda: later), lambda t: t.put_work(make_work("w-later")).created_at
    )
    assert third == later, "L-01: Guard.clock did not set tx.now"
    clock.set(first)
    fourth = tx(store, lambda t: t.put_work(make_work("w3")).created_at)
    assert fourth >= later, "L-02: tx.now fell below an earlier committed Guard.clock time"


# ---------------------------------------------------------------------------------
# 12. Views (V)
# ---------------------------------------------------------------------------------


def _view_fixture(store: Store) -> LeaseRef:
    """w1 with its attempt x1 running (the returned lease), w2 with a pending x2, an
    unrouted Event e1, Scope s1, a due Timer t1 and KV ns/k."""
    lease = start_attempt(store)

    def build(t: Tx) -> None:
        t.put_work(make_work("w2"))
        t.put_execution(make_execution("x2", "w2"))
        t.put_scope(make_scope("s1"))
        t.accept_event(make_event("e1"))
        t.put_timer(make_timer("t1", t.now))
        t.kv_put("ns", "k", b"v")

    tx(store, build)
    return lease


def _attempt_every_write(t: Tx, lease: LeaseRef) -> list[str]:
    """Try each write operation with arguments that would otherwise succeed; return
    those that did not raise ReadOnly."""
    timer_revision = t.timer("t1").revision
    attempts: dict[str, Callable[[], object]] = {
        "accept_event": lambda: t.accept_event(make_event("e-view")),
        "mark_routed": lambda: t.mark_routed("e1", "w1", "routed"),
        "set_event_scope": lambda: t.set_event_scope("e1", "s1"),
        "put_work": lambda: t.put_work(make_work("w-view")),
        "put_execution": lambda: t.put_execution(replace(t.execution("x1"), trace_id="v")),
        "claim": lambda: t.claim("x2", "runner-b", t.now + TTL),
        "renew": lambda: t.renew(lease, t.now + 2 * TTL),
        "release": lambda: t.release(lease),
        "set_execution_executor": lambda: t.set_execution_executor("x2", "shell"),
        "put_scope": lambda: t.put_scope(make_scope("s-view")),
        "put_timer": lambda: t.put_timer(make_timer("t-view", t.now)),
        "delete_timer": lambda: t.delete_timer("t1", timer_revision),
        "fire_timer": lambda: t.fire_timer("t1", timer_revision),
        "put_wait": lambda: t.put_wait(make_wait("wt-view")),
        "kv_put": lambda: t.kv_put("ns", "k2", b"v"),
        "kv_delete": lambda: t.kv_delete("ns", "k"),
    }
    assert sorted(attempts) == sorted(WRITE_OPERATIONS), "view: write list is incomplete"
    accepted = []
    for name, attempt in attempts.items():
        try:
            attempt()
        except ReadOnly:
            continue
        except StorageError as err:
            accepted.append(f"{name} raised {type(err).__name__}")
            continue
        accepted.append(f"{name} succeeded")
    return accepted


def case_view_reads_committed_state_alongside_writes(store: Store, clock: FakeClock) -> None:
    """Named case view_reads_committed_state_alongside_writes (V-01..V-05, V-07): a
    View started while a write is held open completes without seeing it; every write
    in a View is refused with ReadOnly and nothing is kept; two reads in one View
    straddling another thread's commit see the same snapshot."""
    assert isinstance(store, Viewer), "view: the store is not a Viewer"
    viewer = cast(Viewer, store)
    lease = _view_fixture(store)

    # 1. Alongside an open write (checked first: a serialising View fails here).
    held, release = threading.Event(), threading.Event()

    def hold(t: Tx) -> None:
        t.put_work(make_work("w-held"))
        t.accept_event(make_event("held"))
        held.set()
        if not release.wait(BLOCK_TIMEOUT * 4):
            raise RuntimeError("the held writer was never released")

    def seen(t: Tx) -> tuple[list[str], list[str]]:
        return ids(t.works()), ids(t.events())

    writer = Worker(lambda: tx(store, hold), name="held-writer")
    try:
        assert held.wait(BLOCK_TIMEOUT), "view: the held writer never started"
        reader = Worker(lambda: viewer.view(seen), name="viewer")
        helper = Worker(lambda: storage.view(store, None, seen), name="storage.view")
        assert reader.join(), "View waited behind an open write transaction"
        assert helper.join(), "View waited behind an open write transaction (storage.view)"
        assert reader.error is None, f"view: a View beside an open write failed: {reader.error!r}"
        assert helper.error is None, f"view: storage.view beside a write failed: {helper.error!r}"
        expected = (["w1", "w2"], ["e1"])
        assert reader.result == expected, f"View saw an uncommitted write: {reader.result}"
        assert helper.result == expected, f"View saw an uncommitted write: {helper.result}"
    finally:
        release.set()
        writer.join()
    assert writer.error is None, f"view: the held writer failed: {writer.error!r}"

    # 2. Writes are refused and nothing the callback does is kept.
    before = inventory(store, "ns")
    refused = viewer.view(lambda t: _attempt_every_write(t, lease))
    assert refused == [], f"View accepted a write: {refused}"
    refused = storage.view(store, None, lambda t: _attempt_every_write(t, lease))
    assert refused == [], f"View accepted a write (storage.view): {refused}"
    assert inventory(store, "ns") == before, "View kept a write"

    # 3. One snapshot for the whole View, even across another thread's commit.
    def late_commit(t: Tx) -> None:
        t.put_work(make_work("w-late"))
        t.put_work(replace(t.work("w2"), context=payload()))
        t.accept_event(make_event("late"))

    def straddle(t: Tx) -> tuple[object, object, bool, BaseException | None]:
        def read() -> object:
            return ids(t.works()), t.work("w2"), t.latest_sequence(), ids(t.events())

        first = read()
        committer = Worker(lambda: tx(store, late_commit), name="committer")
        committed = committer.join()
        return first, read(), committed, committer.error

    first, second, committed, error = viewer.view(straddle)
    assert committed, "view: a commit waited behind an open View"
    assert error is None, f"view: the commit beside a View failed: {error!r}"
    assert second == first, "View saw a commit made after it began (no snapshot)"
    assert "w-late" in viewer.view(lambda t: ids(t.works())), "View missed committed state"


def case_read_only_wrapper(store: Store, clock: FakeClock) -> None:
    """V-02: storage.read_only(tx) refuses every write with ReadOnly and passes
    reads through."""
    lease = _view_fixture(store)
    before = inventory(store, "ns")

    def fn(t: Tx) -> tuple[bool, bool, list[str]]:
        ro = storage.read_only(t)
        return ro.read_only, ro.work("w1") == t.work("w1"), _attempt_every_write(ro, lease)

    flag, reads, refused = tx(store, fn)
    assert flag, "V-02: read_only(tx).read_only is False"
    assert reads, "V-02: read_only(tx) reads differ from the transaction's"
    assert refused == [], f"V-02: read_only(tx) accepted a write: {refused}"
    assert inventory(store, "ns") == before, "V-02: a read_only(tx) write was kept"


def case_views_run_concurrently(store: Store, clock: FakeClock) -> None:
    """V-03: two Views can be open at once."""
    assert isinstance(store, Viewer), "view: the store is not a Viewer"
    viewer = cast(Viewer, store)
    put_works(store, make_work("w1"))
    entered = {"a": threading.Event(), "b": threading.Event()}

    def open_view(me: str, other: str) -> Callable[[], object]:
        def body(t: Tx) -> bool:
            entered[me].set()
            return entered[other].wait(BLOCK_TIMEOUT) and t.work("w1").id == "w1"

        return lambda: viewer.view(body)

    workers = [Worker(open_view("a", "b"), "view-a"), Worker(open_view("b", "a"), "view-b")]
    assert all(w.join(BLOCK_TIMEOUT * 2) for w in workers), "V-03: a View never finished"
    assert [w.result for w in workers] == [True, True], (
        f"V-03: two Views could not be open at once: {[w.error or w.result for w in workers]}"
    )


def case_view_helper_without_viewer(store: Store, clock: FakeClock) -> None:
    """V-05: storage.view over a store without View runs a transaction whose writes
    are refused and nothing is kept."""
    lease = _view_fixture(store)
    plain = TransactOnlyStore(store)
    assert not isinstance(plain, Viewer), "view: the wrapper unexpectedly has a View"
    before = inventory(store, "ns")
    reads = storage.view(plain, None, lambda t: ids(t.works()))
    assert reads == ["w1", "w2"], f"V-05: storage.view read {reads}"
    refused = storage.view(plain, None, lambda t: _attempt_every_write(t, lease))
    assert refused == [], f"V-05: storage.view without a View accepted a write: {refused}"
    assert inventory(store, "ns") == before, "V-05: storage.view without a View kept a write"


# ---------------------------------------------------------------------------------
# 13. Checkpoints: acceptance and routing (CP)
# ---------------------------------------------------------------------------------


def case_acceptance_is_not_acknowledged_before_commit(store: Store, clock: FakeClock) -> None:
    """CP-01: an Event accepted in a callback that then fails is not stored; the same
    delivery later is added anew."""

    def accept_then_fail(t: Tx) -> None:
        t.accept_event(make_event("e1"))
        raise Crash("failure after accept_event")

    crashes(store, accept_then_fail, "CP-01 accept then failure")
    assert tx(store, lambda t: t.events()) == [], "CP-01: a rolled-back acceptance was stored"
    _, added = tx(store, lambda t: t.accept_event(make_event("e1")))
    assert added, "CP-01: a delivery accepted in a rolled-back tx was treated as a duplicate"


def case_route_replay(store: Store, clock: FakeClock) -> None:
    """Scenario "route replay" (CP-06, CP-04): after acceptance commits and processing
    fails, the Event is still unrouted and replayable; replaying the same checkpoint
    is a no-op and a different one conflicts."""
    put_works(store, make_work("w1", keys=[key("1")]), make_work("w2"))
    tx(store, lambda t: t.accept_event(make_event("e1", keys=[key("1")])))

    def process(t: Tx) -> None:
        (event,) = t.unrouted_events()
        work = t.work_by_key(event.event.keys[0])
        t.put_work(replace(work, state=RUNNING))
        t.mark_routed(event.id, work.id, "routed")
        raise Crash("crash during processing")

    crashes(store, process, "route replay: crashed processing")
    assert ids(tx(store, lambda t: t.unrouted_events())) == ["e1"], (
        "route replay: an Event whose processing failed is not unrouted"
    )
    assert stored_state(store, "w1") == READY, "route replay: a failed route left its effect"
    tx(store, lambda t: t.mark_routed("e1", "w1", "routed"))
    routed = tx(store, lambda t: t.event("e1"))
    tx(store, lambda t: t.mark_routed("e1", "w1", "routed"))
    assert tx(store, lambda t: t.event("e1")) == routed, "route replay: same replay changed route"
    fails(store, Conflict, lambda t: t.mark_routed("e1", "w2", "routed"), "route replay: work")
    fails(store, Conflict, lambda t: t.mark_routed("e1", "w1", "dropped"), "route replay: disp")
    assert tx(store, lambda t: t.event("e1")) == routed, "route replay: a conflicting replay won"
    assert tx(store, lambda t: t.unrouted_events()) == [], "route replay: routed Event unrouted"


def _route_effects(store: Store) -> list[str]:
    def read(t: Tx) -> list[str]:
        present = []
        if "w1" in ids(t.works()):
            present.append("work")
        if t.executions():
            present.append("execution")
        if t.timers():
            present.append("timer")
        if t.kv_list("router"):
            present.append("kv")
        if "derived" in ids(t.events()):
            present.append("derived event")
        if t.event("e1").routed:
            present.append("checkpoint")
        return present

    return tx(store, read)


def case_atomic_route_effects(store: Store, clock: FakeClock) -> None:
    """Scenario "atomic route effects" (CP-03, CP-06, T-09): the route effects and
    MarkRouted commit together; a crash during processing leaves none of them."""
    tx(store, lambda t: t.accept_event(make_event("e1", keys=[key("1")])))

    def process(t: Tx, crash: bool) -> None:
        t.put_work(make_work("w1", keys=[key("1")]))
        t.put_execution(make_execution("x1", "w1"))
        t.put_timer(make_timer("t-w1", t.now + seconds(60), work_id="w1"))
        t.kv_put("router", "cursor", b"1")
        t.accept_event(make_event("derived", causation_id="e1", work_id="w1"))
        t.mark_routed("e1", "w1", "routed")
        if crash:
            raise Crash("crash during processing")

    crashes(store, lambda t: process(t, True), "atomic route effects: crashed processing")
    left = _route_effects(store)
    assert left == [], f"atomic route effects: a failed processing transaction left {left}"
    tx(store, lambda t: process(t, False))
    kept = _route_effects(store)
    everything = ["work", "execution", "timer", "kv", "derived event", "checkpoint"]
    assert kept == everything, f"atomic route effects: a committed processing tx kept {kept}"


def case_mark_routed_rules(store: Store, clock: FakeClock) -> None:
    """CP-03, CP-04, CP-05 (resolution 14): disposition nonempty; an empty Work only
    for non-routed dispositions; unknown Event or Work -> NotFound; drops keep their
    disposition."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: [t.accept_event(make_event(e)) for e in ("e1", "e2", "e3")])
    fails(store, NotFound, lambda t: t.mark_routed("ghost", "w1", "routed"), "CP-03 unknown")
    fails(store, Invalid, lambda t: t.mark_routed("e1", "w1", ""), "CP-05 empty disposition")
    fails(store, Invalid, lambda t: t.mark_routed("e1", "", "routed"), "CP-05 routed nowhere")
    fails(store, NotFound, lambda t: t.mark_routed("e1", "ghost", "routed"), "CP-03 work")
    assert not tx(store, lambda t: t.event("e1").routed), "CP-03: a refused route was kept"

    def drop(t: Tx) -> None:
        t.mark_routed("e1", "", "dropped")
        t.mark_routed("e2", "", "unmatched")

    tx(store, drop)
    tx(store, lambda t: t.mark_routed("e1", "", "dropped"))
    routes = tx(store, lambda t: [t.event(e).route for e in ("e1", "e2")])
    assert [(r.work_id, r.disposition) if r else None for r in routes] == [
        ("", "dropped"),
        ("", "unmatched"),
    ], f"CP-05: drop dispositions were not kept: {routes}"
    fails(store, Conflict, lambda t: t.mark_routed("e1", "w1", "routed"), "CP-04 drop -> route")
    assert ids(tx(store, lambda t: t.unrouted_events())) == ["e3"], "CP-05: drops still unrouted"


def case_per_work_order(store: Store, clock: FakeClock) -> None:
    """Scenario "per-Work order" (CP-07, EN-03, EN-04): unrouted and per-Work scans
    return acceptance order; routing one Work does not wait for another."""
    k1, k2 = key("1"), key("2")
    put_works(store, make_work("w1", keys=[k1]), make_work("w2", keys=[k2]))
    plan = [("e1", k1, ""), ("e2", k2, ""), ("e3", None, "w1"), ("e4", k1, ""), ("e5", k2, "")]
    for event_id, k, work_id in plan:
        keys = [k] if k else []
        tx(
            store,
            lambda t, e=event_id, ks=keys, w=work_id: t.accept_event(
                make_event(e, keys=ks, work_id=w)
            ),
        )
    unrouted = tx(store, lambda t: t.unrouted_events())
    assert ids(unrouted) == ["e1", "e2", "e3", "e4", "e5"], "per-Work order: unrouted order"
    assert [e.sequence for e in unrouted] == sorted(e.sequence for e in unrouted), (
        "per-Work order: unrouted scan not in sequence order"
    )
    # w2 progresses while w1's earlier Events are still unrouted.
    for event_id in ("e2", "e5"):
        tx(store, lambda t, e=event_id: t.mark_routed(e, "w2", "routed"))
    assert ids(tx(store, lambda t: t.unrouted_events())) == ["e1", "e3", "e4"], (
        "per-Work order: routing w2 disturbed w1's unrouted Events"
    )
    for event_id in ("e1", "e3", "e4"):
        tx(store, lambda t, e=event_id: t.mark_routed(e, "w1", "routed"))
    scans = tx(store, lambda t: (ids(t.work_events("w1")), ids(t.work_events("w2"))))
    assert scans == (["e1", "e3", "e4"], ["e2", "e5"]), f"per-Work order: work_events {scans}"


# ---------------------------------------------------------------------------------
# 14. Enumeration, live reads and event scans (EN)
# ---------------------------------------------------------------------------------


def case_lists_sorted_by_id(store: Store, clock: FakeClock) -> None:
    """EN-01: scopes, Work, attempts, timers and waits list sorted by ID; execution,
    timer and wait scans filtered by Work return only that Work's rows."""
    for scope_id in ("s3", "s1", "s2"):
        tx(store, lambda t, s=scope_id: t.put_scope(make_scope(s)))
    for work_id, execution_id in (("wb", "xb"), ("wc", "xc"), ("wa", "xa")):
        start_attempt(store, work_id=work_id, execution_id=execution_id)
    for timer_id, work_id in (("t3", "wa"), ("t1", "wb"), ("t2", "wa")):
        tx(store, lambda t, i=timer_id, w=work_id: t.put_timer(make_timer(i, t.now, work_id=w)))
    for wait_id, work_id, execution_id in (("wt2", "wa", "xa"), ("wt1", "wb", "xb")):
        tx(store, lambda t, i=wait_id, w=work_id, x=execution_id: park(t, x, make_wait(i, w, x)))

    def lists(t: Tx) -> dict[str, list[str]]:
        return {
            "scopes": ids(t.scopes()),
            "works": ids(t.works()),
            "executions": ids(t.executions()),
            "executions(wa)": ids(t.executions("wa")),
            "timers": ids(t.timers()),
            "timers(wa)": ids(t.timers("wa")),
            "waits": ids(t.waits()),
            "waits(wb)": ids(t.waits("wb")),
            "waits(wc)": ids(t.waits("wc")),
        }

    assert tx(store, lists) == {
        "scopes": ["s1", "s2", "s3"],
        "works": ["wa", "wb", "wc"],
        "executions": ["xa", "xb", "xc"],
        "executions(wa)": ["xa"],
        "timers": ["t1", "t2", "t3"],
        "timers(wa)": ["t2", "t3"],
        "waits": ["wt1", "wt2"],
        "waits(wb)": ["wt1"],
        "waits(wc)": [],
    }, f"EN-01: lists are not sorted by ID or not filtered by Work: {tx(store, lists)}"


def case_event_scan_paging(store: Store, clock: FakeClock) -> None:
    """EN-02 (resolution 29): exclusive cursor, ascending, limit caps, 0 is no limit,
    negative limit is Invalid, for every event scan."""
    tx(store, lambda t: [t.accept_event(make_event(f"e{n}", work_id="w1")) for n in range(1, 6)])
    seqs = {s.id: s.sequence for s in tx(store, lambda t: t.events())}

    def scans(t: Tx) -> dict[str, list[str]]:
        return {
            "all": ids(t.events()),
            "after e2": ids(t.events(after=seqs["e2"])),
            "after e2 limit 2": ids(t.events(after=seqs["e2"], limit=2)),
            "after last": ids(t.events(after=seqs["e5"])),
            "limit 0": ids(t.events(limit=0)),
            "limit 1": ids(t.events(limit=1)),
            "work after e3": ids(t.work_events("w1", after=seqs["e3"])),
            "unrouted limit 2": ids(t.unrouted_events(limit=2)),
            "scope '' after e4": ids(t.scope_events([""], after=seqs["e4"])),
        }

    assert tx(store, scans) == {
        "all": ["e1", "e2", "e3", "e4", "e5"],
        "after e2": ["e3", "e4", "e5"],
        "after e2 limit 2": ["e3", "e4"],
        "after last": [],
        "limit 0": ["e1", "e2", "e3", "e4", "e5"],
        "limit 1": ["e1"],
        "work after e3": ["e4", "e5"],
        "unrouted limit 2": ["e1", "e2"],
        "scope '' after e4": ["e5"],
    }, f"EN-02: event scans page wrongly: {tx(store, scans)}"
    for what, scan in [
        ("events", lambda t: t.events(limit=-1)),
        ("unrouted_events", lambda t: t.unrouted_events(limit=-1)),
        ("work_events", lambda t: t.work_events("w1", limit=-1)),
        ("scope_events", lambda t: t.scope_events([""], limit=-1)),
    ]:
        fails(store, Invalid, scan, f"EN-02 negative limit on {what}")


def case_unrouted_scan(store: Store, clock: FakeClock) -> None:
    """EN-03: the unrouted scan lists only Events without a routing checkpoint, with
    the same paging."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: [t.accept_event(make_event(f"e{n}")) for n in range(1, 5)])

    def route(t: Tx) -> None:
        t.mark_routed("e2", "", "dropped")
        t.mark_routed("e3", "w1", "routed")

    tx(store, route)
    first = tx(store, lambda t: t.event("e1").sequence)
    scans = tx(
        store, lambda t: (ids(t.unrouted_events()), ids(t.unrouted_events(after=first, limit=1)))
    )
    assert scans == (["e1", "e4"], ["e4"]), f"EN-03: unrouted scan returned {scans}"


def case_work_events_follow_naming_and_routing(store: Store, clock: FakeClock) -> None:
    """Named case work_events_follow_naming_and_routing (EN-04): a Work's Events are
    exactly those naming it or routed to it, each once, in acceptance order."""
    k1 = key("1")
    put_works(store, make_work("w1", keys=[k1]), make_work("w2"))
    plan = [
        ("e1", "w1", ""),  # names w1, never routed
        ("e2", "", "w1"),  # routed to w1
        ("e3", "w1", "w1"),  # names and routed: listed once
        ("e4", "w2", "w1"),  # names w2, routed to w1: in both
        ("e5", "", "w2"),  # routed to w2
        ("e6", "", ""),  # dropped
        ("e7", "", None),  # carries w1's key only: not w1's until routed
    ]
    for event_id, named, _ in plan:
        keys = [k1] if event_id == "e7" else []
        tx(
            store,
            lambda t, e=event_id, w=named, ks=keys: t.accept_event(
                make_event(e, work_id=w, keys=ks)
            ),
        )

    def scan(t: Tx) -> tuple[list[str], list[str]]:
        return ids(t.work_events("w1")), ids(t.work_events("w2"))

    assert tx(store, scan) == (["e1", "e3"], ["e4"]), (
        f"work events: before routing, a Work's Events are not those naming it: {tx(store, scan)}"
    )
    for event_id, _, routed in plan:
        if routed is None:
            continue
        disposition = "routed" if routed else "dropped"
        tx(store, lambda t, e=event_id, w=routed, d=disposition: t.mark_routed(e, w, d))
    expected = (["e1", "e2", "e3", "e4"], ["e4", "e5"])
    assert tx(store, scan) == expected, (
        f"work events: a Work's Events are not exactly those naming it or routed to it: "
        f"{tx(store, scan)}"
    )
    second = tx(store, lambda t: t.event("e2").sequence)
    paged = tx(store, lambda t: ids(t.work_events("w1", after=second, limit=1)))
    assert paged == ["e3"], f"work events: paging returned {paged}"


def case_live_reads_follow_state(store: Store, clock: FakeClock) -> None:
    """Named case live_reads_follow_state (EN-06, EN-07, WT-11): live_works,
    live_executions and active_waits follow every state change in the same commit."""

    def live(work_id: str = "") -> tuple[list[str], list[str], list[str]]:
        return tx(
            store,
            lambda t: (
                ids(t.live_works()),
                ids(t.live_executions(work_id)),
                ids(t.active_waits(work_id)),
            ),
        )

    def expect(step: str, works: list[str], executions: list[str], waits: list[str]) -> None:
        actual = live()
        assert actual == (works, executions, waits), (
            f"live reads: after {step} live reads are {actual}, "
            f"expected {(works, executions, waits)}"
        )

    put_works(store, make_work("w1"))
    expect("Work created ready", ["w1"], [], [])
    tx(store, lambda t: t.put_execution(make_execution("x1")))
    expect("attempt created pending", ["w1"], ["x1"], [])
    tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    expect("claim", ["w1"], ["x1"], [])
    tx(store, lambda t: park(t, "x1", make_wait("wt1")))
    expect("park with a Wait", ["w1"], ["x1"], ["wt1"])
    tx(store, lambda t: t.accept_event(make_event("wake")))

    def wake(t: Tx) -> None:
        t.put_wait(replace(t.wait("wt1"), state=WaitState.WOKEN, woken_by="wake"))
        t.claim("x1", "runner-a", t.now + TTL)

    tx(store, wake)
    expect("wake", ["w1"], ["x1"], [])
    tx(store, lambda t: terminate(t, "x1", X_FAILED, READY))
    expect("attempt failed, Work ready", ["w1"], [], [])
    tx(store, lambda t: t.put_execution(make_execution("x2", "w1", 2)))
    put_works(store, make_work("w2"))
    expect("attempt 2 and Work w2 created", ["w1", "w2"], ["x2"], [])
    assert live("w2") == (["w1", "w2"], [], []), "live reads: filter by Work returned others"
    tx(store, lambda t: terminate(t, "x2", X_CANCELLED, None))
    expect("pending attempt cancelled", ["w1", "w2"], [], [])
    update_work(store, "w1", state=FAILED)
    expect("Work failed", ["w2"], [], [])
    update_work(store, "w2", state=CANCELLED)
    expect("Work cancelled", [], [], [])
    assert ids(tx(store, lambda t: t.waits())) == ["wt1"], "live reads: history was dropped"


def case_recovery_inventory(
    store: Store, clock: FakeClock, reopen: Callable[[], Store] | None = None
) -> None:
    """Scenario "recovery inventory" (EN-10, EN-01, EN-06): after reopening, the store
    enumerates the same scopes, Work, attempts, timers, waits, Events and KV, and
    recovery can go on from that inventory alone."""
    tx(
        store,
        lambda t: [t.put_scope(make_scope("s1")), t.put_scope(make_scope("s2", parent_id="s1"))],
    )
    lease = start_attempt(store, keys=[key("1")])
    start_attempt(store, work_id="w2", execution_id="x2")

    def build(t: Tx) -> None:
        t.put_timer(make_timer("t-timeout", t.now + seconds(600), work_id="w1"))
        park(t, "x1", make_wait("wt1", keys=[key("1")], timeout_timer_id="t-timeout"))
        t.put_work(make_work("w3", scope_id="s2"))
        t.accept_event(make_event("e1", keys=[key("1")]))
        t.set_event_scope("e1", "s2")
        t.accept_event(make_event("e2"))
        t.mark_routed("e2", "", "dropped")
        t.kv_put("ns", "cursor", b"7")

    tx(store, build, lease=lease)
    before = inventory(store, "ns")
    reopened = reopen() if reopen is not None else store
    after = inventory(reopened, "ns")
    assert after == before, "recovery inventory: the reopened store enumerates other records"

    def live(t: Tx) -> tuple[list[str], ...]:
        return (
            ids(t.live_works()),
            ids(t.live_executions()),
            ids(t.active_waits()),
            ids(t.unrouted_events()),
        )

    assert tx(reopened, live) == (["w1", "w2", "w3"], ["x1", "x2"], ["wt1"], ["e1"]), (
        f"recovery inventory: live reads after reopen are {tx(reopened, live)}"
    )
    clock.advance(seconds=TTL / 1e9 + 1)
    recovered = tx(reopened, lambda t: t.claim("x2", "runner-b", t.now + TTL))
    assert (recovered.owner, recovered.epoch) == ("runner-b", 2), (
        "recovery inventory: an expired lease could not be recovered after reopen"
    )


# ---------------------------------------------------------------------------------
# 15. WorkQuery, CountWorks, WorkFacets and executor (Q)
# ---------------------------------------------------------------------------------

PLUS_TWO = timezone(timedelta(hours=2))
# Creation instants, some written in UTC and some in +02:00. B and B_LOCAL are the
# same instant: Work created then ties on time and is ordered by ID.
AT_A = to_ns(datetime(2026, 1, 2, 10, 30, tzinfo=PLUS_TWO))  # 08:30Z
AT_B = to_ns(datetime(2026, 1, 2, 9, 0, tzinfo=UTC))  # 09:00Z
AT_B_LOCAL = to_ns(datetime(2026, 1, 2, 11, 0, tzinfo=PLUS_TWO))  # 09:00Z
AT_C = to_ns(datetime(2026, 1, 2, 12, 0, tzinfo=PLUS_TWO))  # 10:00Z
AT_D = to_ns(datetime(2026, 1, 2, 11, 0, tzinfo=UTC))  # updates start here
AT_E = AT_D + seconds(3)  # wc's last update; updated_since boundary

CREATED_ASC = ["wa", "wb", "wd", "wc", "we"]
UPDATED_ASC = ["wa", "wb", "wc", "wd", "we"]

# (what, query, expected IDs in creation order) for each filter alone and combined.
QUERY_FILTERS: list[tuple[str, WorkQuery, list[str]]] = [
    ("no filter", WorkQuery(), CREATED_ASC),
    ("state ready", WorkQuery(states=frozenset({READY})), ["wa"]),
    ("states running|waiting", WorkQuery(states=frozenset({RUNNING, WAITING})), ["wb", "wc"]),
    ("states completed|failed", WorkQuery(states=frozenset({COMPLETED, FAILED})), ["wd", "we"]),
    ("scope s1", WorkQuery(scope_id="s1"), ["wa", "wd"]),
    ("scope s2", WorkQuery(scope_id="s2"), ["wb", "we"]),
    ("kind", WorkQuery(kind="conduit.beta"), ["wd", "wc"]),
    ("parent", WorkQuery(parent_id="wa"), ["wd", "wc"]),
    ("source of first key", WorkQuery(sources=frozenset({"github.acme"})), ["wa", "we"]),
    ("source from kind", WorkQuery(sources=frozenset({"conduit.alpha"})), ["wb"]),
    ("any of sources", WorkQuery(sources=frozenset({"gitlab.corp", "conduit.beta"})), ["wd", "wc"]),
    ("executor docker", WorkQuery(executor="docker"), ["wa"]),
    ("executor shell", WorkQuery(executor="shell"), ["wb"]),
    ("updated since (inclusive)", WorkQuery(updated_since=AT_E), ["wd", "wc", "we"]),
    ("updated since E+1ns", WorkQuery(updated_since=AT_E + 1), ["wd", "we"]),
    (
        "states and scope",
        WorkQuery(states=frozenset({READY, RUNNING}), scope_id="s1"),
        ["wa"],
    ),
    (
        "kind and source",
        WorkQuery(kind="conduit.alpha", sources=frozenset({"conduit.alpha"})),
        ["wb"],
    ),
]


def _query_fixture(store: Store, clock: FakeClock) -> None:
    """Five Works of mixed state, scope, kind, parent, source and executor:

    - wa conduit.alpha, s1, key github.acme: attempt 1 (no executor) failed, attempt 2
      pending on docker; ready.
    - wb conduit.alpha, s2, no key (source = kind): attempt on shell running.
    - wc conduit.beta, parent wa, keys gitlab.corp then github.acme: attempt (no
      executor) ended in terminal waiting; waiting.
    - wd conduit.beta, s1, parent wa: completed. we conduit.gamma, s2: failed.
    """
    assert AT_B == AT_B_LOCAL, "work queries: to_ns gives two instants for 09:00Z and 11:00+02"
    tx(store, lambda t: [t.put_scope(make_scope("s1")), t.put_scope(make_scope("s2"))])
    github, gitlab = key("1"), key("9", source="gitlab.corp")
    for when, work in [
        (AT_A, make_work("wa", kind="conduit.alpha", scope_id="s1", keys=[github])),
        (AT_B, make_work("wd", kind="conduit.beta", scope_id="s1", parent_id="wa")),
        (AT_B_LOCAL, make_work("wb", kind="conduit.alpha", scope_id="s2")),
        (AT_B + 1, make_work("wc", kind="conduit.beta", parent_id="wa", keys=[gitlab, key("2")])),
        (AT_C, make_work("we", kind="conduit.gamma", scope_id="s2", keys=[key("3")])),
    ]:
        clock.set(when)
        put_works(store, work)

    clock.set(AT_D)
    start_attempt(store, work_id="wa", execution_id="x-a1", create_work=False)
    clock.set(AT_D + seconds(1))

    def second_attempt(t: Tx) -> None:
        terminate(t, "x-a1", X_FAILED, READY)
        binding = Binding(name="docker", executor="docker")
        t.put_execution(make_execution("x-a2", "wa", 2, executor="docker", binding=binding))

    tx(store, second_attempt)
    clock.set(AT_D + seconds(2))
    start_attempt(store, work_id="wb", execution_id="x-b1", executor="shell", create_work=False)
    clock.set(AT_E)
    start_attempt(store, work_id="wc", execution_id="x-c1", create_work=False)
    tx(store, lambda t: park(t, "x-c1", terminal=True))
    clock.set(AT_E + seconds(1))
    update_work(store, "wd", state=RUNNING)

    def finish(t: Tx) -> None:  # one tx: wd and we tie on updated_at
        t.put_work(replace(t.work("wd"), state=COMPLETED))
        t.put_work(replace(t.work("we"), state=FAILED))

    clock.set(AT_E + seconds(2))
    tx(store, finish)


def _query(store: Store, query: WorkQuery) -> list[str]:
    return ids(tx(store, lambda t: t.query_works(query)))


def _check_query_filters(store: Store) -> None:
    for what, query, expected in QUERY_FILTERS:
        got = _query(store, replace(query, order=WorkOrder.CREATED_ASC))
        assert got == expected, f"work queries: filter {what} selected {got}, expected {expected}"


def _check_query_orders(store: Store) -> None:
    created = {w.id: w.created_at for w in tx(store, lambda t: t.works())}
    assert created["wb"] == created["wd"] == AT_B, (
        "work queries: Work created at 09:00Z and 11:00+02:00 have different created_at"
    )
    assert created["wc"] == AT_B + 1, "work queries: created_at lost nanoseconds"
    for order, expected in [
        (WorkOrder.CREATED_ASC, CREATED_ASC),
        (WorkOrder.CREATED_DESC, CREATED_ASC[::-1]),
        (WorkOrder.UPDATED_ASC, UPDATED_ASC),
        (WorkOrder.UPDATED_DESC, UPDATED_ASC[::-1]),
    ]:
        got = _query(store, WorkQuery(order=order))
        assert got == expected, f"work queries: order {order} gave {got}, expected {expected}"


def _walk_pages(store: Store, query: WorkQuery) -> list[str]:
    seen: list[str] = []
    page_query = query
    for _ in range(20):
        page = tx(store, lambda t, q=page_query: t.query_works(q))
        if not page:
            return seen
        assert len(page) <= query.limit, f"work queries: a page exceeded limit {query.limit}"
        seen += ids(page)
        page_query = replace(page_query, after=page_query.key_of(page[-1]))
    raise AssertionError(f"work queries: keyset paging never ended: {seen}")


def _check_query_paging(store: Store) -> None:
    for order in WorkOrder:
        full = _query(store, WorkQuery(order=order))
        for limit in (1, 2, 3):
            walked = _walk_pages(store, WorkQuery(order=order, limit=limit))
            assert walked == full, (
                f"work queries: paging {order} by {limit} walked {walked}, expected {full}"
            )
    inside_tie = [
        (WorkOrder.CREATED_ASC, WorkKey(AT_B, "wb"), ["wd", "wc", "we"]),
        (WorkOrder.CREATED_DESC, WorkKey(AT_B, "wd"), ["wb", "wa"]),
        (WorkOrder.UPDATED_DESC, WorkKey(AT_E + seconds(2), "we"), ["wd", "wc", "wb", "wa"]),
    ]
    for order, after, expected in inside_tie:
        got = _query(store, WorkQuery(order=order, after=after))
        assert got == expected, f"work queries: page {order} after {after} gave {got}"


def _nonzero(counts: Any) -> dict[str, int]:
    return {str(k): v for k, v in dict(counts).items() if v}


def _check_counts_and_facets(store: Store) -> None:
    for what, query, expected in QUERY_FILTERS:
        for paged in (
            query,
            replace(query, limit=1),
            replace(query, limit=1, after=WorkKey(0, "")),
        ):
            count = tx(store, lambda t, q=paged: t.count_works(q))
            assert count == len(expected), (
                f"work queries: count_works({what}) is {count}, expected {len(expected)}"
            )
        facets = tx(store, lambda t, q=query: t.work_facets(q))
        for dimension in ("state", "kind", "source", "scope", "executor"):
            total = sum(dict(getattr(facets, dimension)).values())
            assert total == len(expected), (
                f"work queries: {dimension} facets of {what} sum to {total}, "
                f"expected {len(expected)}"
            )
    facets = tx(store, lambda t: t.work_facets(WorkQuery()))
    actual = {
        "state": _nonzero(facets.state),
        "kind": _nonzero(facets.kind),
        "source": _nonzero(facets.source),
        "scope": _nonzero(facets.scope),
        "executor": _nonzero(facets.executor),
    }
    assert actual == {
        "state": {"ready": 1, "running": 1, "waiting": 1, "completed": 1, "failed": 1},
        "kind": {"conduit.alpha": 2, "conduit.beta": 2, "conduit.gamma": 1},
        "source": {"github.acme": 2, "conduit.alpha": 1, "gitlab.corp": 1, "conduit.beta": 1},
        "scope": {"s1": 2, "s2": 2, "": 1},
        "executor": {"docker": 1, "shell": 1, "": 3},
    }, f"work queries: facets of all Work are {actual}"


def _check_latest_executor_kept_by_storage(store: Store) -> None:
    executors = {w.id: w.latest_executor for w in tx(store, lambda t: t.works())}
    assert executors == {"wa": "docker", "wb": "shell", "wc": "", "wd": "", "we": ""}, (
        f"work queries: latest executors are {executors}"
    )
    forged = tx(store, lambda t: t.put_work(replace(t.work("wa"), latest_executor="forged")))
    assert forged.latest_executor == "docker", "work queries: a writer's latest_executor was kept"
    forged_x = tx(store, lambda t: t.put_execution(replace(t.execution("x-a2"), executor="")))
    assert forged_x.executor == "docker", "work queries: an update leaving executor empty lost it"
    assert get_work(store, "wa").latest_executor == "docker", (
        "work queries: an attempt update emptied the Work's latest executor"
    )
    assert _query(store, WorkQuery(executor="forged")) == [], "work queries: forged executor"


def _check_set_execution_executor(store: Store) -> None:
    latest = tx(store, lambda t: t.set_execution_executor("x-c1", "k8s"))
    assert latest.executor == "k8s", "work queries: set_execution_executor did not set it"
    assert get_work(store, "wc").latest_executor == "k8s", (
        "work queries: set_execution_executor on the latest attempt left Work.latest_executor"
    )
    again = tx(store, lambda t: t.set_execution_executor("x-c1", "k8s"))
    assert again.executor == "k8s", "work queries: a same-value set_execution_executor failed"
    fails(
        store,
        Conflict,
        lambda t: t.set_execution_executor("x-c1", "shell"),
        "work queries: set_execution_executor rewrite",
    )
    fails(
        store,
        Invalid,
        lambda t: t.set_execution_executor("x-a1", ""),
        "work queries: empty set_execution_executor",
    )
    fails(
        store,
        NotFound,
        lambda t: t.set_execution_executor("ghost", "shell"),
        "work queries: set_execution_executor of an unknown attempt",
    )
    older = tx(store, lambda t: t.set_execution_executor("x-a1", "shell"))
    assert older.executor == "shell", "work queries: backfill of an older attempt failed"
    assert get_work(store, "wa").latest_executor == "docker", (
        "work queries: set_execution_executor on an older attempt changed Work.latest_executor"
    )
    assert _query(store, WorkQuery(executor="k8s")) == ["wc"], "work queries: executor k8s"
    assert _query(store, WorkQuery(executor="shell")) == ["wb"], "work queries: executor shell"


def case_work_queries_select_order_page_and_count(store: Store, clock: FakeClock) -> None:
    """Named case work_queries_select_order_page_and_count (Q-01..Q-11): each filter
    alone and combined on a mixed fixture, both orders by creation and update time
    with ties across time zones broken by ID, keyset paging in both directions,
    count_works and work_facets summing to the count, the latest attempt's executor
    kept by storage and the write-once set_execution_executor."""
    _query_fixture(store, clock)
    _check_query_filters(store)
    _check_query_orders(store)
    _check_query_paging(store)
    _check_counts_and_facets(store)
    _check_latest_executor_kept_by_storage(store)
    _check_set_execution_executor(store)


def case_query_filters(store: Store, clock: FakeClock) -> None:
    """Q-01, Q-02: each WorkQuery filter alone, and combined with AND."""
    _query_fixture(store, clock)
    _check_query_filters(store)


def case_query_orders_across_time_zones(store: Store, clock: FakeClock) -> None:
    """Q-03, Q-04: creation/update order to the nanosecond, ties by ID, both
    directions; UTC and +02:00 inputs denote the same instant."""
    _query_fixture(store, clock)
    _check_query_orders(store)


def case_query_keyset_paging(store: Store, clock: FakeClock) -> None:
    """Q-05: keyset pages after a WorkKey walk every match once, in every order,
    including across time ties."""
    _query_fixture(store, clock)
    _check_query_paging(store)


def case_query_counts_and_facets(store: Store, clock: FakeClock) -> None:
    """Q-06, Q-07 (resolution 12): count_works ignores paging; each facet dimension
    sums to the count."""
    _query_fixture(store, clock)
    _check_counts_and_facets(store)


def case_latest_executor_kept_by_storage(store: Store, clock: FakeClock) -> None:
    """Q-08, Q-11: storage keeps Work.latest_executor from the newest attempt,
    ignores a writer's value, and an update leaving executor empty keeps it."""
    _query_fixture(store, clock)
    _check_latest_executor_kept_by_storage(store)


def case_set_execution_executor_write_once(store: Store, clock: FakeClock) -> None:
    """Q-09, Q-10: set_execution_executor sets an empty executor once (same value
    no-op, other Conflict, empty Invalid) and updates Work.latest_executor only for
    the latest attempt."""
    _query_fixture(store, clock)
    _check_set_execution_executor(store)


def case_new_attempt_sets_latest_executor(store: Store, clock: FakeClock) -> None:
    """Q-08 (lead rule): registering an attempt sets its Work's latest_executor
    without bumping the Work's revision."""
    (w,) = put_works(store, make_work("w1"))
    tx(store, lambda t: t.put_execution(make_execution("x1", executor="shell")))
    after = get_work(store, "w1")
    assert after.latest_executor == "shell", "Q-08: a new attempt did not set latest_executor"
    assert after.revision == w.revision, "Q-08: registering an attempt bumped the Work revision"
    tx(store, lambda t: terminate(t, "x1", X_CANCELLED, None))
    tx(store, lambda t: t.put_execution(make_execution("x2", "w1", 2)))
    assert get_work(store, "w1").latest_executor == "", (
        "Q-08: latest_executor is not the newest attempt's"
    )


def case_query_matches_select_works(store: Store, clock: FakeClock) -> None:
    """Q-13: the backend's query_works, count_works and work_facets agree with the
    reference storage.select_works/select_facets over works()."""
    _query_fixture(store, clock)
    works = tx(store, lambda t: t.works())
    queries = [replace(q, order=order) for _, q, _ in QUERY_FILTERS for order in WorkOrder]
    queries += [WorkQuery(order=o, limit=2, after=WorkKey(AT_B, "wb")) for o in WorkOrder]
    for query in queries:
        reference = ids(storage.select_works(query, works))
        got = _query(store, query)
        assert got == reference, f"Q-13: query_works({query}) = {got}, reference {reference}"
        facets = tx(store, lambda t, q=query: t.work_facets(q))
        assert facets == storage.select_facets(query, works), f"Q-13: work_facets({query})"


# ---------------------------------------------------------------------------------
# 16. Lease authority, fencing and recovery (L)
# ---------------------------------------------------------------------------------


def case_claim_rules(store: Store, clock: FakeClock) -> None:
    """L-04, L-05 (resolution 15): claim needs a nonempty owner and a future expiry,
    a nonterminal Work and attempt; it moves both to running with owner, expiry and
    epoch 1; any live lease, even the same owner's, conflicts."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: t.put_execution(make_execution("x1")))
    fails(store, Invalid, lambda t: t.claim("x1", "", t.now + TTL), "L-04 empty owner")
    fails(store, Invalid, lambda t: t.claim("x1", "runner-a", t.now), "L-04 expiry == now")
    fails(store, Invalid, lambda t: t.claim("x1", "runner-a", t.now - 1), "L-04 past expiry")
    fails(store, NotFound, lambda t: t.claim("ghost", "runner-a", t.now + TTL), "L-04 unknown")
    assert get_execution(store, "x1").state == X_PENDING, "L-04: a refused claim changed state"
    expires = clock() + TTL
    x = tx(store, lambda t: t.claim("x1", "runner-a", expires))
    assert (x.state, x.owner, x.lease_expires_at, x.epoch) == (
        X_RUNNING,
        "runner-a",
        expires,
        1,
    ), f"L-04: claim produced {x}"
    assert stored_state(store, "w1") == RUNNING, "L-04: claim did not move Work to running"
    for owner in ("runner-b", "runner-a"):
        fails(
            store,
            Conflict,
            lambda t, o=owner: t.claim("x1", o, t.now + 2 * TTL),
            f"L-05 claim by {owner} beside a live lease",
        )
    assert get_execution(store, "x1") == x, "L-05: a refused claim changed the lease"

    # A terminal Work or attempt cannot be claimed.
    put_works(store, make_work("w2"))
    tx(store, lambda t: t.put_execution(make_execution("x2", "w2")))
    update_work(store, "w2", state=CANCELLED)
    fails(store, Invalid, lambda t: t.claim("x2", "runner-a", t.now + TTL), "L-04 terminal Work")
    tx(store, lambda t: terminate(t, "x1", X_COMPLETED, None))
    fails(store, Invalid, lambda t: t.claim("x1", "runner-a", t.now + TTL), "L-04 terminal attempt")


def case_concurrent_claims(store: Store, clock: FakeClock) -> None:
    """Scenario "concurrent claims" (L-05, L-14): two threads claiming the same
    pending attempt at once: exactly one wins, the other gets Conflict."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: t.put_execution(make_execution("x1")))
    barrier = threading.Barrier(2, timeout=BLOCK_TIMEOUT)

    def claimer(owner: str) -> Callable[[], object]:
        def run() -> object:
            barrier.wait()
            return tx(store, lambda t: t.claim("x1", owner, t.now + TTL))

        return run

    workers = {o: Worker(claimer(o), name=o) for o in ("runner-a", "runner-b")}
    assert all(w.join() for w in workers.values()), "concurrent claims: a claimer never finished"
    winners = [o for o, w in workers.items() if w.error is None]
    errors = [type(w.error).__name__ for w in workers.values() if w.error is not None]
    assert len(winners) == 1, f"concurrent claims: {len(winners)} claims of one attempt won"
    assert errors == ["Conflict"], f"concurrent claims: the losing claim got {errors}"
    x = get_execution(store, "x1")
    assert (x.owner, x.epoch) == (winners[0], 1), f"concurrent claims: stored lease is {x}"


def case_lease_expiry(store: Store, clock: FakeClock) -> None:
    """Scenario "lease expiry" (L-03, L-06, L-07): a lease is live until now <
    expires_at; at now == expires_at it has expired: its transactions are fenced and
    another owner may claim with a higher epoch."""
    put_works(store, make_work("w1"))
    tx(store, lambda t: t.put_execution(make_execution("x1")))
    expires = clock() + seconds(10)
    lease = lease_of(tx(store, lambda t: t.claim("x1", "runner-a", expires)))
    clock.set(expires - 1)
    tx(store, lambda t: t.kv_put("exec", "progress", b"1"), lease=lease)
    fails(
        store,
        Conflict,
        lambda t: t.claim("x1", "runner-b", t.now + TTL),
        "lease expiry: claim one nanosecond before expiry",
    )
    clock.set(expires)
    fails(
        store,
        Fenced,
        lambda t: t.kv_put("exec", "progress", b"2"),
        "lease expiry: a transaction at now == expires_at",
        lease=lease,
    )
    x = tx(store, lambda t: t.claim("x1", "runner-b", t.now + TTL))
    assert (x.owner, x.epoch) == ("runner-b", 2), f"lease expiry: recovery claim gave {x}"
    assert tx(store, lambda t: t.kv_get("exec", "progress")) == b"1", (
        "lease expiry: a fenced write was kept"
    )


def case_lease_recovery(store: Store, clock: FakeClock) -> None:
    """Scenario "lease recovery" (L-06, X-11): after expiry the same attempt is
    claimed again, even by the same owner string, with a higher epoch and its
    original start time; the old lease stays fenced."""
    old = start_attempt(store)
    started = get_execution(store, "x1").started_at
    clock.advance(seconds=TTL / 1e9 + 1)
    x = tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    assert (x.owner, x.epoch, x.started_at) == ("runner-a", old.epoch + 1, started), (
        f"lease recovery: same-owner recovery gave {x}"
    )
    fails(
        store,
        Fenced,
        lambda t: t.put_work(replace(t.work("w1"), context=payload())),
        "lease recovery: the superseded epoch",
        lease=old,
    )
    tx(store, lambda t: t.put_work(replace(t.work("w1"), context=payload())), lease=lease_of(x))


def case_lease_renew(store: Store, clock: FakeClock) -> None:
    """Scenario "lease renew" (L-10): renew extends a live lease under the same
    authority; an earlier expiry is Invalid; a wrong owner/epoch or an expired lease
    is Fenced."""
    lease = start_attempt(store)
    current = get_execution(store, "x1").lease_expires_at
    later = current + TTL
    renewed = tx(store, lambda t: t.renew(lease, later), lease=lease)
    assert (renewed.lease_expires_at, renewed.epoch, renewed.owner) == (
        later,
        lease.epoch,
        "runner-a",
    ), f"lease renew: renew gave {renewed}"
    fails(store, Invalid, lambda t: t.renew(lease, later - 1), "lease renew: shortening")
    for what, bad in [
        ("wrong owner", replace(lease, owner="runner-b")),
        ("wrong epoch", replace(lease, epoch=lease.epoch + 1)),
    ]:
        fails(store, Fenced, lambda t, b=bad: t.renew(b, later + TTL), f"lease renew: {what}")
    clock.set(later)
    fails(store, Fenced, lambda t: t.renew(lease, later + TTL), "lease renew: expired lease")
    assert get_execution(store, "x1").lease_expires_at == later, (
        "lease renew: a refused renew changed the expiry"
    )


def case_lease_release(store: Store, clock: FakeClock) -> None:
    """Scenario "lease release" (L-11): release checks authority, clears owner and
    expiry, keeps the epoch and the running state; a later claim recovers the same
    attempt with a higher epoch."""
    lease = start_attempt(store)
    fails(
        store,
        Fenced,
        lambda t: t.release(replace(lease, owner="runner-b")),
        "lease release: wrong owner",
    )
    released = tx(store, lambda t: t.release(lease), lease=lease)
    assert (released.state, released.owner, released.lease_expires_at, released.epoch) == (
        X_RUNNING,
        "",
        0,
        lease.epoch,
    ), f"lease release: release gave {released}"
    fails(
        store,
        Fenced,
        lambda t: t.kv_put("exec", "k", b"v"),
        "lease release: a released lease still writes",
        lease=lease,
    )
    fails(store, Fenced, lambda t: t.release(lease), "lease release: releasing twice")
    x = tx(store, lambda t: t.claim("x1", "runner-a", t.now + TTL))
    assert (x.owner, x.epoch) == ("runner-a", lease.epoch + 1), (
        f"lease release: claim after release gave {x}"
    )


def case_guard_lease_verified_before_callback(store: Store, clock: FakeClock) -> None:
    """L-07: a Guard lease is checked before the callback runs: wrong owner, wrong
    epoch, unknown attempt, non-running attempt or terminal Work -> Fenced and the
    callback is not called."""
    lease = start_attempt(store)
    put_works(store, make_work("w2"))
    tx(store, lambda t: t.put_execution(make_execution("x2", "w2")))
    calls: list[str] = []

    def callback(t: Tx) -> None:
        calls.append("called")
        t.kv_put("exec", "k", b"v")

    for what, bad in [
        ("wrong owner", replace(lease, owner="runner-b")),
        ("wrong epoch", replace(lease, epoch=lease.epoch + 1)),
        ("older epoch", replace(lease, epoch=lease.epoch - 1)),
        ("unknown attempt", LeaseRef("ghost", "runner-a", 1)),
        ("pending attempt", LeaseRef("x2", "runner-a", 0)),
    ]:
        fails(store, Fenced, callback, f"L-07 {what}", lease=bad)
    assert calls == [], f"L-07: the callback ran {len(calls)} times under a bad lease"
    tx(store, callback, lease=lease)
    assert calls == ["called"], "L-07: a valid lease did not run the callback"
    # Work made terminal by the control plane while the attempt still runs.
    update_work(store, "w1", state=CANCELLED)
    fails(store, Fenced, callback, "L-07 terminal Work", lease=lease)
    assert calls == ["called"], "L-07: the callback ran for a terminal Work"


def case_fencing_covers_every_write(store: Store, clock: FakeClock) -> None:
    """L-08, KV-05: a stale lease fences Work/context writes, emitted Events,
    outcomes, timers and KV; nothing is written."""
    lease = start_attempt(store)
    clock.advance(seconds=TTL / 1e9)
    before = inventory(store, "exec")
    writes: list[tuple[str, Callable[[Tx], object]]] = [
        ("Work context", lambda t: t.put_work(replace(t.work("w1"), context=payload()))),
        ("emitted Event", lambda t: t.accept_event(make_event("emitted", work_id="w1"))),
        ("outcome", lambda t: terminate(t, "x1", X_COMPLETED, None)),
        ("timer", lambda t: t.put_timer(make_timer("t1", t.now, work_id="w1"))),
        ("KV", lambda t: t.kv_put("exec", "cursor", b"1")),
    ]
    for what, write in writes:
        fails(store, Fenced, write, f"L-08 fenced {what}", lease=lease)
    assert inventory(store, "exec") == before, "L-08: a fenced write was kept"


def case_put_execution_ignores_lease_fields(store: Store, clock: FakeClock) -> None:
    """L-09 (resolution 16): put_execution ignores supplied owner, epoch, expiry and
    start/finish times and keeps the stored ones."""
    start_attempt(store)
    x = get_execution(store, "x1")
    forged = replace(
        x,
        trace_id="trace-9",
        owner="intruder",
        epoch=99,
        lease_expires_at=x.lease_expires_at + seconds(3600),
        started_at=1,
        finished_at=2,
    )
    written = tx(store, lambda t: t.put_execution(forged))
    kept = (written.owner, written.epoch, written.lease_expires_at, written.started_at)
    assert kept == (x.owner, x.epoch, x.lease_expires_at, x.started_at), (
        f"L-09: put_execution changed lease fields: {written}"
    )
    assert (written.trace_id, written.finished_at) == ("trace-9", 0), "L-09: write not applied"
    assert get_execution(store, "x1") == written, "L-09: stored attempt differs from returned"


# ---------------------------------------------------------------------------------
# 17. Timers (TM)
# ---------------------------------------------------------------------------------


def _tick(n: int) -> Event:
    return make_event(f"tick-{n}", source="core.timer", type="schedule.tick")


def case_timer_fire_fills_times(store: Store, clock: FakeClock) -> None:
    """TM-01: fire accepts the template with occurred_at = the due time and
    received_at = tx.now."""
    due = clock() + seconds(60)
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", due, template=_tick(1))))
    assert (timer.fire_at, timer.template) == (due, _tick(1)), "TM-01: timer not stored"
    clock.advance(seconds=90)
    fired, now = tx(store, lambda t: (t.fire_timer("t1", timer.revision), t.now))
    assert (fired.event.occurred_at, fired.event.received_at) == (due, now), (
        f"TM-01: fired Event times are {fired.event.occurred_at}, {fired.event.received_at}"
    )
    assert fired.event == replace(_tick(1), occurred_at=due, received_at=now), (
        "TM-01: the fired Event is not the template"
    )
    assert tx(store, lambda t: t.event("tick-1")) == fired, "TM-01: fired Event not stored"


def case_timer_one_shot(store: Store, clock: FakeClock) -> None:
    """Scenario "timer one-shot" (TM-02): firing without next accepts the Event and
    removes the timer in the same transaction; it cannot fire again."""
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(1))))
    fired = tx(store, lambda t: t.fire_timer("t1", timer.revision))
    assert fired.id == "tick-1", "timer one-shot: fire did not accept the template"

    def after(t: Tx) -> tuple[list[str], list[str]]:
        return ids(t.timers()), ids(t.events())

    assert tx(store, after) == ([], ["tick-1"]), "timer one-shot: the timer was not removed"
    fails(store, NotFound, lambda t: t.timer("t1"), "timer one-shot: fired timer readable")
    fails(
        store,
        (NotFound, Conflict),
        lambda t: t.fire_timer("t1", timer.revision),
        "timer one-shot: second fire",
    )
    assert ids(tx(store, lambda t: t.events())) == ["tick-1"], "timer one-shot: fired twice"


def case_timer_rearm(store: Store, clock: FakeClock) -> None:
    """TM-03, TM-09: fire with next rearms the same timer ID (revision + 1); next
    must be later than the fired due time and carry another Event identity; an
    already overdue next time is allowed."""
    due = clock()
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", due, template=_tick(1))))
    clock.advance(seconds=3600)
    fails(
        store,
        Invalid,
        lambda t: t.fire_timer("t1", timer.revision, TimerNext(due, _tick(2))),
        "TM-03 next not later than the fired due time",
    )
    fails(
        store,
        Invalid,
        lambda t: t.fire_timer("t1", timer.revision, TimerNext(due + 1, _tick(1))),
        "TM-03 next with the fired Event identity",
    )
    assert tx(store, lambda t: t.events()) == [], "TM-03: a refused rearm accepted the Event"
    overdue = due + seconds(60)  # still in the past: missed-slot policy is not storage's
    tx(store, lambda t: t.fire_timer("t1", timer.revision, TimerNext(overdue, _tick(2))))
    rearmed = tx(store, lambda t: t.timer("t1"))
    assert (rearmed.fire_at, rearmed.template, rearmed.revision) == (
        overdue,
        _tick(2),
        timer.revision + 1,
    ), f"TM-03: the rearmed timer is {rearmed}"
    assert ids(tx(store, lambda t: t.due_timers(clock()))) == ["t1"], "TM-09: overdue not due"


def case_timer_template_identity(store: Store, clock: FakeClock) -> None:
    """TM-04: a timer (created, updated or rearmed) whose template reuses an accepted
    Event identity, by ID or by (source, delivery_id), conflicts."""
    tx(store, lambda t: t.accept_event(_tick(1)))
    same_delivery = replace(_tick(9), delivery_id=_tick(1).delivery_id)
    same_id = replace(_tick(1), delivery_id="d-other")
    for what, template in [("delivery", same_delivery), ("ID", same_id)]:
        fails(
            store,
            Conflict,
            lambda t, e=template: t.put_timer(make_timer("t1", t.now, template=e)),
            f"TM-04 template reusing an accepted Event {what}",
        )
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(2))))
    fails(
        store,
        Conflict,
        lambda t: t.put_timer(replace(timer, template=same_delivery)),
        "TM-04 update to an accepted identity",
    )
    fails(
        store,
        Conflict,
        lambda t: t.fire_timer("t1", timer.revision, TimerNext(timer.fire_at + 1, _tick(1))),
        "TM-04 rearm with an accepted identity",
    )
    assert tx(store, lambda t: t.timer("t1")) == timer, "TM-04: a refused timer write was kept"


def case_timer_early_and_stale_fire(store: Store, clock: FakeClock) -> None:
    """TM-05: firing before the due time is Invalid; a stale revision conflicts; an
    unknown timer is NotFound."""
    due = clock() + seconds(60)
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", due, template=_tick(1))))
    clock.set(due - 1)
    fails(store, Invalid, lambda t: t.fire_timer("t1", timer.revision), "TM-05 early fire")
    updated = tx(store, lambda t: t.put_timer(replace(timer, purpose="moved")))
    clock.set(due)
    fails(store, Conflict, lambda t: t.fire_timer("t1", timer.revision), "TM-05 stale fire")
    fails(store, NotFound, lambda t: t.fire_timer("ghost", 1), "TM-05 unknown timer")
    assert tx(store, lambda t: t.events()) == [], "TM-05: a refused fire accepted its Event"
    tx(store, lambda t: t.fire_timer("t1", updated.revision))  # due exactly now: fires


def case_timer_rollback(store: Store, clock: FakeClock) -> None:
    """Scenario "timer rollback" (TM-06, KV-06): a fire and its KV cursor update
    commit together; a rolled-back fire leaves timer, Event and cursor unchanged."""
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(1))))
    tx(store, lambda t: t.kv_put("schedule", "cursor", b"0"))

    def fire(t: Tx, crash: bool) -> None:
        t.fire_timer("t1", timer.revision, TimerNext(timer.fire_at + seconds(60), _tick(2)))
        t.kv_put("schedule", "cursor", b"1")
        if crash:
            raise Crash("crash after fire")

    crashes(store, lambda t: fire(t, True), "timer rollback: crashed fire")

    def state(t: Tx) -> tuple[object, ...]:
        return t.timer("t1"), ids(t.events()), t.kv_get("schedule", "cursor")

    assert tx(store, state) == (timer, [], b"0"), (
        "timer rollback: a rolled-back fire left its timer, Event or cursor changed"
    )
    tx(store, lambda t: fire(t, False))
    rearmed, events, cursor = tx(store, state)
    assert (events, cursor) == (["tick-1"], b"1"), "timer rollback: fire and cursor not committed"
    assert cast(Any, rearmed).revision == timer.revision + 1, "timer rollback: not rearmed"


def case_timer_recreation(store: Store, clock: FakeClock) -> None:
    """Scenario "timer recreation" (TM-07, TM-08): revisions stay monotonic across
    delete and recreate, so an old fire or delete command cannot touch the
    replacement."""
    first = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(1))))
    fails(store, Conflict, lambda t: t.delete_timer("t1", first.revision + 1), "TM-08 delete")
    tx(store, lambda t: t.delete_timer("t1", first.revision))
    fails(store, NotFound, lambda t: t.delete_timer("t1", first.revision), "TM-08 deleted")
    second = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(2))))
    assert second.revision > first.revision, (
        f"timer recreation: recreated timer has revision {second.revision} after {first.revision}"
    )
    fails(
        store,
        Conflict,
        lambda t: t.fire_timer("t1", first.revision),
        "timer recreation: an old fire command hit the replacement",
    )
    fails(
        store,
        Conflict,
        lambda t: t.delete_timer("t1", first.revision),
        "timer recreation: an old delete command hit the replacement",
    )
    updated = tx(store, lambda t: t.put_timer(replace(second, purpose="x")))
    tx(store, lambda t: t.delete_timer("t1", updated.revision))
    third = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(3))))
    assert third.revision > updated.revision, "timer recreation: revision went backwards"
    fired = tx(store, lambda t: t.fire_timer("t1", third.revision))
    assert fired.id == "tick-3", "timer recreation: the replacement did not fire"


def case_timer_create_and_update(store: Store, clock: FakeClock) -> None:
    """TM-08, ID-04 (lead rule): revision 0 on an existing timer conflicts; update
    needs the current revision; unknown delete is NotFound."""
    timer = tx(store, lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(1))))
    fails(
        store,
        Conflict,
        lambda t: t.put_timer(make_timer("t1", t.now, template=_tick(2))),
        "TM-08 create over an existing timer",
    )
    fails(store, NotFound, lambda t: t.delete_timer("ghost", 1), "TM-08 delete unknown")
    assert tx(store, lambda t: t.timers()) == [timer], "TM-08: a refused timer write was kept"


def case_due_timers(store: Store, clock: FakeClock) -> None:
    """TM-01, TM-09 (lead rule): due_timers(now, limit) lists timers with fire_at <=
    now, earliest first, ties by ID; storage fires nothing on its own."""
    base = clock()
    plan = [("t-c", 20), ("t-a", 10), ("t-b", 10), ("t-d", 30), ("t-late", 3600)]
    for n, (timer_id, offset) in enumerate(plan):
        timer = make_timer(timer_id, base + seconds(offset), template=_tick(n))
        tx(store, lambda t, timer=timer: t.put_timer(timer))
    clock.advance(seconds=7200)
    due = tx(store, lambda t: ids(t.due_timers(base + seconds(20))))
    assert due == ["t-a", "t-b", "t-c"], f"TM-09: due_timers returned {due}"
    assert tx(store, lambda t: ids(t.due_timers(base + seconds(30), limit=2))) == ["t-a", "t-b"]
    assert tx(store, lambda t: t.due_timers(base)) == [], "TM-09: a future timer was due"
    assert tx(store, lambda t: t.events()) == [], "TM-09: storage fired a timer by itself"
    assert len(tx(store, lambda t: t.timers())) == 5, "TM-09: storage removed a due timer"


# ---------------------------------------------------------------------------------
# 18. Waits (WT)
# ---------------------------------------------------------------------------------


def _parked_with_wait(store: Store, **wait_fields: Any) -> Wait:
    """w1 (key github.acme/1) waiting, x1 parked, Wait wt1 active with a timeout
    timer t-timeout; returns the stored Wait."""
    lease = start_attempt(store, keys=[key("1")])

    def register(t: Tx) -> None:
        t.put_timer(make_timer("t-timeout", t.now + seconds(600), work_id="w1", purpose="timeout"))
        fields: dict[str, Any] = {
            "keys": [key("1")],
            "types": ["review.approved"],
            "after_sequence": t.latest_sequence(),
            "timeout_timer_id": "t-timeout",
            "description": "await review",
            "owner": "ext.review",
            **wait_fields,
        }
        park(t, "x1", make_wait("wt1", **fields))

    tx(store, register, lease=lease)
    return tx(store, lambda t: t.wait("wt1"))


def case_wait_registration_round_trip(store: Store, clock: FakeClock) -> None:
    """WT-01: a registered Wait keeps Work, attempt, key and type filters, boundary,
    timeout timer, description and owner; it starts active at revision 1."""
    tx(store, lambda t: t.accept_event(make_event("before")))
    wait = _parked_with_wait(store)
    boundary = tx(store, lambda t: t.event("before").sequence)
    expected = Wait(
        id="wt1",
        work_id="w1",
        execution_id="x1",
        keys=(key("1"),),
        types=("review.approved",),
        after_sequence=boundary,
        timeout_timer_id="t-timeout",
        description="await review",
        owner="ext.review",
    )
    assert replace(wait, revision=0, created_at=0, updated_at=0) == expected, (
        f"WT-01: the registered Wait read back as {wait}"
    )
    assert (wait.state, wait.revision) == (WaitState.ACTIVE, 1), "WT-01: new Wait not active/1"


def case_wait_must_join_park(store: Store, clock: FakeClock) -> None:
    """WT-02 (resolution 19): a Wait registered without its attempt parked (or in
    terminal waiting) and its Work waiting in the same transaction fails the whole
    transaction with Invalid at commit."""
    lease = start_attempt(store)
    before = inventory(store)

    def only_wait(t: Tx) -> None:
        t.put_wait(make_wait("wt1"))
        t.accept_event(make_event("e1"))

    fails(store, Invalid, only_wait, "WT-02 Wait without parking")

    def parked_but_work_running(t: Tx) -> None:
        terminate(t, "x1", X_PARKED, None)
        t.put_wait(make_wait("wt1"))

    fails(store, Invalid, parked_but_work_running, "WT-02 Wait with Work still running")

    def work_waiting_attempt_running(t: Tx) -> None:
        t.put_work(replace(t.work("w1"), state=WAITING))
        t.put_wait(make_wait("wt1"))

    fails(store, Invalid, work_waiting_attempt_running, "WT-02 Wait with attempt still running")
    assert inventory(store) == before, "WT-02: a refused Wait registration committed something"
    tx(store, lambda t: park(t, "x1", make_wait("wt1"), terminal=True), lease=lease)
    assert tx(store, lambda t: t.wait("wt1").state) == WaitState.ACTIVE, (
        "WT-02: a Wait registered with terminal waiting was refused"
    )


def case_wait_registration_validation(store: Store, clock: FakeClock) -> None:
    """WT-01, WT-03, WT-04, ID-08 (lead rule): a new Wait is active; its Work and
    attempt exist and belong together; its keys are owned by that Work; its types
    are dotted; a named timeout timer exists."""
    start_attempt(store, keys=[key("1")])
    start_attempt(store, work_id="w2", execution_id="x2", keys=[key("2")])
    tx(store, lambda t: t.accept_event(make_event("e1")))
    bad: list[tuple[str, type[StorageError], Wait]] = [
        ("not active", Invalid, replace(make_wait(), state=WaitState.WOKEN, woken_by="e1")),
        ("unknown Work", NotFound, make_wait(work_id="ghost")),
        ("unknown attempt", NotFound, make_wait(execution_id="ghost")),
        ("attempt of another Work", Invalid, make_wait(execution_id="x2")),
        ("foreign key", Invalid, make_wait(keys=[key("1"), key("2")])),
        ("unowned key", Invalid, make_wait(keys=[key("nobody")])),
        ("malformed type", Invalid, make_wait(types=["review"])),
        ("unknown timeout timer", NotFound, make_wait(timeout_timer_id="ghost")),
    ]
    for what, error, wait in bad:

        def register(
            t: Tx, w: Wait = wait, e: type[StorageError] = error, rule: str = what
        ) -> None:
            raises(e, lambda: t.put_wait(w), f"WT-03/WT-04 {rule}")

        tx(store, register)
    assert tx(store, lambda t: t.waits()) == [], "WT-03: a refused Wait was stored"


def case_wait_fields_immutable(store: Store, clock: FakeClock) -> None:
    """WT-05: keys, types, boundary, timeout, description and owner cannot change."""
    wait = _parked_with_wait(store)
    tx(store, lambda t: t.put_timer(make_timer("t-other", t.now + seconds(60), work_id="w1")))
    tx(store, lambda t: t.put_work(replace(t.work("w1"), keys=(key("1"), key("1b")))))
    for what, changed in [
        ("keys", replace(wait, keys=(key("1"), key("1b")))),
        ("types", replace(wait, types=("review.rejected",))),
        ("boundary", replace(wait, after_sequence=wait.after_sequence + 1)),
        ("timeout", replace(wait, timeout_timer_id="t-other")),
        ("description", replace(wait, description="other")),
        ("owner", replace(wait, owner="ext.other")),
        ("Work", replace(wait, work_id="w2")),
    ]:
        fails(store, Invalid, lambda t, c=changed: t.put_wait(c), f"WT-05 change of {what}")
    assert tx(store, lambda t: t.wait("wt1")) == wait, "WT-05: an immutable Wait field changed"


def case_wait_progress_needs_owner(store: Store, clock: FakeClock) -> None:
    """WT-06: while active, progress may change only on a Wait with an owner."""
    wait = _parked_with_wait(store)
    updated = tx(store, lambda t: t.put_wait(replace(wait, progress="2 of 3 approvals")))
    assert (updated.progress, updated.revision) == ("2 of 3 approvals", 2), "WT-06: progress"
    fails(
        store,
        Conflict,
        lambda t: t.put_wait(replace(wait, progress="stale")),
        "WT-06 progress with a stale revision",
    )
    put_works(store, make_work("w2"))
    start_attempt(store, work_id="w2", execution_id="x2", create_work=False)
    tx(store, lambda t: park(t, "x2", make_wait("wt2", "w2", "x2")))
    ownerless = tx(store, lambda t: t.wait("wt2"))
    fails(
        store,
        Invalid,
        lambda t: t.put_wait(replace(ownerless, progress="halfway")),
        "WT-06 progress on a Wait without owner",
    )


def case_wait_state_changes_once(store: Store, clock: FakeClock) -> None:
    """WT-07, WT-08: active -> woken needs a stored Event (empty Invalid, unknown
    NotFound); active -> cancelled; progress is kept; woken and cancelled Waits are
    immutable."""
    wait = _parked_with_wait(store)
    wait = tx(store, lambda t: t.put_wait(replace(wait, progress="halfway")))
    tx(store, lambda t: t.accept_event(make_event("wake", type="review.approved")))
    woken = replace(wait, state=WaitState.WOKEN)
    fails(store, Invalid, lambda t: t.put_wait(replace(woken, woken_by="")), "WT-07 no Event")
    fails(store, NotFound, lambda t: t.put_wait(replace(woken, woken_by="ghost")), "WT-07 ghost")
    done = tx(store, lambda t: t.put_wait(replace(woken, woken_by="wake")))
    assert (done.state, done.woken_by, done.progress) == (WaitState.WOKEN, "wake", "halfway"), (
        f"WT-07: woken Wait is {done}"
    )
    for what, changed in [
        ("cancel", replace(done, state=WaitState.CANCELLED)),
        ("reactivate", replace(done, state=WaitState.ACTIVE, woken_by="")),
        ("progress", replace(done, progress="more")),
        ("same", done),
    ]:
        fails(store, Invalid, lambda t, c=changed: t.put_wait(c), f"WT-08 woken Wait {what}")

    put_works(store, make_work("w2"))
    start_attempt(store, work_id="w2", execution_id="x2", create_work=False)
    tx(store, lambda t: park(t, "x2", make_wait("wt2", "w2", "x2")))
    cancelled = tx(store, lambda t: t.put_wait(replace(t.wait("wt2"), state=WaitState.CANCELLED)))
    assert cancelled.state == WaitState.CANCELLED, "WT-07: active -> cancelled refused"
    fails(
        store,
        Invalid,
        lambda t: t.put_wait(replace(cancelled, state=WaitState.WOKEN, woken_by="wake")),
        "WT-08 cancelled Wait woken",
    )


def case_wait_park_wake(store: Store, clock: FakeClock) -> None:
    """Scenario "wait park/wake" (WT-09, O-06): the wake transaction records the
    winning Event, deletes the timeout timer, claims the parked attempt and updates
    Work, all together; a failure in it leaves everything parked."""
    wait = _parked_with_wait(store)
    parked = get_execution(store, "x1")
    tx(store, lambda t: t.accept_event(make_event("wake", type="review.approved", keys=[key("1")])))
    before = inventory(store)

    def wake(t: Tx, crash: bool) -> None:
        t.put_wait(replace(t.wait("wt1"), state=WaitState.WOKEN, woken_by="wake"))
        t.delete_timer("t-timeout", t.timer("t-timeout").revision)
        t.claim("x1", "runner-b", t.now + TTL)
        t.mark_routed("wake", "w1", "routed")
        if crash:
            raise Crash("crash during wake")

    crashes(store, lambda t: wake(t, True), "wait park/wake: crashed wake")
    assert inventory(store) == before, "wait park/wake: a failed wake left partial effects"
    tx(store, lambda t: wake(t, False))

    def after(t: Tx) -> tuple[object, ...]:
        x = t.execution("x1")
        return (
            t.wait("wt1").state,
            t.wait("wt1").woken_by,
            ids(t.timers()),
            x.state,
            x.epoch,
            t.work("w1").state,
        )

    assert tx(store, after) == (
        WaitState.WOKEN,
        "wake",
        [],
        X_RUNNING,
        parked.epoch + 1,
        RUNNING,
    ), f"wait park/wake: after the wake: {tx(store, after)}"
    assert wait.timeout_timer_id == "t-timeout", "wait park/wake: fixture lost its timeout"


def case_wait_timer_cancellation(store: Store, clock: FakeClock) -> None:
    """Scenario "wait timer cancellation" (WT-04, WT-09, WT-10): the timeout timer
    fires and wins: its Event wakes the Wait and the attempt is failed in one
    transaction; the losing wake then conflicts. Separately, a timeout timer deleted
    before the Wait changes state does not block cancelling the Wait."""
    wait = _parked_with_wait(store)
    clock.advance(seconds=601)

    def timeout(t: Tx) -> None:
        timer = t.timer("t-timeout")
        fired = t.fire_timer("t-timeout", timer.revision)
        t.put_wait(replace(t.wait("wt1"), state=WaitState.WOKEN, woken_by=fired.id))
        terminate(t, "x1", X_FAILED, READY)
        t.mark_routed(fired.id, "w1", "routed")

    tx(store, timeout)
    timer_event = tx(store, lambda t: t.wait("wt1").woken_by)
    assert timer_event == "t-timeout-fire", f"wait timer: Wait woken by {timer_event!r}"
    tx(store, lambda t: t.accept_event(make_event("late-wake", type="review.approved")))
    fails(
        store,
        Conflict,
        lambda t: t.put_wait(replace(wait, state=WaitState.WOKEN, woken_by="late-wake")),
        "wait timer: the wake that lost the race",
    )
    state = tx(store, lambda t: (ids(t.timers()), t.execution("x1").state, t.work("w1").state))
    assert state == ([], X_FAILED, READY), f"wait timer: after the timeout: {state}"

    # A timeout timer deleted first; the Wait is then cancelled on its own.
    start_attempt(store, work_id="w2", execution_id="x2", keys=[key("2")])

    def register(t: Tx) -> None:
        t.put_timer(make_timer("t2", t.now + seconds(60), work_id="w2"))
        park(t, "x2", make_wait("wt2", "w2", "x2", timeout_timer_id="t2"))

    tx(store, register)
    tx(store, lambda t: t.delete_timer("t2", t.timer("t2").revision))
    cancelled = tx(store, lambda t: t.put_wait(replace(t.wait("wt2"), state=WaitState.CANCELLED)))
    assert cancelled.state == WaitState.CANCELLED, "WT-04: Wait with a deleted timer stuck"


def case_wait_history_listed(store: Store, clock: FakeClock) -> None:
    """WT-11, EN-06: woken and cancelled Waits stay listed by waits(); only
    active_waits() drops them."""
    _parked_with_wait(store)
    start_attempt(store, work_id="w2", execution_id="x2")
    tx(store, lambda t: park(t, "x2", make_wait("wt2", "w2", "x2")))
    start_attempt(store, work_id="w3", execution_id="x3")
    tx(store, lambda t: park(t, "x3", make_wait("wt3", "w3", "x3")))
    tx(store, lambda t: t.accept_event(make_event("wake")))
    tx(
        store,
        lambda t: t.put_wait(replace(t.wait("wt1"), state=WaitState.WOKEN, woken_by="wake")),
    )
    tx(store, lambda t: t.put_wait(replace(t.wait("wt2"), state=WaitState.CANCELLED)))
    lists = tx(
        store,
        lambda t: (ids(t.waits()), ids(t.active_waits()), ids(t.active_waits("w1"))),
    )
    assert lists == (["wt1", "wt2", "wt3"], ["wt3"], []), f"WT-11: wait lists are {lists}"


# ---------------------------------------------------------------------------------
# 19. Namespaced KV (KV)
# ---------------------------------------------------------------------------------


def case_kv_basics(store: Store, clock: FakeClock) -> None:
    """KV-01, KV-02 (resolution): get/put/delete scoped by namespace; empty
    namespace or key is Invalid; get of an absent key is NotFound; delete of an
    absent key is fine."""
    tx(store, lambda t: [t.kv_put("ns", "k", b"one"), t.kv_put("other", "k", b"two")])
    got = tx(store, lambda t: (t.kv_get("ns", "k"), t.kv_get("other", "k")))
    assert got == (b"one", b"two"), f"KV-01: namespaces are not separate: {got}"
    tx(store, lambda t: t.kv_put("ns", "k", b"three"))
    assert tx(store, lambda t: t.kv_get("ns", "k")) == b"three", "KV-01: put did not overwrite"
    tx(store, lambda t: t.kv_delete("ns", "k"))
    fails(store, NotFound, lambda t: t.kv_get("ns", "k"), "KV-02 get after delete")
    tx(store, lambda t: t.kv_delete("ns", "k"))
    tx(store, lambda t: t.kv_delete("never", "there"))
    for what, op in [
        ("put empty namespace", lambda t: t.kv_put("", "k", b"v")),
        ("put empty key", lambda t: t.kv_put("ns", "", b"v")),
        ("get empty namespace", lambda t: t.kv_get("", "k")),
        ("get empty key", lambda t: t.kv_get("ns", "")),
        ("delete empty key", lambda t: t.kv_delete("ns", "")),
        ("list empty namespace", lambda t: t.kv_list("")),
    ]:
        fails(store, Invalid, op, f"KV-01 {what}")
    assert tx(store, lambda t: t.kv_get("other", "k")) == b"two", "KV-01: other namespace lost"


def case_kv_list_prefix(store: Store, clock: FakeClock) -> None:
    """KV-03: list by prefix returns only that namespace's keys with the prefix,
    sorted by key."""

    def fill(t: Tx) -> None:
        for k in ("cursor/b", "obs/2", "cursor/a", "obs/10", "cursor", "cursorx"):
            t.kv_put("recon", k, k.encode())
        t.kv_put("recon-other", "cursor/c", b"x")

    tx(store, fill)
    lists = tx(store, lambda t: (t.kv_list("recon", "cursor/"), t.kv_list("recon")))
    assert lists[0] == [("cursor/a", b"cursor/a"), ("cursor/b", b"cursor/b")], (
        f"KV-03: prefix listing returned {lists[0]}"
    )
    assert [k for k, _ in lists[1]] == [
        "cursor",
        "cursor/a",
        "cursor/b",
        "cursorx",
        "obs/10",
        "obs/2",
    ], f"KV-03: full listing is not sorted by key: {lists[1]}"
    assert tx(store, lambda t: t.kv_list("empty-ns")) == [], "KV-03: unknown namespace not empty"


def case_kv_joins_transaction(store: Store, clock: FakeClock) -> None:
    """KV-05, L-08: KV writes roll back with their transaction, and executor KV
    writes are fenced by the lease."""
    tx(store, lambda t: t.kv_put("ns", "k", b"v1"))

    def write_then_fail(t: Tx) -> None:
        t.kv_put("ns", "k", b"v2")
        t.kv_put("ns", "k2", b"new")
        t.kv_delete("ns", "k")
        raise Crash("failure after KV writes")

    crashes(store, write_then_fail, "KV-05 failure after KV writes")
    assert tx(store, lambda t: t.kv_list("ns")) == [("k", b"v1")], (
        "KV-05: KV writes not rolled back"
    )
    lease = start_attempt(store)
    tx(store, lambda t: t.kv_put("exec/x1", "state", b"a"), lease=lease)
    stale = replace(lease, epoch=lease.epoch + 1)
    fails(store, Fenced, lambda t: t.kv_put("exec/x1", "state", b"b"), "KV-05 fenced", lease=stale)
    assert tx(store, lambda t: t.kv_get("exec/x1", "state")) == b"a", "KV-05: fenced KV write kept"


def case_kv_checkpoints(store: Store, clock: FakeClock) -> None:
    """Scenario "KV checkpoints" (KV-06, CP-01): reconciliation stores observation
    and cursor keys with the resulting Events in one transaction; a cursor never
    advances without its Events."""
    tx(store, lambda t: t.kv_put("recon/github.acme", "cursor", b"page-1"))

    def reconcile(t: Tx, crash: bool) -> None:
        for n in (1, 2):
            t.accept_event(make_event(f"obs-{n}", source="github.poll", type="github.issue.seen"))
            t.kv_put("recon/github.acme", f"observed/{n}", b'{"state": "open"}')
        t.kv_put("recon/github.acme", "cursor", b"page-2")
        if crash:
            raise Crash("crash before commit")

    crashes(store, lambda t: reconcile(t, True), "KV checkpoints: crashed reconciliation")

    def state(t: Tx) -> tuple[bytes, list[str], list[str]]:
        return (
            t.kv_get("recon/github.acme", "cursor"),
            [k for k, _ in t.kv_list("recon/github.acme", "observed/")],
            ids(t.events()),
        )

    assert tx(store, state) == (b"page-1", [], []), (
        "KV checkpoints: a failed reconciliation advanced the cursor or kept observations"
    )
    tx(store, lambda t: reconcile(t, False))
    assert tx(store, state) == (b"page-2", ["observed/1", "observed/2"], ["obs-1", "obs-2"]), (
        "KV checkpoints: cursor, observations and Events did not commit together"
    )


def case_kv_value_limit(store: Store, clock: FakeClock) -> None:
    """KV-07, KV-04 (resolution 25): values must be bytes of at most
    KV_VALUE_LIMIT; larger values are Invalid."""
    tx(store, lambda t: t.kv_put("ns", "max", b"x" * KV_VALUE_LIMIT))
    fails(
        store,
        Invalid,
        lambda t: t.kv_put("ns", "big", b"x" * (KV_VALUE_LIMIT + 1)),
        "KV-07 value over the limit",
    )
    fails(
        store,
        Invalid,
        lambda t: t.kv_put("ns", "str", cast(bytes, "text")),
        "KV-07 value that is not bytes",
    )
    assert [k for k, _ in tx(store, lambda t: t.kv_list("ns"))] == ["max"], "KV-07: stored"
    assert len(tx(store, lambda t: t.kv_get("ns", "max"))) == KV_VALUE_LIMIT, "KV-07: truncated"


# ---------------------------------------------------------------------------------

CASES: dict[str, Case] = {
    name.removeprefix("case_"): fn
    for name, fn in sorted(globals().items())
    if name.startswith("case_") and callable(fn)
}

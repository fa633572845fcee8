"""Records of the five primitives (Work, Event, Execution, Timer/Wait, Scope) and the
values around them.

All records are frozen dataclasses; every collection field is a tuple or is decoded
afresh from JSON on each read, so a returned record can never alias stored state.
Times are integer nanoseconds since the Unix epoch, UTC (``Nanos``): Python datetimes
stop at microseconds and the contract orders to the nanosecond. ``storage.clock``
converts aware datetimes to and from ``Nanos``.

Fields the backend owns (``revision``, ``created_at``, ``updated_at``,
``latest_executor``, ``exhausted``, ``error_group``, an Execution's lease fields and
times) are ignored on writes and filled in on reads.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Nanos = int
JSON = Any  # a JSON-compatible value (dict, list, str, int, float, bool, None)

# Record format: bumped with every change to a stored field (see tests/storage/
# test_record_fields.py). 2 added Event.actor, 3 Binding.pass_env, 4 the Event scope,
# 5 Work.exhausted and Work.error_group, 6 no field but what every write now keeps
# beside the records (the Work tally, an attempt's Scope column): a format-5 process
# would write Work and attempts without them, leaving facet counts and dashboards
# wrong, so it must stop writing once format-6 code has opened the store; 7 no field
# but the series tally, the Work tally's margins and the routed workflow tally every
# write keeps (migrations 0014-0016): a format-6 process would accept Events, claim
# attempts, move Work and admit workflows without them, leaving the dashboards' long
# windows and the lists' facets wrong, so it must stop writing once format-7 code has
# opened the store (routed writes go through the same admission check); 8 no field but
# what ``Work.error_group`` holds: also "timed out waiting for <event types>" when the
# latest attempt ended waiting and its Wait timed out (migration 0020): a format-7
# process would leave such Work in no group, so the Errors page would not add up;
# 9 the routed monotonic axis (``storage.routed.clock``): an attempt lease carries its
# monotonic bounds and every routed write raises the axis's mark; a format-8 process
# would mint leases without them and decide expiry on wall time, so it must stop
# writing once format-9 code has opened the store; 10 no field but the Event key rows
# (``conduit_event_key``, migration 0021) every Event write keeps: a format-9 process
# would accept Events the key page and ``/events?key_*`` never find; 11 no field but
# the exhausted Work's own Work tally rows (migration 0026) every write keeps: a
# format-10 process would move Work in and out of exhausted without them, leaving the
# exhausted list's facets wrong.
RECORD_FORMAT = 11
SCHEMA_VERSION = 1


class WorkState(enum.StrEnum):
    READY = "ready"
    RUNNING = "running"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class ExecutionState(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    PARKED = "parked"
    COMPLETED = "completed"
    FAILED = "failed"
    WAITING = "waiting"
    HANDOFF = "handoff"
    CANCELLED = "cancelled"


class OutcomeKind(enum.StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"
    WAITING = "waiting"
    HANDOFF = "handoff"


class WaitState(enum.StrEnum):
    ACTIVE = "active"
    WOKEN = "woken"
    CANCELLED = "cancelled"


class WorkOrder(enum.StrEnum):
    """Sort order of a WorkQuery: by creation or update time, then ID, same direction."""

    CREATED_ASC = "created"
    CREATED_DESC = "-created"
    UPDATED_ASC = "updated"
    UPDATED_DESC = "-updated"

    @property
    def descending(self) -> bool:
        return self.value.startswith("-")

    @property
    def by_updated(self) -> bool:
        return self.value.endswith("updated")


@dataclass(frozen=True, slots=True)
class CorrelationKey:
    """(source, external_id): owned by at most one Work, for life."""

    source: str
    external_id: str


@dataclass(frozen=True, slots=True)
class Payload:
    """A namespaced schema identifier and valid JSON bytes, stored byte for byte."""

    schema: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Work:
    id: str
    kind: str
    scope_id: str = ""
    parent_id: str = ""
    state: WorkState = WorkState.READY
    keys: tuple[CorrelationKey, ...] = ()
    context: Payload | None = None
    # Backend-owned fields: ignored on write.
    latest_executor: str = ""
    # Kept by storage at every commit that touches the Work, its attempts or its
    # Timers (``storage.meaning.triage``), so the triage selections are an indexed
    # column, not a probe per ready Work. Exhausted: ready, has had an attempt, no live
    # attempt and no Timer: nothing runs it again until an operator retries it. The
    # error group: the normalised message of the latest attempt when it failed.
    exhausted: bool = False
    error_group: str = ""
    revision: int = 0
    created_at: Nanos = 0
    updated_at: Nanos = 0

    @property
    def source(self) -> str:
        """The first correlation key's source, else the kind (spec: "A Work's source")."""
        return self.keys[0].source if self.keys else self.kind

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_WORK_STATES


TERMINAL_WORK_STATES = frozenset({WorkState.COMPLETED, WorkState.FAILED, WorkState.CANCELLED})
LIVE_WORK_STATES = frozenset({WorkState.READY, WorkState.RUNNING, WorkState.WAITING})


@dataclass(frozen=True, slots=True)
class Event:
    """The immutable envelope. ``received_at`` is always set by the store from
    ``Guard.now``; ``occurred_at`` of 0 means "now"."""

    id: str
    source: str
    delivery_id: str
    type: str
    work_id: str = ""
    keys: tuple[CorrelationKey, ...] = ()
    causation_id: str = ""
    actor: str = ""
    payload: Payload | None = None
    occurred_at: Nanos = 0
    received_at: Nanos = 0


@dataclass(frozen=True, slots=True)
class Route:
    """The processing checkpoint: routing metadata beside the envelope, never in it."""

    work_id: str
    disposition: str
    routed_at: Nanos


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An accepted Event with the storage metadata kept beside its envelope."""

    event: Event
    sequence: int
    scope_id: str = ""
    route: Route | None = None

    @property
    def id(self) -> str:
        return self.event.id

    @property
    def routed(self) -> bool:
        return self.route is not None


@dataclass(frozen=True, slots=True)
class Binding:
    """Mechanical requirements only: which executor, which environment to pass."""

    name: str = ""
    executor: str = ""
    pass_env: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    message: str = ""
    detail: Payload | None = None


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    """A committed artifact: opaque ID, size and media type, plus the SHA-256 of its
    bytes (recorded so backups can verify copies)."""

    id: str
    size: int
    media_type: str
    sha256: str = ""


@dataclass(frozen=True, slots=True)
class Execution:
    """One attempt of a Work. Lease fields (owner, epoch, lease_expires_at) change only
    through claim/renew/release and state changes; put_execution ignores them."""

    id: str
    work_id: str
    attempt: int
    state: ExecutionState = ExecutionState.PENDING
    executor: str = ""
    binding: Binding | None = None
    trace_id: str = ""
    outcome: Outcome | None = None
    artifacts: tuple[ArtifactRef, ...] = ()
    # Backend-owned fields: ignored on write.
    owner: str = ""
    epoch: int = 0
    lease_expires_at: Nanos = 0
    started_at: Nanos = 0
    finished_at: Nanos = 0
    revision: int = 0
    created_at: Nanos = 0
    updated_at: Nanos = 0

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_EXECUTION_STATES


TERMINAL_EXECUTION_STATES = frozenset(
    {
        ExecutionState.COMPLETED,
        ExecutionState.FAILED,
        ExecutionState.WAITING,
        ExecutionState.HANDOFF,
        ExecutionState.CANCELLED,
    }
)
LIVE_EXECUTION_STATES = frozenset(
    {ExecutionState.PENDING, ExecutionState.RUNNING, ExecutionState.PARKED}
)


@dataclass(frozen=True, slots=True)
class LeaseRef:
    """What an executor presents in its Guard: the attempt, owner and epoch it holds."""

    execution_id: str
    owner: str
    epoch: int


@dataclass(frozen=True, slots=True)
class Scope:
    id: str
    parent_id: str = ""
    name: str = ""
    routes: tuple[JSON, ...] = ()
    bindings: tuple[Binding, ...] = ()
    config: Mapping[str, JSON] = field(default_factory=dict)
    secret_refs: tuple[str, ...] = ()
    revision: int = 0
    created_at: Nanos = 0
    updated_at: Nanos = 0


@dataclass(frozen=True, slots=True)
class Timer:
    """A fire time and an Event template. ``work_id`` ties retry and timeout timers to
    their Work so cancellation can remove them; ``purpose`` is free text ("retry",
    "timeout", "schedule") for operators."""

    id: str
    fire_at: Nanos
    template: Event
    work_id: str = ""
    purpose: str = ""
    revision: int = 0
    created_at: Nanos = 0
    updated_at: Nanos = 0


@dataclass(frozen=True, slots=True)
class TimerNext:
    """Rearm instruction for fire_timer: the next fire time and its Event template."""

    fire_at: Nanos
    template: Event


@dataclass(frozen=True, slots=True)
class Wait:
    id: str
    work_id: str
    execution_id: str
    keys: tuple[CorrelationKey, ...] = ()
    types: tuple[str, ...] = ()
    after_sequence: int = 0
    timeout_timer_id: str = ""
    description: str = ""
    owner: str = ""
    progress: str = ""
    state: WaitState = WaitState.ACTIVE
    woken_by: str = ""
    revision: int = 0
    created_at: Nanos = 0
    updated_at: Nanos = 0


# The five record tables the rules read and write by ID (``tx.rows`` hooks take one).
Table = Literal["work", "execution", "scope", "timer", "wait"]

LIVE_WAIT_STATES = frozenset({WaitState.ACTIVE})

# "Live", defined once: what ``live=True`` selects per table (live_works,
# live_executions, active_waits). Scopes and Timers have no live subset: a deleted
# Timer is gone from every read. The ORM compiles this map to SQL in one place.
LIVE_STATES: Mapping[Table, frozenset[WorkState | ExecutionState | WaitState]] = {
    "work": LIVE_WORK_STATES,
    "execution": LIVE_EXECUTION_STATES,
    "wait": LIVE_WAIT_STATES,
}


def is_live(table: Table, record: Work | Execution | Scope | Timer | Wait) -> bool:
    """Whether ``record`` of ``table`` is in its table's live subset (LIVE_STATES)."""
    states = LIVE_STATES.get(table)
    if states is None:
        return True
    return isinstance(record, Work | Execution | Wait) and record.state in states


class IdKind(enum.StrEnum):
    """The kinds of record an ID can name, in the order ``find_ids`` answers."""

    WORK = "work"
    EVENT = "event"
    EXECUTION = "execution"
    WAIT = "wait"
    TIMER = "timer"
    SCOPE = "scope"
    RUN = "run"  # a durable run record (``storage.run_records``)


@dataclass(frozen=True, slots=True)
class IdMatch:
    """A record whose ID starts with a searched prefix: its kind, its ID and the Work
    it belongs to ("" for a Scope, a run record and an Event that names no Work)."""

    kind: IdKind
    id: str
    work_id: str = ""


@dataclass(frozen=True, slots=True)
class WorkKey:
    """Keyset cursor of a WorkQuery page: the sort time and ID of the last row seen."""

    time: Nanos
    id: str


@dataclass(frozen=True, slots=True)
class WorkQuery:
    """Selects Work. Empty fields do not filter; filters combine with AND.

    ``updated_since`` is inclusive, ``updated_before`` exclusive. ``limit`` 0 means no
    limit. ``after`` pages strictly after a WorkKey taken from the previous page's last
    row in the same order.
    """

    states: frozenset[WorkState] = frozenset()
    scope_id: str = ""
    kind: str = ""
    parent_id: str = ""
    sources: frozenset[str] = frozenset()
    executor: str = ""
    updated_since: Nanos | None = None
    # Added for the dashboards (additive: the defaults filter nothing). Any of these
    # Scopes, ANDed with ``scope_id``; and updated strictly before this instant, so
    # [updated_since, updated_before) is one time bucket of a series.
    scope_ids: frozenset[str] = frozenset()
    updated_before: Nanos | None = None
    # The triage selections (``Work.exhausted``, ``Work.error_group``): only exhausted
    # Work; only Work in this error group.
    exhausted: bool = False
    error_group: str = ""
    order: WorkOrder = WorkOrder.CREATED_DESC
    after: WorkKey | None = None
    limit: int = 0

    def key_of(self, work: Work) -> WorkKey:
        """The cursor for paging after ``work`` in this query's order."""
        return WorkKey(work.updated_at if self.order.by_updated else work.created_at, work.id)


@dataclass(frozen=True, slots=True)
class LeaseKey:
    """Keyset cursor of an ExecutionQuery page in lease order (``by_lease``): the last
    row's lease expiry and ID."""

    lease_expires_at: Nanos
    id: str


@dataclass(frozen=True, slots=True)
class ExecutionKey:
    """Keyset cursor of an ExecutionQuery page: the last row's first claim and ID."""

    started_at: Nanos
    id: str


@dataclass(frozen=True, slots=True)
class ExecutionQuery:
    """Selects attempts (the console's Executions page). Empty fields do not filter;
    filters combine with AND. ``states``: any of these; ``kinds`` and ``scope_ids``:
    of the attempt's Work (None: any Scope; "" stands for "no Scope");
    ``work_id_prefix``: its Work's ID starts with exactly these characters;
    ``expired``: only live attempts whose lease has expired at the transaction's now
    (expiry is exclusive: ``lease_expires_at <= now``); ``expiring_by``: only running
    attempts whose lease has not expired at now and expires by then
    (``now < lease_expires_at <= expiring_by``).

    Order: the most recently first claimed first (``started_at`` descending, then ID
    descending); attempts never claimed (``started_at`` 0) come last. ``after`` pages
    strictly after a key taken from the previous page's last row (``key_of``);
    ``limit`` 0 means no limit. ``by_lease``: running attempts only, the soonest lease
    expiry first (``lease_expires_at`` then ID, ascending: an expired lease before a
    live one), paged by ``after_lease`` (``lease_key_of``) instead of ``after``.
    """

    states: frozenset[ExecutionState] = frozenset()
    kinds: frozenset[str] = frozenset()
    scope_ids: frozenset[str] | None = None
    work_id_prefix: str = ""
    expired: bool = False
    expiring_by: Nanos | None = None
    by_lease: bool = False
    after: ExecutionKey | None = None
    after_lease: LeaseKey | None = None
    limit: int = 0

    @staticmethod
    def key_of(execution: Execution) -> ExecutionKey:
        return ExecutionKey(execution.started_at, execution.id)

    @staticmethod
    def lease_key_of(execution: Execution) -> LeaseKey:
        return LeaseKey(execution.lease_expires_at, execution.id)


@dataclass(frozen=True, slots=True)
class TimerKey:
    """Keyset cursor of a TimerQuery page: a row's fire time and ID."""

    fire_at: Nanos
    id: str


@dataclass(frozen=True, slots=True)
class TimerQuery:
    """Selects Timers (the console's Timers page; meaning: storage/meaning/pages.py).

    Order: ``fire_at`` then ID, both ascending (the earliest, most overdue, first).
    ``due_by``: only Timers with ``fire_at <= due_by`` (None: every Timer). ``after``
    keeps the rows strictly after that key and returns the first ``limit``;
    ``before`` keeps the rows strictly before it and returns the last ``limit`` (the
    page before a page), still in ascending order; at most one of them. ``limit`` 0
    means no limit. ``scope_ids``: only Timers whose Work is in one of these Scopes
    ("" for Work without a Scope and for a Timer serving no Work), as the dashboards'
    ``overdue_timers`` selects them (None: every Timer; empty: none). ``kinds``: only
    Timers whose Work's kind is one of these ("" for a Timer serving no Work; None:
    every Timer; empty: none).
    """

    due_by: Nanos | None = None
    after: TimerKey | None = None
    before: TimerKey | None = None
    limit: int = 0
    scope_ids: frozenset[str] | None = None
    kinds: frozenset[str] | None = None

    @staticmethod
    def key_of(timer: Timer) -> TimerKey:
        return TimerKey(timer.fire_at, timer.id)


@dataclass(frozen=True, slots=True)
class WaitKey:
    """Keyset cursor of an ActiveWaitQuery page: a row's creation time and ID."""

    created_at: Nanos
    id: str


@dataclass(frozen=True, slots=True)
class ActiveWaitQuery:
    """Selects active Waits (the console's Waits page; meaning:
    storage/meaning/pages.py).

    Order: ``created_at`` then ID, both ascending (waiting longest first).
    ``created_by``: only Waits created at or before that instant (None: every active
    Wait). ``after``, ``before`` and ``limit`` page as in ``TimerQuery``.
    """

    created_by: Nanos | None = None
    after: WaitKey | None = None
    before: WaitKey | None = None
    limit: int = 0

    @staticmethod
    def key_of(wait: Wait) -> WaitKey:
        return WaitKey(wait.created_at, wait.id)


@dataclass(frozen=True, slots=True)
class WorkFacets:
    """Counts per value of each facet dimension, under the query's full filter, so each
    dimension's counts sum to ``count_works`` for the same query. A Work without a
    scope or executor counts under ""."""

    state: Mapping[str, int]
    kind: Mapping[str, int]
    source: Mapping[str, int]
    scope: Mapping[str, int]
    executor: Mapping[str, int]
    # How many of the query's Work are exhausted, and the Work per error group (a Work
    # whose latest attempt did not fail counts under "").
    exhausted: int = 0
    error_group: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ErrorGroup:
    """Failed or exhausted Work sharing one error group (``Work.error_group``): how
    many, how many of each kind and of each of the two states, and the first and last
    update time among them (when they failed or went idle)."""

    key: str
    count: int
    kinds: Mapping[str, int]
    failed: int
    exhausted: int
    first_seen: Nanos
    last_seen: Nanos


# The most buckets one series read may ask for: a chart's worth, never a table scan
# split into thousands of statements.
MAX_BUCKETS = 200


@dataclass(frozen=True, slots=True)
class Buckets:
    """The time axis of a series: ``count`` adjacent buckets of ``width`` nanoseconds
    from ``start``; bucket i is [start + i*width, start + (i+1)*width), so each instant
    falls in at most one bucket and [start, end) in exactly one."""

    start: Nanos
    width: Nanos
    count: int

    @property
    def end(self) -> Nanos:
        return self.start + self.width * self.count

    def bounds(self, i: int) -> tuple[Nanos, Nanos]:
        """Bucket i as [low, high)."""
        low = self.start + i * self.width
        return low, low + self.width

    def index(self, t: Nanos) -> int | None:
        """The bucket ``t`` falls in, None outside [start, end)."""
        if t < self.start or t >= self.end:
            return None
        return (t - self.start) // self.width


class CancelToken:
    """Python's stand-in for a cancelled context: ``transact`` checks it before commit."""

    __slots__ = ("_cancelled",)

    def __init__(self) -> None:
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled


@dataclass(frozen=True, slots=True)
class Guard:
    """Authority and admission of one transaction.

    ``lease`` None is trusted control-plane authority. ``clock`` overrides the store's
    clock (tests inject one); ``Guard.now`` is ``max(clock(), last committed now)``
    taken after the write lock is held. ``deadline`` is a ``time.monotonic()`` instant
    and ``cancel`` a token; either aborts the transaction before commit.
    """

    lease: LeaseRef | None = None
    clock: Callable[[], Nanos] | None = None
    deadline: float | None = None
    cancel: CancelToken | None = None

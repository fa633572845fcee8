"""A simulated runtime: drives the store exactly as a runtime would, only through the
public storage API, so the console has live, realistic activity to show.

One ``tick()`` does, in order, what a runtime's loops do: accept external deliveries
(the acceptance checkpoint), fire due timers, route unrouted Events to Work (the
processing checkpoint, which also wakes Waits), apply operators' manual Events
(``storage.ops.manual``), claim pending and recover expired attempts, and advance the
simulated workers that hold leases. Every executor transaction carries its lease in
the Guard, so an operator cancel fences the worker's next write and the worker stops.

Everything random comes from seeded ``random.Random`` streams, IDs included: with a fake
clock and a fresh store a seed always produces the same history. A run counter kept in
KV is mixed into the seed so that a restart never reuses an ID or delivery.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
import zlib
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from storage import (
    Conflict,
    CorrelationKey,
    Event,
    Execution,
    ExecutionState,
    Guard,
    Invalid,
    LeaseRef,
    Nanos,
    NotFound,
    Payload,
    StorageError,
    Store,
    StoredEvent,
    Timer,
    TimerNext,
    Tx,
    Unavailable,
    Wait,
    WaitState,
    Work,
    WorkState,
    seconds,
    view,
    wakes,
    wall_clock,
)
from storage.artifacts import FileArtifactStore
from storage.default import run_store_for
from storage.ops import manual
from storage.ops.run_record_sessions import RunStore

from . import catalog, steps, teammate
from .catalog import FLOW_BY_OPENER, Flow
from .graphruns import GraphRunner
from .routed.supervisor import for_simulator
from .workers import Worker, Workers

log = logging.getLogger("demo.simulate")
T = TypeVar("T")

# 2026-01-01T00:00:00Z: where a fake clock starts on a fresh store.
FAKE_EPOCH: Nanos = 1_767_225_600 * 1_000_000_000
KV_NAMESPACE = "demo.simulate"

# Per-tick caps keep one tick short whatever the backlog.
ROUTE_LIMIT = 80
TIMER_LIMIT = 30
CLAIM_LIMIT = 16
# Capacity: attempts held at once. Beyond it pending attempts queue (Work ready,
# attempt pending), as they do in a busy runtime.
MAX_WORKERS = 40
# Unrouted Events (of any source) the manual-Event recovery pass looks at per tick.
MANUAL_SCAN = 500


@dataclass(frozen=True)
class Outgoing:
    """An external delivery waiting to be sent, and the Scope it is accepted into."""

    event: Event
    scope: str


@dataclass
class Simulator:
    store: Store
    artifacts: FileArtifactStore
    seed: int = 1
    fake_clock: bool = True
    rate: float = 2.0  # ticks per (simulated) second
    burst: int = 40  # new objectives on the first tick
    steady: float = 0.4  # mean new objectives per tick afterwards
    stats: Counter[str] = field(default_factory=Counter)
    runs: RunStore | None = None  # graph runs' Sessions; by default over ``store``
    routed_dir: Path | None = None  # routed runs' state root; None: no routed runs
    routed: object = None  # a RoutedStore; by default over ``store``, on this clock

    def __post_init__(self) -> None:
        self.virtual: Nanos = FAKE_EPOCH
        self.ticks = 0
        self.outbox: list[Outgoing] = []
        self.follow_ups: list[tuple[Nanos, Outgoing]] = []
        self.recent: deque[Outgoing] = deque(maxlen=200)
        self.skipped: set[str] = set()  # Events routing refused; retried never
        self._claim_pause = 0  # ticks to skip the claim scan (wall clock only)
        self.run = self._setup()
        # Separate streams: drawing an ID never shifts a behavioural choice.
        # Seeded pseudo-randomness is the point here: a simulation, not security.
        self.rng = random.Random(f"simulate/{self.seed}/{self.run}/behaviour")  # noqa: S311
        self.id_rng = random.Random(f"simulate/{self.seed}/{self.run}/ids")  # noqa: S311
        self.owner = f"sim-{self.seed}.{self.run}"
        self.workers = Workers(self, self.artifacts)
        self.graphs = GraphRunner(self._run_store(), self.seed, self.run, self.stats)
        self.supervisor = None if self.routed_dir is None else for_simulator(self)

    # -- clock and transactions -------------------------------------------------
    def now(self) -> Nanos:
        """The simulator's idea of now: its virtual clock, or the host's."""
        return self.virtual if self.fake_clock else wall_clock()

    def guard(self, lease: LeaseRef | None = None) -> Guard:
        return Guard(lease=lease, clock=(lambda: self.virtual) if self.fake_clock else None)

    def transact(self, what: str, fn: Callable[[Tx], T], lease: LeaseRef | None = None) -> T:
        """One transaction. Guard.now never goes back, so a fake clock follows it
        forward when another process (an operator, a second simulator) is ahead."""

        def body(tx: Tx) -> T:
            self.virtual = max(self.virtual, tx.now)
            return fn(tx)

        return self.store.transact(self.guard(lease), body)

    def read(self, fn: Callable[[Tx], T]) -> T:
        return view(self.store, self.now(), fn)

    def _run_store(self) -> RunStore:
        if self.runs is not None:
            return self.runs
        # One save at the host's time would pull this simulator's clock there (Guard.now
        # never decreases) and its history would stop following the seed: with a fake
        # clock, the Sessions save on it too.
        return run_store_for(self.store, clock=(lambda: self.virtual) if self.fake_clock else None)

    def close(self) -> None:
        """Let go of any run Session still held."""
        self.graphs.close()

    def new_id(self) -> str:
        return str(uuid.UUID(int=self.id_rng.getrandbits(128), version=4))

    def token(self, n: int = 10) -> str:
        return f"{self.id_rng.getrandbits(4 * n):0{n}x}"

    def _setup(self) -> int:
        """Scopes and the recurring schedule timer (if absent) and this run's number."""

        def fn(tx: Tx) -> int:
            catalog.ensure_scopes(tx)
            run = catalog.next_run(tx, KV_NAMESPACE)
            try:
                tx.timer(catalog.SCHEDULE_TIMER)
            except NotFound:
                fire_at = tx.now + seconds(10)
                tx.put_timer(
                    Timer(
                        id=catalog.SCHEDULE_TIMER,
                        fire_at=fire_at,
                        template=self._schedule_event(fire_at),
                        purpose="schedule",
                    )
                )
            return run

        return self.transact("setup", fn)

    @staticmethod
    def _schedule_event(fire_at: Nanos) -> Event:
        slot = f"report.nightly/{fire_at}"
        # The ID is derived from the slot, so every simulator arms the same template.
        event_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"conduit-demo:{slot}"))
        return Event(
            id=event_id,
            source="cron",
            delivery_id=slot,
            type="cron.fired",
            keys=(CorrelationKey("cron", slot),),
            payload=Payload("demo.schedule", json.dumps({"schedule": "*/30s"}).encode()),
        )

    # -- the tick -----------------------------------------------------------------
    def tick(self) -> Counter[str]:
        """One round of runtime work; returns what it did."""
        before = Counter(self.stats)
        if self.fake_clock and self.ticks:
            self.virtual += seconds(1 / self.rate)
        self.ticks += 1
        self._ingest()
        self._fire_timers()
        self._route()
        self._apply_manual_events()
        if self.ticks % catalog.TIDY_EVERY_TICKS == 0:
            teammate.tidy_exhausted(self)
        self._claim()
        self.workers.advance()
        self.graphs.tick(self.ticks)
        if self.supervisor is not None:
            self.supervisor.tick(self.now())
        done = Counter(self.stats)
        done.subtract(before)
        return +done

    def summary(self, done: Counter[str]) -> str:
        parts = [f"{k}={v}" for k, v in sorted(done.items())]
        return f"tick {self.ticks}: {' '.join(parts) or 'idle'}; holding {len(self.workers)}"

    # -- ingress --------------------------------------------------------------------
    def _objective(self, flow: Flow) -> Outgoing:
        external = f"{flow.key_prefix}{self.token()}"
        event = steps.opening_event(self, self.rng, flow, external)
        key = event.keys[0]
        if flow.follow_up and self.rng.random() < flow.follow_up:
            wake = flow.wake_types[0]
            if len(flow.wake_types) > 1 and self.rng.random() < 0.2:
                wake = flow.wake_types[1]
            later = Event(
                id=self.new_id(),
                source=flow.source,
                delivery_id=f"dlv_{self.token(16)}",
                type=wake,
                keys=(key,),
                payload=Payload("demo.update", json.dumps({"id": external}).encode()),
            )
            due = self.now() + seconds(self.rng.uniform(5, 30))
            self.follow_ups.append((due, Outgoing(later, flow.scope)))
        return Outgoing(event, flow.scope)

    def _ingest(self) -> None:
        rng = self.rng
        count = self.burst if self.ticks == 1 else _poisson(rng, self.steady)
        out = self.outbox
        for _ in range(count):
            flows = catalog.EXTERNAL_FLOWS
            out.append(self._objective(rng.choices(flows, [f.weight for f in flows])[0]))
        if self.ticks == 1 and self.run == 1:  # a fresh store: see catalog.POISON_AT_START
            flow = catalog.FLOW_BY_KIND[catalog.POISON_KIND]
            for _ in range(catalog.POISON_AT_START):
                external = f"{flow.key_prefix}{self.token()}"
                out.append(Outgoing(steps.poison_event(self, flow, external), flow.scope))
        now = self.now()
        due = [o for t, o in self.follow_ups if t <= now]
        self.follow_ups = [(t, o) for t, o in self.follow_ups if t > now]
        out.extend(due)
        if rng.random() < 0.12:
            source, type_ = rng.choice(catalog.NOISE)
            ping = steps.noise_event(self, source, type_)
            out.append(Outgoing(ping, "acme"))
        if rng.random() < 0.08:  # an update for a charge this runtime never saw
            stray = steps.stray_charge(self, f"ch_{self.token()}")
            out.append(Outgoing(stray, "acme/billing"))
        # Senders retry: the same delivery again, under a new internal ID.
        if self.recent and rng.random() < 0.25:
            again = rng.choice(self.recent)
            out.append(replace(again, event=replace(again.event, id=self.new_id())))
        if not out:
            return

        def fn(tx: Tx) -> tuple[int, int]:
            added = duplicates = 0
            for o in out:
                stored, new = tx.accept_event(o.event)
                if new:
                    tx.set_event_scope(stored.id, o.scope)
                    added += 1
                else:
                    duplicates += 1
            return added, duplicates

        try:
            added, duplicates = self.transact("ingest", fn)
        except StorageError as exc:
            # Nothing was acknowledged: the senders deliver the same batch again next
            # tick. A Conflict means an internal ID is taken (the deliveries are not:
            # those would be duplicates), so the retry carries fresh internal IDs.
            if isinstance(exc, Conflict):
                self.outbox = [replace(o, event=replace(o.event, id=self.new_id())) for o in out]
            self.failed("ingest", exc)
            return
        self.stats["accepted"] += added
        self.stats["duplicates"] += duplicates
        self.recent.extend(o for o in out if o.event.source != catalog.TIMER_SOURCE)
        self.outbox = []

    # -- timers ---------------------------------------------------------------------
    def _fire_timers(self) -> None:
        due = self.read(lambda tx: tx.due_timers(self.now(), limit=TIMER_LIMIT))
        for timer in due:
            try:
                purpose = self.transact("fire", lambda tx, t=timer: self._fire_one(tx, t.id))
            except StorageError as exc:
                self.failed(f"fire timer {timer.id}", exc)
                continue
            if purpose is not None:
                self.stats[f"fired_{purpose or 'timer'}"] += 1

    def _fire_one(self, tx: Tx, timer_id: str) -> str | None:
        """Fire one due timer and apply what it means, in one transaction."""
        try:
            timer = tx.timer(timer_id)
        except NotFound:
            return None  # another runtime fired or an operator removed it
        if timer.fire_at > tx.now:
            return None
        if timer.purpose == "schedule":
            period = seconds(catalog.SCHEDULE_PERIOD_SECONDS)
            # Missed slots are skipped (the schedule's policy), never fired in a burst.
            next_at = timer.fire_at + period
            while next_at <= tx.now:
                next_at += period
            nxt = TimerNext(next_at, self._schedule_event(next_at))
            stored = tx.fire_timer(timer.id, timer.revision, nxt)
            tx.set_event_scope(stored.id, catalog.SCHEDULE_SCOPE)
            return timer.purpose
        stored = tx.fire_timer(timer.id, timer.revision)
        work: Work | None = None
        if timer.work_id:
            work = tx.work(timer.work_id)
            if work.scope_id:
                tx.set_event_scope(stored.id, work.scope_id)
        if work is None or work.terminal:
            tx.mark_routed(stored.id, work.id if work else "", "dropped")
            return timer.purpose
        if timer.purpose == "retry":
            if tx.live_executions(work.id):
                tx.mark_routed(stored.id, work.id, "dropped")
                return timer.purpose
            last = max(tx.executions(work.id), key=lambda x: x.attempt)
            steps.next_attempt(tx, self, last)
        elif timer.purpose == "timeout":
            self._time_out(tx, work, timer)
        tx.mark_routed(stored.id, work.id, "routed")
        return timer.purpose

    def _time_out(self, tx: Tx, work: Work, timer: Timer) -> None:
        """The timeout won the race: cancel the Wait, fail the parked attempt and apply
        the retry policy, all in the firing transaction."""
        waits = [w for w in tx.active_waits(work.id) if w.timeout_timer_id == timer.id]
        for wait in waits:
            tx.put_wait(replace(wait, state=WaitState.CANCELLED))
            x = tx.execution(wait.execution_id)
            if x.state is ExecutionState.PARKED:
                steps.fail_attempt(tx, x, "timed out waiting for an event")
        if waits and tx.work(work.id).state is WorkState.WAITING:
            self.after_failure(tx, work.id, timer.template.causation_id)

    def after_failure(self, tx: Tx, work_id: str, cause: str) -> None:
        """Retry policy: Work back to ready with a backoff timer while automatic
        retries remain, else ready with no timer (exhausted: an operator's call)."""
        work = tx.work(work_id)
        # Failures: failed attempts, and timed-out Waits of attempts that ended waiting
        # (an executor without resume has no attempt left to fail).
        xs = {x.id: x for x in tx.executions(work_id)}
        failures = sum(x.state is ExecutionState.FAILED for x in xs.values()) + sum(
            w.state is WaitState.CANCELLED and xs[w.execution_id].state is ExecutionState.WAITING
            for w in tx.waits(work_id)
        )
        if work.state is not WorkState.READY:
            tx.put_work(replace(work, state=WorkState.READY))
        if failures >= catalog.MAX_FAILURES:
            self.stats["exhausted"] += 1
            return
        backoff = catalog.BACKOFF_SECONDS * 2 ** (failures - 1)
        fire_at = tx.now + seconds(backoff * self.rng.uniform(1.0, 1.5))
        steps.retry_timer(tx, self, work_id, cause, fire_at)

    # -- routing --------------------------------------------------------------------
    def _route(self) -> None:
        after, handled = 0, 0
        while handled < ROUTE_LIMIT:
            page = self.read(lambda tx, a=after: tx.unrouted_events(after=a, limit=ROUTE_LIMIT))
            if not page:
                return
            after = page[-1].sequence
            for stored in page:
                if stored.event.source in catalog.MANUAL_SOURCES or stored.id in self.skipped:
                    continue  # manual Events are storage.ops.manual's to apply
                handled += 1
                self._route_event(stored)

    def _route_event(self, stored: StoredEvent) -> None:
        try:
            worker = self.transact("route", lambda tx: self._route_one(tx, stored.id))
        except StorageError as exc:
            # Conflict and Unavailable are retried next tick from reread state; any
            # other refusal would repeat forever, so that Event is left for operators.
            if not isinstance(exc, Conflict | Unavailable):
                self.skipped.add(stored.id)
            self.failed(f"route {stored.id}", exc)
            return
        if worker is not None:
            self.workers.hold(worker)

    def _route_one(self, tx: Tx, event_id: str) -> Worker | None:
        """The processing checkpoint: route effects and mark_routed in one transaction."""
        stored = tx.event(event_id)
        if stored.routed:
            return None  # another runtime got there first
        event = stored.event
        target = self._target(tx, event)
        if target is None:
            flow = FLOW_BY_OPENER.get(event.type)
            if flow is None or not event.keys:
                kind = "dropped" if (event.source, event.type) in catalog.NOISE else "unmatched"
                tx.mark_routed(event.id, "", kind)
                self.stats[kind] += 1
                return None
            work = self._create_work(tx, flow, stored)
            tx.mark_routed(event.id, work.id, "routed")
            self.stats["routed"] += 1
            return None
        if target.terminal:
            tx.mark_routed(event.id, target.id, "dropped")
            self.stats["dropped"] += 1
            return None
        tx.mark_routed(event.id, target.id, "routed")
        self.stats["routed"] += 1
        for wait in tx.active_waits(target.id):
            if wakes(wait, stored):
                return self._wake(tx, wait, stored)
        return None

    @staticmethod
    def _target(tx: Tx, event: Event) -> Work | None:
        if event.work_id:
            try:
                return tx.work(event.work_id)
            except NotFound:
                return None
        for key in event.keys:
            try:
                return tx.work_by_key(key)
            except NotFound:
                continue
        return None

    def _create_work(self, tx: Tx, flow: Flow, stored: StoredEvent) -> Work:
        """New Work for an opening Event, with its first attempt pending."""
        event = stored.event
        parent = ""
        if flow.child and event.payload is not None:
            parent = json.loads(event.payload.data).get("parent", "")
        work, _ = steps.open_work(tx, self, flow, event.keys[:1], event.payload, parent)
        self.stats["created"] += 1
        return work

    def _wake(self, tx: Tx, wait: Wait, stored: StoredEvent) -> Worker | None:
        """The Event won the race: Wait woken by it, timeout removed, attempt resumed
        (or attempt N+1 after a terminal waiting outcome), all in one transaction."""
        tx.put_wait(replace(wait, state=WaitState.WOKEN, woken_by=stored.id))
        if wait.timeout_timer_id:
            try:
                timer = tx.timer(wait.timeout_timer_id)
                tx.delete_timer(timer.id, timer.revision)
            except NotFound:
                pass  # the timeout already fired; the wake still wins this Wait
        x = tx.execution(wait.execution_id)
        if x.state is ExecutionState.WAITING:
            x = steps.next_attempt(tx, self, x)
        elif x.state is not ExecutionState.PARKED:
            return None
        self.stats["woken"] += 1
        phase = "resumed_failed" if stored.event.type.endswith(".failed") else "resumed"
        return self._claim_one(tx, x, stored.id, phase)

    # -- claims and recovery --------------------------------------------------------
    def _claim_one(self, tx: Tx, x: Execution, trigger: str, phase: str) -> Worker:
        claimed = tx.claim(x.id, self.owner, tx.now + seconds(catalog.LEASE_SECONDS))
        work = tx.work(x.work_id)
        poison = catalog.poison_failure(work.context.data) if work.context else ""
        return Worker(
            execution_id=x.id,
            work_id=x.work_id,
            kind=work.kind,
            attempt=x.attempt,
            lease=LeaseRef(x.id, claimed.owner, claimed.epoch),
            trigger=trigger,
            # A poisoned Work fails fast on every attempt, without a behavioural draw.
            plan=["work", "fail"] if poison else catalog.plan_for(work.kind, phase, self.rng),
            next_at=tx.now + seconds(self.rng.uniform(0.5, 3)),
            failure=poison,
        )

    def _claim(self) -> None:
        """Claim pending attempts (new, handed off, retried by a timer or an operator)
        and recover running ones whose lease expired, with a higher epoch."""
        room = min(CLAIM_LIMIT, MAX_WORKERS - len(self.workers))
        if room <= 0:
            return
        if self._claim_pause:
            self._claim_pause -= 1
            return
        # Candidates come from a View, so the scan never holds the write lock; the
        # claim transaction rereads each one (another runtime may have taken it).
        started = time.monotonic()
        candidates = self.read(
            lambda tx: [x.id for x in tx.live_executions() if self._claimable(x, tx.now)]
        )
        if not self.fake_clock:
            # live_executions has no limit: on a store with a large live backlog the
            # scan is slow, so scan less often rather than slow every tick down.
            self._claim_pause = min(20, int((time.monotonic() - started) * 10))

        def fn(tx: Tx) -> list[tuple[Worker, bool]]:
            out: list[tuple[Worker, bool]] = []
            for execution_id in candidates:
                if len(out) >= room:
                    break
                x = tx.execution(execution_id)
                if not self._claimable(x, tx.now):
                    continue
                first = tx.work_events(x.work_id, limit=1)
                trigger = first[0].id if first else ""
                try:
                    worker = self._claim_one(tx, x, trigger, "start")
                except (Conflict, Invalid):
                    continue  # its Work just ended: not ours to run
                out.append((worker, x.state is ExecutionState.RUNNING))
            return out

        try:
            claimed = self.transact("claim", fn)
        except StorageError as exc:
            self.failed("claim", exc)
            return
        for worker, recovered in claimed:
            self.stats["recovered" if recovered else "claimed"] += 1
            self.workers.hold(worker)

    def _claimable(self, x: Execution, now: Nanos) -> bool:
        """Pending for a poll interval, or running on an expired or released lease."""
        if x.id in self.workers:
            return False
        if x.state is ExecutionState.PENDING:
            # Each attempt waits its own 3-12 s (derived from its ID, so a run stays
            # deterministic): queued attempts are always there to see.
            return x.created_at + seconds(3 + zlib.crc32(x.id.encode()) % 10) <= now
        return x.state is ExecutionState.RUNNING and (not x.owner or now >= x.lease_expires_at)

    # -- manual events ----------------------------------------------------------------
    def _apply_manual_events(self) -> None:
        """Apply operators' manual Events a crash left unrouted (``storage.ops.manual``
        owns their meaning and the recipe). Bounded: the scan reads unrouted Events of
        every source, once per tick."""
        try:
            applied = manual.apply_manual_events(self.store, max_scan=MANUAL_SCAN)
        except StorageError as exc:
            self.failed("apply manual events", exc)
            return
        self.stats["manual"] += sum(r.done for r in applied)

    def failed(self, what: str, exc: StorageError) -> None:
        """Every storage error ends here, deliberately: counted and logged."""
        name = type(exc).__name__.lower()
        self.stats[f"err_{name}"] += 1
        level = logging.INFO if isinstance(exc, Conflict) else logging.WARNING
        log.log(level, "%s: %s: %s", what, type(exc).__name__, exc)


def _poisson(rng: random.Random, mean: float) -> int:
    """A small Poisson draw (Knuth), for arrivals per tick."""
    limit, k, p = pow(2.718281828459045, -mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1

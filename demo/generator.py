"""Bulk history for the console and the benchmarks, written through the storage API.

``Generator.run()`` writes ``works`` Work spread over the past ``days``, in increasing
time order, ``batch`` Work per transaction. Each transaction runs at its own injected
clock (``Guard(clock=...)``; Guard.now never goes back, so history is written oldest
first) and does two things: it starts a new batch (opening Event accepted with its
Scope, Work created and routed, attempt 1 created and claimed, some parked on Waits)
and finishes the batch before it (completed, failed, retried, exhausted, handed off,
woken, cancelled or left live). So a Work's updated time follows its creation time by
one batch interval, as it would in a real history.

The cost is what the API costs per operation: every operation rereads what it checks,
so the generator keeps what it knows in memory and never rereads a record itself (it
carries the returned revisions forward instead).
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from storage import (
    ArtifactRef,
    CorrelationKey,
    Event,
    Execution,
    ExecutionState,
    Guard,
    Nanos,
    Outcome,
    OutcomeKind,
    Payload,
    Store,
    Timer,
    Tx,
    Wait,
    WaitState,
    Work,
    WorkState,
    seconds,
    wall_clock,
)
from storage.artifacts import FileArtifactStore
from storage.ops.control import cancel_work
from storage.ops.manual import prefetch

from . import catalog, steps
from .catalog import FLOW_BY_KIND, Flow

KV_NAMESPACE = "demo.generate"
# The version (4) and variant (RFC 4122) bits that uuid.UUID(version=4) sets.
_UUID4_KEEP = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_UUID4_SET = (4 << 76) | (0x8000 << 48)
LEASE: Nanos = seconds(catalog.LEASE_SECONDS)

# What becomes of a Work, weighted for old history and for the most recent slice
# (RECENT of the timeline), where the live states concentrate as they do in a real
# store: old Work has mostly finished.
RECENT = 0.05
FATES: dict[str, tuple[float, float]] = {
    "completed": (66, 25),
    "completed_retried": (8, 4),
    "completed_woken": (8, 6),
    "failed": (4, 3),
    "cancelled": (4, 4),
    "retrying": (1, 8),
    "exhausted": (2, 5),
    "pending": (0.5, 10),
    "running": (0.5, 15),
    "waiting": (1, 15),
}
LIVE_FATES = frozenset({"retrying", "exhausted", "pending", "running", "waiting"})
# The realistic profile (``--realistic``, the benchmarks' seed; issue 22): about 1% of
# the Work live (old history has all but finished; the live states sit in the newest
# 1%), about 2.5 attempts per Work (a retried Work fails 2 to 5 times before it
# succeeds) and about 6 Events per Work (the source's updates routed to the Work).
REALISTIC_RECENT = 0.01
REALISTIC_FATES: dict[str, tuple[float, float]] = {
    "completed": (35, 20),
    "completed_retried": (55, 10),
    "completed_woken": (5, 5),
    "failed": (3, 3),
    "cancelled": (1.5, 4),
    "retrying": (0.05, 8),
    "exhausted": (0.3, 5),
    "pending": (0.02, 10),
    "running": (0.03, 15),
    "waiting": (0.1, 20),
}
REALISTIC_RETRIES = (2, 5)  # failed attempts before a retried Work succeeds
REALISTIC_UPDATES = (3, 6)  # the source's update Events per finished Work
WAKE_FLOWS = frozenset({"billing.charge", "support.ticket", "deploy.service"})


@dataclass
class Plan:
    """One generated Work between its two transactions."""

    work: Work
    flow: Flow
    fate: str
    x: Execution
    opened_by: str  # the opening Event (causation of what follows)
    wait: Wait | None = None
    timer: Timer | None = None
    wake_event: str = ""  # a child's finished Event that wakes a deploy.service
    parent: Plan | None = None


@dataclass
class GenerateResult:
    works: int
    events: int
    seconds: float
    states: Counter[str] = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        return self.works / self.seconds if self.seconds else 0.0


@dataclass
class Generator:
    store: Store
    works: int
    seed: int = 1
    batch: int = 2000
    days: float = 21.0
    artifacts: FileArtifactStore | None = None
    progress: Callable[[int, int, float], None] | None = None
    end: Nanos = 0  # the newest history time (default: ten minutes ago)
    realistic: bool = False  # the REALISTIC_* profile rather than the demo's mix

    def __post_init__(self) -> None:
        self.made = 0
        self.events = 0
        self.states: Counter[str] = Counter()
        self.refs: list[ArtifactRef] = []

    # -- helpers ----------------------------------------------------------------------
    def new_id(self) -> str:
        """``str(uuid.UUID(int=bits, version=4))``, formatted directly (a few IDs per
        Work, and building the UUID object costs most of the ID)."""
        h = f"{self.ids.getrandbits(128) & _UUID4_KEEP | _UUID4_SET:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def token(self, n: int = 12) -> str:
        return f"{self.ids.getrandbits(4 * n):0{n}x}"

    def accept(self, tx: Tx, event: Event, scope: str) -> str:
        stored, added = tx.accept_event(event)
        if added:
            tx.set_event_scope(stored.id, scope)
        self.events += 1
        return stored.id

    def artifacts_for(self) -> tuple[ArtifactRef, ...]:
        """A shared published artifact for about a third of finished attempts: bytes
        are published once, references may be attached any number of times."""
        if not self.refs or self.rng.random() > 0.3:
            return ()
        return (self.rng.choice(self.refs),)

    # -- the run ----------------------------------------------------------------------
    def run(self) -> GenerateResult:
        started = time.perf_counter()
        end = self.end or wall_clock() - seconds(600)
        start = end - seconds(self.days * 86_400)
        batches = max(1, -(-self.works // self.batch))
        step = (end - start) // (batches + 1)

        def setup(tx: Tx) -> int:
            catalog.ensure_scopes(tx)
            return catalog.next_run(tx, KV_NAMESPACE)

        run = self.store.transact(Guard(clock=lambda: start), setup)
        # Seeded pseudo-randomness is the point here: a simulation, not security.
        self.rng = random.Random(f"generate/{self.seed}/{run}/behaviour")  # noqa: S311
        self.ids = random.Random(f"generate/{self.seed}/{run}/ids")  # noqa: S311
        self.owner = f"gen-{self.seed}.{run}"
        if self.artifacts is not None:
            self.refs = _publish_samples(self.artifacts, self.rng)

        carry: list[Plan] = []
        for i in range(batches + 1):
            at = start + (i + 1) * step
            size = min(self.batch, self.works - self.made)
            carry = self.store.transact(
                Guard(clock=lambda at=at: at),
                lambda tx, c=carry, n=size: self._batch(tx, c, n),
            )
            if self.progress is not None:
                self.progress(self.made, self.works, time.perf_counter() - started)
        return GenerateResult(self.made, self.events, time.perf_counter() - started, self.states)

    def _batch(self, tx: Tx, previous: list[Plan], size: int) -> list[Plan]:
        # The Work the last batch opened, with their attempts and Timers, in one set
        # read each, as a bulk action reads its batch: finishing them then reads
        # nothing Work by Work (a round trip apiece on PostgreSQL).
        prefetch(tx, [plan.work.id for plan in previous], attempts=True)
        # Children first, so a parent's wake can use its child's finished Event.
        for plan in sorted(previous, key=lambda p: p.parent is None):
            self._finish(tx, plan)
        plans: list[Plan] = []
        table = REALISTIC_FATES if self.realistic else FATES
        fates = list(table)
        old, new = ([table[f][i] for f in fates] for i in (0, 1))
        flows = catalog.EXTERNAL_FLOWS
        recent_from = self.works * (1 - (REALISTIC_RECENT if self.realistic else RECENT))
        while len(plans) < size:
            flow = self.rng.choices(flows, [f.weight for f in flows])
            weights = new if self.made + len(plans) >= recent_from else old
            fate = self.rng.choices(fates, weights)[0]
            plans.extend(self._start(tx, flow[0], fate, size - len(plans)))
        if self.rng.random() < 0.5:
            self._noise(tx)
        self.made += len(plans)
        return plans

    # -- starting a Work --------------------------------------------------------------
    def _start(self, tx: Tx, flow: Flow, fate: str, room: int) -> list[Plan]:
        opening = steps.opening_event(self, self.rng, flow, f"{flow.key_prefix}{self.token()}")
        opened_by = self.accept(tx, opening, flow.scope)
        if self.rng.random() < 0.04:  # the sender delivered it twice
            self.accept(tx, replace(opening, id=self.new_id()), flow.scope)
        if fate == "completed_woken" and flow.kind not in WAKE_FLOWS:
            fate = "completed"
        plan = self._open_work(tx, flow, fate, opening, opened_by, parent=None)
        plans = [plan]
        if flow.kind == "deploy.service" and fate != "pending" and room > 2:
            plans.extend(self._spawn(tx, plan))
        if fate in ("waiting", "completed_woken"):
            self._park(tx, plan)
        return plans

    def _open_work(
        self, tx: Tx, flow: Flow, fate: str, opening: Event, opened_by: str, parent: Plan | None
    ) -> Plan:
        parent_id = parent.work.id if parent else ""
        work, x = steps.open_work(tx, self, flow, opening.keys, opening.payload, parent_id)
        tx.mark_routed(opened_by, work.id, "routed")
        if fate != "pending" or self.rng.random() < 0.5:
            x = tx.claim(x.id, self.owner, tx.now + LEASE)
            work = replace(work, state=WorkState.RUNNING, revision=work.revision + 1)
        return Plan(work, flow, fate, x, opened_by, parent=parent)

    def _spawn(self, tx: Tx, parent: Plan) -> list[Plan]:
        """deploy.service derives one request Event per step; each opens a child Work."""
        flow = FLOW_BY_KIND["deploy.step"]
        children = []
        for step in self.rng.sample(catalog.CHILD_STEPS, 2):
            key = CorrelationKey(flow.source, f"{parent.work.keys[0].external_id}/{step}")
            body = {"parent": parent.work.id}
            request = steps.derived_event(
                self, flow.scope, flow.opens, body, parent.opened_by, keys=(key,)
            )
            opened_by = self.accept(tx, request, flow.scope)
            fate = self.rng.choices(("completed", "failed", "running"), (85, 10, 5))[0]
            if parent.fate == "waiting":
                fate = "running"  # no step has finished: nothing could wake the parent
            children.append(self._open_work(tx, flow, fate, request, opened_by, parent))
        return children

    def _park(self, tx: Tx, plan: Plan) -> None:
        parked = steps.park(
            tx,
            self,
            plan.work,
            plan.x,
            cause=plan.opened_by,
            fire_at=tx.now + seconds(self.rng.uniform(3_600, 3 * 86_400)),
            after_sequence=tx.latest_sequence(),
            resumable=plan.flow.resumes,
        )
        plan.x, plan.work, plan.wait, plan.timer = (
            parked.execution,
            parked.work,
            parked.wait,
            parked.timer,
        )

    def _noise(self, tx: Tx) -> None:
        source, type_ = self.rng.choice(catalog.NOISE)
        event = steps.noise_event(self, source, type_)
        tx.mark_routed(self.accept(tx, event, "acme"), "", "dropped")
        stray = steps.stray_charge(self, f"ch_{self.token()}")
        tx.mark_routed(self.accept(tx, stray, "acme/billing"), "", "unmatched")

    # -- finishing a Work -------------------------------------------------------------
    def _finish(self, tx: Tx, p: Plan) -> None:
        fate = p.fate
        if fate == "completed_woken":
            fate = self._wake(tx, p)
        if fate == "completed":
            self._complete(tx, p)
        elif fate == "completed_retried":
            for _ in range(self.rng.randint(*REALISTIC_RETRIES) if self.realistic else 1):
                self._fail_attempt(tx, p)
                self._next_attempt(tx, p, claim=True)
            self._complete(tx, p)
        elif fate == "failed":
            self._fail_attempt(tx, p, then=WorkState.FAILED)
        elif fate == "cancelled":
            p.work = cancel_work(tx, p.work.id).work
        elif fate == "retrying":
            self._fail_attempt(tx, p)
            self._retry_timer(tx, p)
        elif fate == "exhausted":
            for n in range(catalog.MAX_FAILURES):
                if n:
                    self._next_attempt(tx, p, claim=True)
                self._fail_attempt(tx, p)
        elif fate == "pending" and p.x.state is ExecutionState.RUNNING:
            handoff = Outcome(OutcomeKind.HANDOFF, "continuing on a larger worker")
            tx.put_execution(replace(p.x, state=ExecutionState.HANDOFF, outcome=handoff))
            p.work = tx.put_work(replace(p.work, state=WorkState.READY))
            self._next_attempt(tx, p, claim=False)
        # "running", "waiting" and an unclaimed "pending" stay as they are.
        if self.realistic and p.work.terminal and p.work.keys:
            self._updates(tx, p)
        self.states[p.work.state.value] += 1

    def _updates(self, tx: Tx, p: Plan) -> None:
        """The source's later updates about a finished Work's object, routed to it."""
        key = p.work.keys[0]
        for n in range(self.rng.randint(*REALISTIC_UPDATES)):
            event = Event(
                id=self.new_id(),
                source=key.source,
                delivery_id=f"dlv_{self.token(16)}",
                type=f"{p.flow.opens.rsplit('.', 1)[0]}.updated",
                keys=(key,),
                payload=Payload(
                    "demo.update", json.dumps({"id": key.external_id, "n": n}).encode()
                ),
            )
            tx.mark_routed(self.accept(tx, event, p.flow.scope), p.work.id, "routed")

    def _wake(self, tx: Tx, p: Plan) -> str:
        """Wake the parked attempt with a new Event: Wait woken, timeout removed,
        attempt claimed again, in this one transaction. Returns the fate left."""
        if p.wait is None or p.timer is None:
            raise ValueError(f"Work {p.work.id} was never parked")
        if p.flow.kind == "deploy.service":
            if not p.wake_event:
                return "waiting"  # no step finished: it goes on waiting
            waker = p.wake_event
        else:
            body = {"id": p.work.keys[0].external_id}
            event = Event(
                id=self.new_id(),
                source=p.flow.source,
                delivery_id=f"dlv_{self.token(16)}",
                type=p.flow.wake_types[0],
                keys=p.work.keys[:1],
                payload=Payload("demo.update", json.dumps(body).encode()),
            )
            waker = self.accept(tx, event, p.flow.scope)
            tx.mark_routed(waker, p.work.id, "routed")
        tx.put_wait(replace(p.wait, state=WaitState.WOKEN, woken_by=waker))
        tx.delete_timer(p.timer.id, p.timer.revision)
        if p.x.state is ExecutionState.WAITING:  # no resume: attempt N+1
            p.x = steps.next_attempt(tx, self, p.x, traced=False)
        p.x = tx.claim(p.x.id, self.owner, tx.now + LEASE)
        p.work = replace(p.work, state=WorkState.RUNNING, revision=p.work.revision + 1)
        return "completed"

    def _complete(self, tx: Tx, p: Plan) -> None:
        p.x, p.work = steps.complete(tx, p.x, p.work, self.artifacts_for())
        parent = p.parent
        if parent is not None:
            finished = steps.derived_event(
                self,
                p.flow.scope,
                "deploy.step.finished",
                {"step": p.work.id},
                p.opened_by,
                work_id=parent.work.id,
            )
            event_id = self.accept(tx, finished, p.flow.scope)
            tx.mark_routed(event_id, parent.work.id, "routed")
            parent.wake_event = parent.wake_event or event_id

    def _fail_attempt(self, tx: Tx, p: Plan, then: WorkState = WorkState.READY) -> None:
        message = self.rng.choice(catalog.FAILURE_MESSAGES)
        p.x = steps.fail_attempt(tx, p.x, message, self.artifacts_for())
        if p.work.state is not then:
            p.work = tx.put_work(replace(p.work, state=then))

    def _next_attempt(self, tx: Tx, p: Plan, claim: bool) -> None:
        x = steps.next_attempt(tx, self, p.x, traced=False)
        if claim:
            x = tx.claim(x.id, self.owner, tx.now + LEASE)
            p.work = replace(p.work, state=WorkState.RUNNING, revision=p.work.revision + 1)
        p.x = x

    def _retry_timer(self, tx: Tx, p: Plan) -> None:
        fire_at = tx.now + seconds(self.rng.uniform(60, 900))
        steps.retry_timer(tx, self, p.work.id, p.opened_by, fire_at)


def _publish_samples(artifacts: FileArtifactStore, rng: random.Random) -> list[ArtifactRef]:
    """A few logs and reports, published once before any transaction."""
    refs = []
    for i in range(8):
        lines = [f"[{n:04d}] step {n}: ok ({rng.randint(2, 900)}ms)" for n in range(20)]
        with artifacts.create("text/plain") as writer:
            writer.write(("\n".join(lines) + "\n").encode())
            refs.append(writer.commit())
        report = {"sample": i, "rows": rng.randint(10, 90_000), "ok": rng.random() > 0.2}
        with artifacts.create("application/json") as writer:
            writer.write(json.dumps(report, indent=2).encode())
            refs.append(writer.commit())
    return refs

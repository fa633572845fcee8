"""The simulator's graph runs: a few runs of ``demo.graphs`` driven through the run
store's Sessions, as a durable-execution runtime would: acquire, load (or start),
advance one step, save with the loaded revision, close.

One run of each graph is in progress at a time; each takes a step every
``SAVE_EVERY`` ticks (staggered, so about one save per tick in all) and a new run of the
same graph starts ``PAUSE`` ticks after one finishes. Every ``BUSY_EVERY`` steps a slow
worker holds one run's Session across a round: the regular step of that run then meets
``Busy`` and skips it (acquire never waits), and the slow worker saves on the next round.

Everything random comes from seeded streams of its own, so adding graph runs changed
nothing the coordination records of a seed look like.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from dataclasses import dataclass

from storage import Busy, Conflict, NotFound, StorageError
from storage.ops.run_record_sessions import RunStore, Session

from . import graphs
from .graphs import Plan

log = logging.getLogger("demo.simulate")

KINDS = ("checkout", "payment", "feed")
SAVE_EVERY = 3  # ticks between two steps of one run
PAUSE = 12  # ticks between a run finishing and the next of its graph starting
BUSY_EVERY = 8  # rounds between two slow workers


@dataclass
class Active:
    run_id: str
    plan: Plan
    start_at: int = 0  # the tick it may take its first step


class GraphRunner:
    def __init__(self, runs: RunStore, seed: int, run: int, stats: Counter[str]) -> None:
        self.runs = runs
        self.stats = stats
        # Seeded pseudo-randomness is the point here: a simulation, not security.
        self.rng = random.Random(f"simulate/{seed}/{run}/graphs")  # noqa: S311
        self.id_rng = random.Random(f"simulate/{seed}/{run}/graph-ids")  # noqa: S311
        self.started: Counter[str] = Counter()
        self.active: dict[str, Active] = {kind: self._plan(kind, 0) for kind in KINDS}
        self.rounds = 0
        self.slow: Session | None = None  # a Session held across one round

    def hex_id(self) -> str:
        """A persistent identity: 16 random bytes as 32 lowercase hex digits."""
        return f"{self.id_rng.getrandbits(128):032x}"

    def _plan(self, kind: str, start_at: int) -> Active:
        n = self.started[kind]
        self.started[kind] += 1
        if kind == "payment":
            # The first payment always retries twice and succeeds; later ones vary,
            # and now and then exhaust the Retry budget (a failed run).
            failures = 2 if n == 0 else self.rng.choice((0, 1, 1, 2, 3))
            plan = Plan(kind, failures=failures)
        elif kind == "feed":
            messages = 7 if n == 0 else self.rng.randint(4, 9)
            plan = Plan(kind, messages=messages, poison=2 if n == 0 else self.rng.randint(0, 4))
        else:
            plan = Plan(kind)
        return Active(f"{kind}/{self.id_rng.getrandbits(48):012x}", plan, start_at)

    def tick(self, tick: int) -> None:
        """The steps due at this tick."""
        for offset, kind in enumerate(KINDS):
            if (tick + offset) % SAVE_EVERY:
                continue
            if offset == 0:
                self._round(tick)
            active = self.active[kind]
            if tick >= active.start_at:
                self._step(kind, active, tick)

    def _round(self, tick: int) -> None:
        """The slow worker of the last round saves and lets go; every BUSY_EVERY
        rounds another one takes a run and holds it."""
        self.rounds += 1
        if self.slow is not None:
            slow, self.slow = self.slow, None
            kind = next(k for k, a in self.active.items() if a.run_id == slow.run_id)
            try:
                with slow:
                    done = self._save_next(slow, self.active[kind])
            except StorageError as exc:
                self._failed(f"run {slow.run_id}", exc)
                done = False
            if done:
                self.active[kind] = self._plan(kind, 0)
        if self.rounds % BUSY_EVERY == 0:
            # Each time another graph first; one pausing between two runs is skipped.
            turn = self.rounds // BUSY_EVERY
            kinds = [KINDS[(turn + i) % len(KINDS)] for i in range(len(KINDS))]
            active = next((a for k in kinds if (a := self.active[k]).start_at <= tick), None)
            if active is None:
                return
            try:
                self.slow = self.runs.acquire(active.run_id)
            except StorageError as exc:
                self._failed("hold", exc)

    def _step(self, kind: str, active: Active, tick: int) -> None:
        try:
            with self.runs.acquire(active.run_id) as session:
                done = self._save_next(session, active)
        except Busy:
            # Another Session owns the run: this worker does not wait for it.
            self.stats["run_busy"] += 1
            return
        except StorageError as exc:
            self._failed(f"run {active.run_id}", exc)
            return
        if done:
            self.active[kind] = self._plan(kind, tick + PAUSE)

    def _save_next(self, session: Session, active: Active) -> bool:
        """Load (or start) the run, save its next step; True when it has none left."""
        try:
            record = session.load()
        except NotFound:
            inputs = {"graph": active.plan.kind, "run": active.run_id}
            record = graphs.new_record(active.run_id, active.plan, inputs, self.hex_id)
        nxt = graphs.advance(record, active.plan, self.rng, self.hex_id)
        if nxt is None:
            failed = not graphs.complete(record)
            self.stats["runs_failed" if failed else "runs_completed"] += 1
            return True
        try:
            session.save(nxt, record.revision)
        except Conflict as exc:
            # Someone else saved this revision: the record on disk is the authority;
            # the next step reloads it.
            self._failed(f"save {active.run_id}", exc)
            return False
        self.stats["run_saves"] += 1
        if record.revision == 0:
            self.stats["runs_started"] += 1
        return False

    def close(self) -> None:
        if self.slow is not None:
            self.slow.close()
            self.slow = None

    def _failed(self, what: str, exc: StorageError) -> None:
        self.stats[f"err_{type(exc).__name__.lower()}"] += 1
        level = logging.INFO if isinstance(exc, Conflict) else logging.WARNING
        log.log(level, "%s: %s: %s", what, type(exc).__name__, exc)

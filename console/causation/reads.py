"""A Work's whole causation: the tree of Events that created, woke, retried and ended
it, back to their roots and forward to what they caused, in one ``storage.view``.

A page is a window of the Work's own Events (``work_events``, keyset on the acceptance
sequence), and around it what the window needs, a level of causation per query:

- back: the causes of the window's Events not already read, by ID
  (``find_events(ids=...)``), then theirs, up to ``UP_LEVELS`` levels and
  ``UP_MAX`` Events; a cause left unread is said on its row;
- forward: the Events the window's Events caused (``find_events(causes=...)``), then
  those that these caused when they belong to no Work, up to ``DOWN_LEVELS`` levels
  and ``DOWN_MAX`` Events, counting (one index count) what is left out;
- the Work's attempts, Waits and Timers, and the other Work the rows name.

So a page reads at most SPINE + UP_MAX + DOWN_MAX + 2 Events whatever the tree's size,
in at most 9 + UP_LEVELS + DOWN_LEVELS queries (the Work, its window, two counts of
its Events, the levels, a count of the effects left out, its attempts, Waits and
Timers, the other Work named; fewer for a shallow tree: one per level walked).

What a row did (created the Work, started an attempt, ended the Work) is matched by
transaction time: storage stamps every record a transaction writes with its one
``now``, so a Work, attempt or routing written with the Event's acceptance or routing
carries the same instant. Two transactions can share an instant only when the clock
stands still (``Guard.now`` never decreases), so a match can at worst name a neighbour.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from console.polling import read
from storage import Execution, StoredEvent, Timer, Tx, Wait, Work

SPINE = 50  # the Work's own Events per page
UP_LEVELS = 20
UP_MAX = 100
DOWN_LEVELS = 3
DOWN_MAX = 100
INDENT_MAX = 8  # deeper rows are drawn at this indentation (360 px wide screens)


@dataclass(frozen=True, slots=True)
class Note:
    """One thing a row's Event did or saw: ``kind`` picks the link (``work``,
    ``attempt``, ``wait``, ``timer``), ``id`` is the record's."""

    kind: str
    text: str
    id: str


@dataclass(frozen=True, slots=True)
class Row:
    stored: StoredEvent
    depth: int  # 0 for a root of what the page shows
    role: str  # "work": this Work's Event; "cause": before it; "effect": after it
    work_id: str  # the Work it names or was routed to ("" for none)
    cause_seq: int  # the sequence of its cause when that is a row above it, else 0
    during: Execution | None  # this Work's attempt that was running when it came
    notes: tuple[Note, ...]

    @property
    def indent(self) -> int:
        return min(self.depth, INDENT_MAX)


@dataclass(frozen=True, slots=True)
class CausationPage:
    now: int
    work: Work
    rows: list[Row]  # the tree in order: each root, then its descendants, by sequence
    shown: int  # this Work's Events on this page
    earlier: int  # this Work's Events before this page
    later: int  # ... and after it
    next_after: int  # the cursor of the next page (0: none)
    up_cut: int  # causes left unread (chains longer than the page walks)
    down_left: int  # Events caused by the page's Events and not shown
    timers: list[Timer]  # this Work's Timers still to fire, soonest first
    attempts: int


def _owner(stored: StoredEvent) -> str:
    """The Work an Event belongs to: the one it was routed to, else the one it names."""
    if stored.route is not None and stored.route.work_id:
        return stored.route.work_id
    return stored.event.work_id


def _belongs(stored: StoredEvent, work_id: str) -> bool:
    route = stored.route
    return stored.event.work_id == work_id or (route is not None and route.work_id == work_id)


def _walk_up(tx: Tx, known: dict[str, StoredEvent], spine: Sequence[StoredEvent]) -> int:
    """Read the causes of ``spine`` into ``known``, a level per query; how many
    causes were left unread."""
    missing = {e.event.causation_id for e in spine} - set(known) - {""}
    read_up = 0
    for _ in range(UP_LEVELS):
        wanted = sorted(missing)[: UP_MAX - read_up]
        if not wanted:
            break
        found = tx.find_events(ids=wanted)  # every cause exists (EV-06)
        read_up += len(found)
        known.update((e.id, e) for e in found)
        missing = (missing - set(wanted)) | {e.event.causation_id for e in found}
        missing -= set(known) | {""}
    return len(missing)


def _walk_down(tx: Tx, known: dict[str, StoredEvent], frontier: list[str]) -> int:
    """Read what ``frontier`` caused into ``known``, a level per query, going on below
    Events of no Work only (another Work's are that Work's causation); how many were
    left out of the last level read."""
    budget = DOWN_MAX
    for _ in range(DOWN_LEVELS):
        if not frontier or budget <= 0:
            break
        found = tx.find_events(causes=frontier, limit=budget + 1)
        new = [e for e in found[:budget] if e.id not in known]
        known.update((e.id, e) for e in new)
        if len(found) > budget:
            return tx.count_events(causes=frontier) - budget
        budget -= len(found)
        frontier = [e.id for e in new if not _owner(e)]
    return 0


def _notes(
    stored: StoredEvent,
    works: dict[str, Work],
    attempts: Sequence[Execution],
    waits: Sequence[Wait],
    timers: Sequence[Timer],
    mine: bool,
) -> tuple[Note, ...]:
    e = stored.event
    # The instants of the transactions that accepted and routed it.
    moments = {e.received_at} | ({stored.route.routed_at} if stored.route else set())
    notes: list[Note] = []
    owner = works.get(_owner(stored))
    if owner is not None and owner.created_at in moments:
        notes.append(Note("work", f"created Work {owner.kind}", owner.id))
    if mine:
        for x in attempts:
            if x.created_at in moments:
                notes.append(Note("attempt", f"started attempt {x.attempt}", x.id))
    for w in waits:
        if w.woken_by == e.id:
            notes.append(Note("wait", "woke Wait", w.id))
    for t in timers:
        if t.template.causation_id == e.id:
            notes.append(Note("timer", f"armed Timer ({t.purpose or 'timer'})", t.id))
    if owner is not None and owner.terminal and owner.updated_at in moments:
        notes.append(Note("work", f"ended Work {owner.kind}: {owner.state}", owner.id))
    return tuple(notes)


def _during(stored: StoredEvent, attempts: Sequence[Execution]) -> Execution | None:
    at = stored.event.received_at
    for x in attempts:
        if x.started_at and x.started_at <= at and (not x.finished_at or at <= x.finished_at):
            return x
    return None


def _tree(known: dict[str, StoredEvent]) -> Iterable[tuple[StoredEvent, int, int]]:
    """Every known Event in tree order (roots by sequence, each followed by its
    descendants, siblings by sequence), with its depth and its shown cause's sequence."""
    children: dict[str, list[StoredEvent]] = {}
    roots: list[StoredEvent] = []
    for e in sorted(known.values(), key=lambda s: s.sequence):
        cause = e.event.causation_id
        (children.setdefault(cause, []) if cause in known else roots).append(e)
    stack = [(e, 0) for e in reversed(roots)]
    while stack:
        e, depth = stack.pop()
        shown = known.get(e.event.causation_id)
        yield e, depth, shown.sequence if shown is not None else 0
        stack.extend((c, depth + 1) for c in reversed(children.get(e.id, [])))


def read_causation(work_id: str, after: int = 0) -> CausationPage:
    def build(tx: Tx) -> CausationPage:
        work = tx.work(work_id)
        found = tx.work_events(work.id, after, SPINE + 1)
        spine = found[:SPINE]
        # before=0 is unbounded: past the last page, every one of its Events is earlier.
        first = spine[0].sequence if spine else 0
        earlier = tx.count_events(work_id=work.id, before=first) if after else 0
        later = tx.count_events(work_id=work.id, after=spine[-1].sequence) if found[SPINE:] else 0
        known = {e.id: e for e in spine}
        up_cut = _walk_up(tx, known, spine)
        causes = dict(known)
        down_left = _walk_down(tx, known, [e.id for e in spine])
        attempts = sorted(tx.executions(work.id), key=lambda x: x.attempt)
        waits, timers = tx.waits(work.id), tx.timers(work.id)
        others = sorted({_owner(e) for e in known.values()} - {work.id, ""})
        works = {w.id: w for w in tx.works_of(others)} if others else {}
        works[work.id] = work
        rows = []
        for stored, depth, cause_seq in _tree(known):
            mine = _belongs(stored, work.id)
            role = "work" if mine else "cause" if stored.id in causes else "effect"
            rows.append(
                Row(
                    stored=stored,
                    depth=depth,
                    role=role,
                    work_id=_owner(stored),
                    cause_seq=cause_seq,
                    during=_during(stored, attempts) if mine else None,
                    notes=_notes(stored, works, attempts, waits, timers, mine),
                )
            )
        return CausationPage(
            now=tx.now,
            work=work,
            rows=rows,
            shown=len(spine),
            earlier=earlier,
            later=later,
            next_after=spine[-1].sequence if later else 0,
            up_cut=up_cut,
            down_left=down_left,
            timers=sorted(timers, key=lambda t: (t.fire_at, t.id)),
            attempts=len(attempts),
        )

    return read(build)

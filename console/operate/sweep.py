"""A bulk action over everything the Work list's filter matches, carried by the filter
itself (never one form field per Work) and capped at BULK_CAP *eligible* Work.

A sweep walks the filter's Work in creation order (created_at never changes, so the
order holds while the action runs) from a cursor, only in the states the action can
apply to, and stops at the cap. The confirmation shows one run: ``start`` (exclusive)
to ``stop`` (inclusive); the action re-reads exactly that range, and "the rest" is the
next run from ``stop``. Work retried or cancelled by one run is behind the cursor, so
no run picks it again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from django.urls import reverse

from console.actions.work import BULK_CAP
from console.attempts import LastTry, read_last_tries
from console.operate.reads import bulk_refusal, timed_work
from console.polling import read
from console.urlstate import FilterError, format_key, parse_key
from console.works.filters import STATE_ORDER, WorkFilter
from console.works.reads import within
from storage import TERMINAL_WORK_STATES, Tx, Work, WorkKey, WorkOrder, WorkQuery
from storage.ops.manual import Action

CHUNK = 500  # Work read per query while scanning
# Eligible Work the confirmation lists row by row, each with its last attempt; the
# rest are counted (a page of 10,000 rows helps nobody decide and weighs megabytes).
SHOWN = 500
# Rows scanned per run at most, eligible or not: a request stays bounded even when
# most of the range is refused (e.g. running Work under a retry).
SCAN_LIMIT = 10 * BULK_CAP
APPLICABLE = tuple(s for s in STATE_ORDER if s not in TERMINAL_WORK_STATES)
WORDS = (
    ("kind", "kind {}"),
    ("scope", "scope {}"),
    ("within", "within scope {} and its children"),
    ("parent", "child of {}"),
    ("executor", "executor {}"),
    ("error", "error group “{}”"),
    ("since", "updated since {}"),
    ("until", "updated before {}"),
)


@dataclass(frozen=True, slots=True)
class Sweep:
    action: Action
    filter: WorkFilter
    start: WorkKey | None  # this run covers Work strictly after it ...
    stop: WorkKey | None  # ... up to and including this one (None: nothing scanned)
    eligible: list[Work]
    excluded: list[tuple[str, Work | None, str]]  # refused inside the range, with why
    left: int  # Work in applicable states after ``stop``, counted up to BULK_CAP + 1
    by_state: dict[str, int]  # everything the filter matches, per state
    by_kind: list[tuple[str, int]]  # ... per kind and per Scope, largest first
    by_scope: list[tuple[str, int]]
    untouched: int  # matched Work in states the action never applies to
    scanned: int
    cap: int
    tries: dict[str, LastTry]  # the eligible Work's last tries (the confirmation's)
    now: int

    @property
    def shown(self) -> list[Work]:
        """The eligible Work the confirmation lists (the first SHOWN)."""
        return self.eligible[:SHOWN]

    @property
    def matching(self) -> int:
        return sum(self.by_state.values())

    @property
    def more(self) -> bool:
        return self.left > 0

    @property
    def left_more_than_cap(self) -> bool:
        return self.left > self.cap

    @property
    def over_cap(self) -> bool:
        """This run reached the cap with eligible Work after it: the selection is over
        what one bulk action takes, which the confirmation says first of all."""
        return len(self.eligible) >= self.cap and self.left > 0

    @property
    def start_cursor(self) -> str:
        return format_key(self.start) if self.start else ""

    @property
    def stop_cursor(self) -> str:
        return format_key(self.stop) if self.stop else ""


def describe(f: WorkFilter) -> str:
    """The filter in words, as the confirmation restates it."""
    parts = []
    if f.states:
        parts.append("state " + " or ".join(s.value for s in f.states))
    if f.sources:
        parts.append("source " + " or ".join(f.sources))
    if f.exhausted:
        parts.append("retries exhausted")
    parts += [words.format(getattr(f, name)) for name, words in WORDS if getattr(f, name)]
    return "Every Work with " + ", ".join(parts) if parts else "Every Work"


NARROWINGS = 5  # values of each facet offered as a narrower filter


def narrowings(sweep: Sweep) -> list[tuple[str, str, int, str]]:
    """Narrower filters for a selection over the cap: (facet, value, Work it matches,
    the same bulk action's confirmation over it), the largest first, for each facet
    the filter does not fix yet (kind; Scope, unless within a tree)."""
    f, do = sweep.filter, [("do", f"{sweep.action.value}-all")]
    out = []
    if not f.kind:
        out += [
            ("kind", v, n, reverse("bulk_action") + replace(f, kind=v).querystring(do))
            for v, n in sweep.by_kind[:NARROWINGS]
        ]
    if not f.scope and not f.within:
        out += [
            ("scope", v, n, reverse("bulk_action") + replace(f, scope=v).querystring(do))
            for v, n in sweep.by_scope[:NARROWINGS]
            if v
        ]
    return out


def parse_range(data: Mapping[str, str]) -> tuple[WorkKey | None, WorkKey | None]:
    """The run's ``from`` and ``through`` cursors (``<time ns>.<Work ID>``)."""
    keys: list[WorkKey | None] = []
    for name in ("from", "through"):
        raw = data.get(name, "")
        key = parse_key(raw) if raw else None
        if raw and key is None:
            raise FilterError({name: f"{raw!r} is not a position (<time>.<Work ID>)."})
        keys.append(key)
    return keys[0], keys[1]


def read_sweep(
    action: Action,
    f: WorkFilter,
    start: WorkKey | None,
    through: WorkKey | None = None,
    *,
    tries: bool = True,
) -> Sweep:
    """One run: the confirmation's (``through`` None: up to the cap) or the action's
    (``through`` is the confirmation's ``stop``). Queries: the Scopes when ``within``
    is set, the facets, the live attempts (retry), one per CHUNK scanned, one for what
    is left, and with ``tries`` (the confirmation) the eligible Work's last tries (3)."""

    def build(tx: Tx) -> Sweep:
        scope_ids = within(tx, f)
        matched = f.query(scope_ids=scope_ids)
        facets = tx.work_facets(matched)
        by_state = dict(facets.state)
        states = [s for s in APPLICABLE if not f.states or s in f.states]
        untouched = sum(n for s, n in by_state.items() if s not in states)
        eligible: list[Work] = []
        excluded: list[tuple[str, Work | None, str]] = []
        stop, scanned, left = None, 0, 0
        if states:
            q = replace(matched, states=frozenset(states), order=WorkOrder.CREATED_ASC)
            live = {x.work_id for x in tx.live_executions()} if action is Action.RETRY else set()
            stop, scanned = _scan(tx, q, action, start, through, live, eligible, excluded)
            rest = tx.query_works(replace(q, after=stop or start, limit=BULK_CAP + 1))
            left = len(rest)
        return Sweep(
            action=action,
            filter=f,
            start=start,
            stop=stop,
            eligible=eligible,
            excluded=excluded,
            left=left,
            by_state={s.value: by_state[s.value] for s in STATE_ORDER if by_state.get(s.value)},
            by_kind=_largest(facets.kind),
            by_scope=_largest(facets.scope),
            untouched=untouched,
            scanned=scanned,
            cap=BULK_CAP,
            tries=read_last_tries(tx, eligible[:SHOWN]) if tries else {},
            now=tx.now,
        )

    return read(build)


def _largest(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    return sorted(((v, n) for v, n in counts.items() if n), key=lambda e: (-e[1], e[0]))


def _scan(
    tx: Tx,
    q: WorkQuery,
    action: Action,
    start: WorkKey | None,
    through: WorkKey | None,
    live: set[str],
    eligible: list[Work],
    excluded: list[tuple[str, Work | None, str]],
) -> tuple[WorkKey | None, int]:
    """Walk ``q`` after ``start`` (to ``through`` when given) until BULK_CAP eligible
    or SCAN_LIMIT scanned; the last Work looked at and how many were."""
    key, scanned = start, 0
    while True:
        rows = tx.query_works(replace(q, after=key, limit=CHUNK))
        timed = timed_work(tx, action, rows)
        for work in rows:
            row_key = q.key_of(work)
            if through is not None and (row_key.time, row_key.id) > (through.time, through.id):
                return key, scanned
            key, scanned = row_key, scanned + 1
            why = bulk_refusal(action, work, live, timed)
            if why:
                excluded.append((work.id, work, why))
            else:
                eligible.append(work)
            if len(eligible) >= BULK_CAP or scanned >= SCAN_LIMIT:
                return key, scanned
        if len(rows) < CHUNK:
            return key, scanned

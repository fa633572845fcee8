"""Two attempts of one Work side by side (``/compare/<id>?a=<Execution ID>&b=...``):
state, executor, binding, inputs seen, lease, outcome, duration and artifacts, each
field marked "differs" or "same" in words, then the artifacts paired and diffed.

Which two: the ``a`` and ``b`` the URL names, each an attempt of this Work (an unknown
attempt or another Work's is a 404; an ID the store refuses, a 400). A side the URL
does not name takes its default: the latest failed attempt (A) and the latest that
completed (B); without one of each, the two latest (A the older).

One ``storage.view`` (``read_comparison``): the Work, its attempts, its Waits and each
side's Events while it lived, the attempt page's bounded read; artifact content is
read after it, outside it (``console.runtime.diffs``). The page does not poll: it is
read for a postmortem, and its diffs are the costly part.

What the store does not keep, the page says rather than draws: no attempt records what
it read (the Events its Work accepted while it lived, and what woke its Waits, are what
it could have seen), and a lease keeps only its latest claim (owner, epoch counting
claims, first claim, end), as on the attempt page.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpResponse, QueryDict
from django.shortcuts import render

from console.attempts import attempt_label
from console.http import HtmxHttpRequest, page
from console.polling import read
from console.runtime.attempt import EVENTS_MAX, events_while_it_lived, waits_of_attempt
from console.runtime.diffs import DIFF_LIMIT, DIFF_LINES, MAX_DIFFS, pair_artifacts
from console.runtime.previews import logical_names
from console.templatetags.console import absolute, filesize, pretty, span
from storage import Execution, ExecutionState, NotFound, StoredEvent, Tx, Wait, Work
from storage.default import default_artifacts
from storage.tx.fields import require_id

TEMPLATE = "console/compare.html"
NS = 1_000_000_000
Keyed = tuple[tuple[str, ...], object]  # a side's lines, and what is compared of it


@dataclass(frozen=True, slots=True)
class Field:
    """One compared field: each side's lines as shown, and what is compared (``key``,
    the lines themselves when None: times and IDs that always differ are left out)."""

    name: str
    a: tuple[str, ...]
    b: tuple[str, ...]
    key_a: object = None
    key_b: object = None
    note: str = ""

    @property
    def differs(self) -> bool:
        if self.key_a is None and self.key_b is None:
            return self.a != self.b
        return self.key_a != self.key_b


@dataclass(frozen=True, slots=True)
class Side:
    x: Execution
    label: str  # console.attempts.attempt_label
    waits: list[Wait]
    events: list[StoredEvent]  # oldest first
    more_events: bool


@dataclass(frozen=True, slots=True)
class Comparison:
    now: int
    work: Work
    attempts: list[Execution]  # newest first: the choosers' options
    a: Side | None  # None when the Work has fewer than two attempts and none was named
    b: Side | None
    defaulted: str  # how the sides not named were chosen ("" when both were named)


def parse_choice(query: QueryDict) -> tuple[str, str]:
    """The ``a`` and ``b`` the URL names ("" for a side left to its default); an ID the
    store would refuse is ``Invalid`` (a 400), not a search that finds nothing."""
    chosen = (query.get("a", ""), query.get("b", ""))
    for name, value in zip("ab", chosen, strict=True):
        if value:
            require_id(value, f"attempt {name.upper()}")
    return chosen


def default_pair(attempts: list[Execution]) -> tuple[Execution, Execution, str, str] | None:
    """The latest failed and the latest completed attempt, else the two latest
    (``attempts`` newest first), with the rule in words (both sides, one side); None
    below two attempts."""
    failed = next((x for x in attempts if x.state is ExecutionState.FAILED), None)
    done = next((x for x in attempts if x.state is ExecutionState.COMPLETED), None)
    if failed and done:
        both = "the latest failed attempt (A) and the latest that completed (B)"
        return failed, done, both, "the latest failed and the latest completed attempt"
    if len(attempts) >= 2:
        return attempts[1], attempts[0], "the two latest attempts (A the older)", "the two latest"
    return None


def choose(
    attempts: list[Execution], work_id: str, named: tuple[str, str]
) -> tuple[Execution | None, Execution | None, str]:
    """The two sides and how the ones not named were chosen: a named one must be among
    the Work's attempts (else NotFound); one not named is its side of ``default_pair``,
    or the pair's other attempt when the named side took that one."""
    by_id = {x.id: x for x in attempts}
    for side, execution_id in zip("AB", named, strict=True):
        if execution_id and execution_id not in by_id:
            raise NotFound(f"Attempt {side} {execution_id!r} is not an attempt of Work {work_id!r}")
    a, b = by_id.get(named[0]), by_id.get(named[1])
    pair = default_pair(attempts)
    if (a and b) or pair is None:
        return a, b, ""
    da, db, both, short = pair
    if a is None and b is None:
        return da, db, f"Chosen by default: {both}."
    if a is None:
        other = b.id if b else ""
        return (db if da.id == other else da), b, f"A chosen by default, from {short}."
    return a, (da if db.id == a.id else db), f"B chosen by default, from {short}."


def read_comparison(work_id: str, named: tuple[str, str]) -> Comparison:
    """Queries: the View's clock, the Work, its attempts, its Waits, and each side's
    Events while it lived (at most EVENTS_MAX each): six, whatever the history."""

    def build(tx: Tx) -> Comparison:
        work = tx.work(work_id)
        attempts = sorted(tx.executions(work.id), key=lambda x: (x.attempt, x.id), reverse=True)
        a, b, why = choose(attempts, work.id, named)
        waits = tx.waits(work.id) if a or b else []

        def side(x: Execution | None) -> Side | None:
            if x is None:
                return None
            mine = waits_of_attempt(x, waits)
            events, more = events_while_it_lived(tx, x)
            label = attempt_label(x, mine, work.state)
            return Side(x, label, mine, events[::-1], more)

        return Comparison(tx.now, work, attempts, side(a), side(b), why)

    return read(build)


def _duration(x: Execution, now: int) -> str:
    if not x.started_at:
        return "never claimed"
    if not x.finished_at:
        return f"{_span(now - x.started_at)} so far (still {x.state.value})"
    return _span(x.finished_at - x.started_at)


def _span(ns: int) -> str:
    """Short spans to the millisecond, since attempts often take less than a second."""
    if ns < NS:
        return f"{ns // 1_000_000} ms"
    if ns < 60 * NS:
        return f"{ns / NS:.1f} s"
    return span(ns / NS)


def _inputs(s: Side) -> Keyed:
    """What it could have seen, and what is compared: the Event types, in order, and
    how its Waits ended (IDs and sequences always differ)."""
    lines = [f"#{e.sequence} {e.event.type} ({e.event.id})" for e in s.events]
    if s.more_events:
        lines.append(f"… only the newest {EVENTS_MAX} are read")
    lines += [
        f"Wait {w.id}: {w.state.value}" + (f" by {w.woken_by}" if w.woken_by else "")
        for w in s.waits
    ]
    key = (tuple(e.event.type for e in s.events), s.more_events, tuple(w.state for w in s.waits))
    return tuple(lines) or ("no Event while it lived",), key


def _lease(x: Execution, now: int) -> Keyed:
    claims = f"claimed {x.epoch} time{'s' if x.epoch != 1 else ''}" if x.epoch else "never claimed"
    owner = f"owner {x.owner}" if x.owner else "no owner (cleared when its lease ended)"
    lines = [owner, f"{claims} (epoch {x.epoch})"]
    if x.started_at:
        lines.append(f"first claim {absolute(x.started_at)}")
    expired = not x.terminal and 0 < x.lease_expires_at <= now
    if x.finished_at:
        lines.append(f"ended {absolute(x.finished_at)}")
    elif x.lease_expires_at:
        lines.append(f"lease {'expired' if expired else 'expires'} {absolute(x.lease_expires_at)}")
    return tuple(lines), (x.owner, x.epoch, expired)


def _outcome(x: Execution) -> tuple[str, ...]:
    if x.outcome is None:
        return (f"none yet: it is {x.state.value}",)
    lines = [x.outcome.kind.value + (f": {x.outcome.message}" if x.outcome.message else "")]
    if x.outcome.detail is not None:
        lines.append(pretty(x.outcome.detail))
    return tuple(lines)


def _artifacts(x: Execution) -> Keyed:
    names = logical_names(x.artifacts)
    lines = [
        f"{n}: {r.media_type}, {filesize(r.size)}" for n, r in zip(names, x.artifacts, strict=True)
    ]
    key = tuple(
        (n, r.media_type, r.sha256 or r.id) for n, r in zip(names, x.artifacts, strict=True)
    )
    return tuple(lines) or ("none",), key


def _binding(x: Execution) -> tuple[str, ...]:
    b = x.binding
    if b is None:
        return ("none recorded",)
    passes = ", ".join(b.pass_env) or "nothing"
    return (f"name {b.name or '—'}", f"executor {b.executor or '—'}", f"passes env: {passes}")


def _keyed(name: str, a: Keyed, b: Keyed, note: str) -> Field:
    return Field(name, a[0], b[0], a[1], b[1], note)


def compare_fields(a: Side, b: Side, now: int) -> list[Field]:
    """The compared fields, in the order the page shows them."""
    return [
        Field("State", (a.label,), (b.label,)),
        Field("Executor", (a.x.executor or "—",), (b.x.executor or "—",)),
        Field("Binding", _binding(a.x), _binding(b.x)),
        _keyed(
            "Inputs seen",
            _inputs(a),
            _inputs(b),
            "The store does not record what an attempt read: these are its Work's Events "
            "accepted while it lived and how its Waits ended. Compared: the Event types in "
            "order and how the Waits ended (IDs and sequences always differ).",
        ),
        _keyed(
            "Lease",
            _lease(a.x, now),
            _lease(b.x, now),
            "The store keeps the latest claim only (the epoch counts claims). Compared: "
            "owner, claims and whether the lease expired; times always differ.",
        ),
        Field("Outcome", _outcome(a.x), _outcome(b.x)),
        Field(
            "Duration", (_duration(a.x, now),), (_duration(b.x, now),), note="First claim to end."
        ),
        _keyed(
            "Artifacts", _artifacts(a.x), _artifacts(b.x), "Names are derived from the media type."
        ),
    ]


@page
def compare_attempts(request: HtmxHttpRequest, work_id: str) -> HttpResponse:
    """Two attempts of a Work side by side, and what differed."""
    found = read_comparison(work_id, parse_choice(request.GET))
    a, b = found.a, found.b
    # Artifact content lives beside the database: read after the read, outside it.
    pairs = pair_artifacts(default_artifacts(), a.x, b.x) if a and b else []
    fields = compare_fields(a, b, found.now) if a and b else []
    differed = [f.name for f in fields if f.differs] + [
        f"{p.name} (artifact)" for p in pairs if p.differs
    ]
    context = {
        "cmp": found,
        "fields": fields,
        "differed": differed,
        "pairs": pairs,
        "diff_kib": DIFF_LIMIT // 1024,
        "diff_lines": DIFF_LINES,
        "max_diffs": MAX_DIFFS,
    }
    return render(request, TEMPLATE, context)

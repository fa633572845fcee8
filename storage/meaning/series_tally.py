"""The series tally: per-day counts behind the dashboards' long windows, kept in the
write transaction, and how a bucket splits into what they answer and what they do not.

A dashboard series counts, per bucket, the Events accepted, the attempts first
claimed and the Work last updated (per state) in it (``storage.meaning.series``).
Counted from the rows, a bucket is one index range, so a window holding the whole
history reads every row of it (861 ms at a realistic million Work, issue 22). The
tally keeps those counts per UTC day instead, as rows

    (series, scope, state, day) -> n

where ``day`` is ``nanos // DAY`` of the record's time, ``state`` is the Work's state
for the ``work`` series and "" for the others, and ``scope`` is the record's Scope
("" for none): an Event's recorded Scope, an attempt's Scope column (its Work's, fixed
at creation), a Work's Scope. Each record also counts in a store-wide row: the same
key under the series' name with ``STORE_WIDE`` appended (``event*``) and scope "".
Why a distinct series name rather than a marker Scope: every string a Scope ID may
hold is a possible Scope, and "" already means "no Scope"; the series names are ours.
The key stays four columns and one index, and a store-wide read is one index range
(one row per day), not one per Scope per day.

What the rules add (``storage.tx``, in the writing transaction, on every backend):

- ``event``: +1 at acceptance, scope ""; ``set_event_scope`` moves it to the Scope
  (the store-wide row does not change). An Event's acceptance time never changes and
  no Event is deleted.
- ``attempt``: +1 at the first claim, which sets ``started_at`` (later claims keep
  it); an attempt never claimed counts nowhere. ``started_at`` and the attempt's
  Scope never change afterwards, and no attempt is deleted.
- ``work``: a Work write takes one from its previous record's (state, scope, day of
  ``updated_at``) and adds one to the stored record's (``delta``), cancelling out
  when neither changed (metadata kept by storage: ``latest_executor``, the triage
  marks). No Work is deleted; its Scope is fixed at creation.

So a committed tally equals ``count`` over the stored records (the differential test
checks it). A bucket [low, high) (``split``) is the whole days inside it, summed from
the tally, plus the partial day at each end, counted from the rows as before; a
bucket holding no whole day (the 1 h, 24 h and 7 d dashboards' minutes to hours) is
counted from the rows alone. The Work series uses the tally only for a selection by
states and Scope (``answers``); its other filters are not keys of the tally.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ..records import Execution, Nanos, StoredEvent, Work, WorkQuery
from . import tally

DAY: Nanos = 86_400 * 10**9

EVENT, ATTEMPT, WORK = "event", "attempt", "work"
SERIES = (EVENT, ATTEMPT, WORK)
# Appended to a series' name for its store-wide rows (scope "").
STORE_WIDE = "*"

# (series, scope_id, state, day)
SeriesKey = tuple[str, str, str, int]


def day(nanos: Nanos) -> int:
    """The UTC day number of an instant (days since the Unix epoch)."""
    return nanos // DAY


def keys(series: str, scope_id: str, state: str, at: Nanos) -> list[SeriesKey]:
    """The rows one record counts in: its Scope's and the store-wide one."""
    d = day(at)
    return [(series, scope_id, state, d), (series + STORE_WIDE, "", state, d)]


def event_keys(stored: StoredEvent) -> list[SeriesKey]:
    return keys(EVENT, stored.scope_id, "", stored.event.received_at)


def attempt_keys(x: Execution, scope_id: str) -> list[SeriesKey]:
    """An attempt's rows (``scope_id``: its Work's); none before its first claim."""
    return keys(ATTEMPT, scope_id, "", x.started_at) if x.started_at else []


def work_keys(work: Work) -> list[SeriesKey]:
    return keys(WORK, work.scope_id, work.state.value, work.updated_at)


def add(rows: Iterable[SeriesKey], n: int, into: Counter[SeriesKey]) -> None:
    for key in rows:
        into[key] += n


def work_delta(previous: Work | None, stored: Work, into: Counter[SeriesKey]) -> None:
    """Add to ``into`` what replacing ``previous`` (None: a new Work) by ``stored``
    changes in the tally (nothing when state, Scope and update day are unchanged)."""
    if previous is not None:
        add(work_keys(previous), -1, into)
    add(work_keys(stored), 1, into)


def count(
    works: Iterable[Work],
    events: Iterable[StoredEvent],
    executions: Iterable[Execution],
    scope_of: Mapping[str, str],
) -> dict[SeriesKey, int]:
    """The tally of these records counted from scratch (what a rebuild writes);
    ``scope_of`` maps a Work ID to its Scope ID (an attempt's Scope is its Work's)."""
    rows: Counter[SeriesKey] = Counter()
    for work in works:
        add(work_keys(work), 1, rows)
    for stored in events:
        add(event_keys(stored), 1, rows)
    for x in executions:
        add(attempt_keys(x, scope_of.get(x.work_id, "")), 1, rows)
    return {key: n for key, n in rows.items() if n}


def split(low: Nanos, high: Nanos) -> tuple[list[tuple[Nanos, Nanos]], tuple[int, int] | None]:
    """A bucket [low, high) as the partial-day edges counted from the rows (each
    [a, b), nonempty) and the whole days [first, last) summed from the tally (None:
    the bucket holds no whole day and is counted from the rows alone)."""
    first, last = -(-low // DAY), high // DAY
    if first >= last:
        return [(low, high)], None
    edges = [(a, b) for a, b in ((low, first * DAY), (last * DAY, high)) if a < b]
    return edges, (first, last)


def answers(query: WorkQuery) -> bool:
    """Whether the tally gives ``query``'s Work series: it filters by nothing but
    states and Scope (``scope_id``/``scope_ids``)."""
    return tally.answers(query) and not query.kind


def work_scopes(query: WorkQuery) -> list[str] | None:
    """The Scopes whose own rows a Work series of ``query`` (one the tally
    ``answers``) sums, in order; None: the store-wide rows."""
    if query.scope_id:
        inside = not query.scope_ids or query.scope_id in query.scope_ids
        return [query.scope_id] if inside else []
    if query.scope_ids:
        return sorted(query.scope_ids)
    return None


def selected(series: str, scope_ids: Sequence[str] | None) -> tuple[str, list[str]]:
    """The series name and Scopes of the rows a selection sums: its Scopes' own rows
    ("" = no Scope), or the store-wide rows for ``scope_ids`` None."""
    if scope_ids is None:
        return series + STORE_WIDE, [""]
    return series, sorted(set(scope_ids))


def days_sum(
    rows: Mapping[SeriesKey, int],
    series: str,
    scope_ids: Sequence[str] | None,
    state: str,
    days: tuple[int, int],
) -> int:
    """The sum of the tally rows of the whole days [first, last) of a selection (the
    meaning of the ORM's SUM over the same index range)."""
    name, scopes = selected(series, scope_ids)
    first, last = days
    return sum(
        n
        for (s, scope, st, d), n in rows.items()
        if s == name and scope in scopes and st == state and first <= d < last
    )

"""Timers: arming, rearming and firing; a fired Timer's template is accepted as an Event.

Revisions survive deletion (``_timer_floor``), so a re-created Timer ID never repeats
a revision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import Conflict, Invalid, NotFound
from ..meaning import series
from ..meaning.pages import check_timer_query
from ..records import Buckets, Event, Nanos, StoredEvent, Timer, TimerNext, TimerQuery
from . import fields
from .events import EventRules
from .work import WorkRules


class TimerRules(WorkRules, EventRules):
    """The Timer operations of ``Tx``."""

    def _require_unused_identity(self, template: Event) -> None:
        self._validate_envelope(template)
        if any(stored is not None for stored in self._event_identity(template)):
            raise Conflict(f"timer template reuses accepted Event identity {template.id!r}")

    def put_timer(self, timer: Timer) -> Timer:
        self._writable()
        fields.require_id(timer.id, "Timer ID")
        fields.require_storable(timer, "Timer")
        fields.require_text(timer.work_id, "Timer work_id")
        self._require_unused_identity(timer.template)
        if timer.work_id:
            self._require_work(timer.work_id)
        current = self._get("timer", timer.id)
        if timer.revision == 0:
            if current is not None:
                raise Conflict(f"Timer {timer.id!r} already exists")
            revision = self._timer_floor(timer.id) + 1
        else:
            if current is None:
                raise NotFound(f"Timer {timer.id!r} does not exist")
            if timer.revision != current.revision:
                raise Conflict(
                    f"Timer {timer.id} is at revision {current.revision}, not {timer.revision}"
                )
            revision = current.revision + 1
        stored = replace(
            timer,
            revision=revision,
            created_at=current.created_at if current else self._now,
            updated_at=self._now,
        )
        self._put("timer", stored, create=current is None)
        self._touch(stored.work_id)
        if current is not None:
            self._touch(current.work_id)
        return stored

    def _current_timer(self, timer_id: str, revision: int) -> Timer:
        timer = self._get("timer", timer_id)
        if timer is None:
            raise NotFound(f"Timer {timer_id!r} does not exist")
        if timer.revision != revision:
            raise Conflict(f"Timer {timer_id} is at revision {timer.revision}, not {revision}")
        return timer

    def timer(self, timer_id: str) -> Timer:
        self._check()
        timer = self._get("timer", timer_id)
        if timer is None:
            raise NotFound(f"Timer {timer_id!r} does not exist")
        return timer

    def timers(self, work_id: str = "") -> list[Timer]:
        self._check()
        return self._list("timer", work_id=work_id)

    def timers_of(self, work_ids: Sequence[str]) -> list[Timer]:
        """The Timers of any of the listed Work, by ID, read for the whole list at once."""
        self._check()
        ids = fields.require_ids(work_ids, "Work ID")
        return self._list_of_works("timer", ids) if ids else []

    def due_timers(self, now: Nanos, limit: int = 0) -> list[Timer]:
        self._check()
        fields.require_limit(limit)
        return self._due_timers(now, limit)

    def query_timers(self, query: TimerQuery) -> list[Timer]:
        """A keyset page of Timers in (fire_at, ID) order (``meaning.pages``): one read."""
        self._check()
        check_timer_query(query)
        for key in (query.after, query.before):
            if key is not None:  # a cursor reaches SQL as a parameter (no NUL there)
                fields.require_text(key.id, "Timer ID in a page cursor")
        self._check_timer_scopes(query)
        return self._query_timers(query)

    @staticmethod
    def _check_timer_scopes(query: TimerQuery) -> None:
        for scope_id in query.scope_ids or ():  # parameters of SQL too (no NUL there)
            fields.require_text(scope_id, "Scope ID of a Timer query")
        for kind in query.kinds or ():
            fields.require_text(kind, "Work kind of a Timer query")

    def count_timers(self, query: TimerQuery) -> int:
        """How many Timers ``query``'s bound selects, its cursor and limit aside (an
        index count: none decoded)."""
        self._check()
        check_timer_query(query)
        self._check_timer_scopes(query)
        return self._count_timers(query)

    def timer_series(self, buckets: Buckets, query: TimerQuery) -> list[int]:
        """Per bucket of ``buckets``, how many Timers fire in it among those
        ``count_timers(query)`` counts (cursor and limit aside): counted from the due
        times (an index range per bucket), no Timer decoded."""
        self._check()
        series.check_buckets(buckets)
        check_timer_query(query)
        self._check_timer_scopes(query)
        return self._timer_series(buckets, query)

    def delete_timer(self, timer_id: str, revision: int) -> None:
        self._writable()
        timer = self._current_timer(timer_id, revision)
        self._delete_timer(timer_id)
        self._touch(timer.work_id)

    def fire_timer(
        self, timer_id: str, revision: int, next: TimerNext | None = None
    ) -> StoredEvent:
        self._writable()
        timer = self._current_timer(timer_id, revision)
        if self._now < timer.fire_at:
            raise Invalid(f"Timer {timer_id} is not due until {timer.fire_at}")
        fired = replace(timer.template, occurred_at=timer.fire_at)
        self._require_unused_identity(fired)
        if next is not None:
            if next.fire_at <= timer.fire_at:
                raise Invalid("a rearmed timer must fire later than the fired time")
            same = (next.template.source, next.template.delivery_id) == (
                fired.source,
                fired.delivery_id,
            )
            if same or next.template.id == fired.id:
                raise Invalid("a rearmed timer needs a new Event identity")
            self._require_unused_identity(next.template)
        stored, _ = self.accept_event(fired)
        self._touch(timer.work_id)
        if next is None:
            self._delete_timer(timer_id)
        else:
            rearmed = replace(
                timer,
                fire_at=next.fire_at,
                template=next.template,
                revision=timer.revision + 1,
                updated_at=self._now,
            )
            self._put("timer", rearmed, create=False)
        return stored

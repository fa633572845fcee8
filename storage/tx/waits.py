"""Waits: registration beside a parked attempt, one state change, and the reads.

``before_commit`` (``tx.base``) checks that each registered Wait joined the
transaction that parks its attempt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import Conflict, Invalid, NotFound
from ..meaning.pages import check_wait_query
from ..records import ActiveWaitQuery, Wait, WaitState
from . import fields
from .events import EventRules
from .executions import ExecutionRules


class WaitRules(ExecutionRules, EventRules):
    """The Wait operations of ``Tx``."""

    def put_wait(self, wait: Wait) -> Wait:
        self._writable()
        fields.require_id(wait.id, "Wait ID")
        fields.require_storable(wait, "Wait")
        fields.require_text(wait.work_id, "Wait work_id")
        fields.require_text(wait.execution_id, "Wait execution_id")
        fields.require_text(wait.timeout_timer_id, "Wait timeout_timer_id")
        try:
            state = WaitState(wait.state)
        except ValueError:
            raise Invalid(f"unknown Wait state {wait.state!r}") from None
        current = self._get("wait", wait.id)
        if wait.revision == 0:
            if current is not None:
                raise Conflict(f"Wait {wait.id!r} already exists")
            return self._register_wait(wait, state)
        if current is None:
            raise NotFound(f"Wait {wait.id!r} does not exist")
        if wait.revision != current.revision:
            raise Conflict(f"Wait {wait.id} is at revision {current.revision}, not {wait.revision}")
        if current.state is not WaitState.ACTIVE:
            raise Invalid(f"Wait {wait.id} is {current.state}; it changes state only once")
        fixed: tuple[str, ...] = ("work_id", "execution_id", "keys", "types", "after_sequence")
        fixed += ("timeout_timer_id", "description", "owner")
        if any(getattr(wait, f) != getattr(current, f) for f in fixed):
            raise Invalid("a Wait's predicate, boundary, timeout, description and owner are fixed")
        if wait.progress != current.progress and not current.owner:
            raise Invalid("only a Wait with an owner records progress")
        if state is not WaitState.ACTIVE and wait.progress != current.progress:
            raise Invalid(f"Wait {wait.id} keeps its progress when its state changes")
        woken_by = ""
        if state is WaitState.WOKEN:
            fields.require_id(wait.woken_by, "the waking Event ID")
            self._require_event(wait.woken_by)
            woken_by = wait.woken_by
        stored = replace(
            wait,
            state=state,
            woken_by=woken_by,
            revision=current.revision + 1,
            created_at=current.created_at,
            updated_at=self._now,
        )
        self._put("wait", stored, create=False)
        if state is not WaitState.ACTIVE:
            # A Wait cancelled under an attempt that ended waiting may group its Work
            # (``triage.failure_key``: timed out waiting for its event types).
            self._touch(wait.work_id, attempt=True)
        return stored

    def _register_wait(self, wait: Wait, state: WaitState) -> Wait:
        if state is not WaitState.ACTIVE:
            raise Invalid("a Wait is registered active")
        work = self._require_work(wait.work_id)
        x = self._require_execution(wait.execution_id)
        if x.work_id != work.id:
            raise Invalid(f"Execution {x.id} belongs to Work {x.work_id}, not {work.id}")
        fields.require_keys(wait.keys)
        foreign = [k for k in wait.keys if k not in work.keys]
        if foreign:
            raise Invalid(f"Wait keys {foreign} are not owned by Work {work.id}")
        for type_ in wait.types:
            fields.require_dotted(type_, "Wait type filter")
        if wait.after_sequence < 0:
            raise Invalid("a Wait boundary is a nonnegative acceptance sequence")
        if wait.timeout_timer_id and self._get("timer", wait.timeout_timer_id) is None:
            raise NotFound(f"timeout Timer {wait.timeout_timer_id!r} does not exist")
        stored = replace(
            wait,
            state=WaitState.ACTIVE,
            woken_by="",
            revision=1,
            created_at=self._now,
            updated_at=self._now,
        )
        self._put("wait", stored, create=True)
        self._registered_waits.append(wait.id)
        return stored

    def wait(self, wait_id: str) -> Wait:
        self._check()
        wait = self._get("wait", wait_id)
        if wait is None:
            raise NotFound(f"Wait {wait_id!r} does not exist")
        return wait

    def waits(self, work_id: str = "") -> list[Wait]:
        self._check()
        return self._list("wait", work_id=work_id)

    def waits_of(self, work_ids: Sequence[str]) -> list[Wait]:
        """The Waits (any state) of any of the listed Work, by ID, in one read."""
        self._check()
        ids = fields.require_ids(work_ids, "Work ID")
        return self._list_of_works("wait", ids) if ids else []

    def active_waits(self, work_id: str = "") -> list[Wait]:
        self._check()
        return self._list("wait", work_id=work_id, live=True)

    def query_active_waits(self, query: ActiveWaitQuery) -> list[Wait]:
        """A keyset page of active Waits in (created_at, ID) order (``meaning.pages``):
        one read."""
        self._check()
        check_wait_query(query)
        for key in (query.after, query.before):
            if key is not None:  # a cursor reaches SQL as a parameter (no NUL there)
                fields.require_text(key.id, "Wait ID in a page cursor")
        return self._query_active_waits(query)

    def count_active_waits(self, query: ActiveWaitQuery) -> int:
        """How many active Waits ``query``'s bound selects, its cursor and limit aside
        (an index count: none decoded)."""
        self._check()
        check_wait_query(query)
        return self._count_active_waits(query)

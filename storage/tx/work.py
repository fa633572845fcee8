"""Work: creation and updates under the lifecycle table, correlation keys, and the
Work reads (lookups, queries, counts, facets).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import Conflict, Invalid, NotFound
from ..meaning import tally
from ..meaning.query import check_query
from ..records import CorrelationKey, Work, WorkFacets, WorkQuery, WorkState
from . import fields, lifecycle
from .base import TxBase


class WorkRules(TxBase):
    """The Work operations of ``Tx``."""

    def _require_work(self, work_id: str) -> Work:
        work = self._get("work", work_id)
        if work is None:
            raise NotFound(f"Work {work_id!r} does not exist")
        return work

    def put_work(self, work: Work) -> Work:
        self._writable()
        fields.require_id(work.id, "Work ID")
        fields.require_storable(work, "Work")
        for name in ("scope_id", "parent_id"):
            fields.require_text(getattr(work, name), f"Work {name}")
        current = self._get("work", work.id)
        state = lifecycle.work_state(work.state)
        fields.require_keys(work.keys)
        fields.require_payload(work.context, "Work context")
        if len(set(work.keys)) != len(work.keys):
            raise Invalid("a Work lists the same correlation key twice")
        if work.revision == 0:
            if current is not None:
                raise Conflict(f"Work {work.id!r} already exists")
            fields.require_dotted(work.kind, "Work kind")
            if state is not WorkState.READY:
                raise Invalid(f"a new Work starts ready, not {state}")
            if work.scope_id and not self._exists("scope", work.scope_id):
                raise NotFound(f"Scope {work.scope_id!r} does not exist")
            if work.parent_id:
                if work.parent_id == work.id:
                    raise Invalid("a Work cannot be its own parent")
                self._require_work(work.parent_id)
            self._require_free_keys(work.id, work.keys)
            stored = replace(
                work,
                state=state,
                latest_executor="",
                exhausted=False,
                error_group="",
                revision=1,
                created_at=self._now,
                updated_at=self._now,
            )
            self._write_work(None, stored)
            self._touch(work.id)
            self._add_keys(work.id, work.keys, 0)
            return stored
        if current is None:
            raise NotFound(f"Work {work.id!r} does not exist")
        if work.revision != current.revision:
            raise Conflict(f"Work {work.id} is at revision {current.revision}, not {work.revision}")
        if current.terminal:
            raise Invalid(f"Work {work.id} is {current.state}; terminal records are immutable")
        if (work.kind, work.scope_id, work.parent_id) != (
            current.kind,
            current.scope_id,
            current.parent_id,
        ):
            raise Invalid("Work kind, scope and parent are fixed at creation")
        if work.keys[: len(current.keys)] != current.keys:
            raise Invalid("correlation keys can be appended, never removed or reordered")
        added = work.keys[len(current.keys) :]
        if state is not current.state and not lifecycle.work_transition_allowed(
            current.state, state
        ):
            raise Invalid(f"Work cannot move from {current.state} to {state}")
        self._require_free_keys(work.id, added)
        stored = replace(
            work,
            state=state,
            latest_executor=current.latest_executor,
            exhausted=current.exhausted,
            error_group=current.error_group,
            revision=current.revision + 1,
            created_at=current.created_at,
            updated_at=self._now,
        )
        self._write_work(current, stored)
        self._touch(work.id)
        self._add_keys(work.id, added, len(current.keys))
        return stored

    def _require_free_keys(self, work_id: str, keys: Sequence[CorrelationKey]) -> None:
        for key in keys:
            owner = self._key_owner(key)
            if owner is not None and owner != work_id:
                raise Conflict(
                    f"correlation key ({key.source}, {key.external_id}) is owned by Work {owner}"
                )

    def work(self, work_id: str) -> Work:
        self._check()
        return self._require_work(work_id)

    def work_by_key(self, key: CorrelationKey) -> Work:
        self._check()
        owner = self._key_owner(key)
        if owner is None:
            raise NotFound(f"no Work owns key ({key.source}, {key.external_id})")
        return self._require_work(owner)

    def works(self) -> list[Work]:
        self._check()
        return self._list("work")

    def works_of(self, work_ids: Sequence[str]) -> list[Work]:
        """The listed Work that exist (unknown IDs are absent), by ID, in one read."""
        self._check()
        ids = fields.require_ids(work_ids, "Work ID")
        return self._works_by_id(ids) if ids else []

    def live_works(self) -> list[Work]:
        self._check()
        return self._list("work", live=True)

    def query_works(self, query: WorkQuery) -> list[Work]:
        self._check()
        check_query(query)
        return self._query_works(query)

    def count_works(self, query: WorkQuery) -> int:
        self._check()
        check_query(query)
        counted = self._tally_count(query)
        return self._count_works(query) if counted is None else counted

    def work_facets(self, query: WorkQuery) -> WorkFacets:
        """From the tally when it answers ``query`` (states, Scope and kind only, of
        every Work or of the exhausted Work: time independent of the history), else
        counted from the Work rows."""
        self._check()
        check_query(query)
        if tally.answers(query) or tally.answers_exhausted(query):
            self._settle_tally()
            return self._tally_facets(query)
        return self._work_facets(query)

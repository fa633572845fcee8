"""Scopes: the tree of Scopes (no cycles, parents must exist) and its reads.

A Scope's bindings are checked as an Execution's are (``_check_attachments``).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import Conflict, Invalid, NotFound
from ..records import Scope
from . import fields
from .executions import ExecutionRules


class ScopeRules(ExecutionRules):
    """The Scope operations of ``Tx``."""

    def put_scope(self, scope: Scope) -> Scope:
        self._writable()
        fields.require_id(scope.id, "Scope ID")
        fields.require_storable(scope, "Scope")
        fields.require_text(scope.parent_id, "Scope parent_id")
        self._check_attachments(None, ())
        for binding in scope.bindings:
            self._check_attachments(binding, ())
        current = self._get("scope", scope.id)
        if scope.revision == 0 and current is not None:
            raise Conflict(f"Scope {scope.id!r} already exists")
        if scope.revision != 0:
            if current is None:
                raise NotFound(f"Scope {scope.id!r} does not exist")
            if scope.revision != current.revision:
                raise Conflict(
                    f"Scope {scope.id} is at revision {current.revision}, not {scope.revision}"
                )
        self._check_scope_parent(scope)
        stored = replace(
            scope,
            revision=current.revision + 1 if current else 1,
            created_at=current.created_at if current else self._now,
            updated_at=self._now,
        )
        self._put("scope", stored, create=current is None)
        return stored

    def _check_scope_parent(self, scope: Scope) -> None:
        parent_id = scope.parent_id
        seen = {scope.id}
        while parent_id:
            if parent_id in seen:
                raise Invalid(f"Scope {scope.id} parent chain would form a cycle")
            seen.add(parent_id)
            parent = self._get("scope", parent_id)
            if parent is None:
                raise NotFound(f"parent Scope {parent_id!r} does not exist")
            parent_id = parent.parent_id

    def scope(self, scope_id: str) -> Scope:
        self._check()
        scope = self._get("scope", scope_id)
        if scope is None:
            raise NotFound(f"Scope {scope_id!r} does not exist")
        return scope

    def scopes(self) -> list[Scope]:
        self._check()
        return self._list("scope")

"""A Scope and its descendants, for the "within" filter and the dashboards.

Scopes are configuration (a few dozen, not history), so a page reads them all in its
View (``tx.scopes()``, one query) and walks the tree in Python. The walk stops
``SUBTREE_DEPTH`` levels below the root: that bounds the ``IN`` list every query of
the page carries, and a tree deeper than that is a modelling mistake worth showing
rather than silently following. Scopes below the bound are counted in ``cut`` so the
page can say what it left out. Parent chains are acyclic (``put_scope`` refuses a
cycle), and the walk keeps a visited set anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from storage import Scope

SUBTREE_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Subtree:
    root: str
    ids: frozenset[str]  # the root and its descendants, at most SUBTREE_DEPTH below it
    cut: int  # descendants deeper than that, left out
    children: tuple[str, ...]  # the root's direct children, by ID


def children_of(scopes: Iterable[Scope]) -> dict[str, list[str]]:
    """Child Scope IDs by parent ID, each list sorted."""
    out: dict[str, list[str]] = {}
    for scope in scopes:
        out.setdefault(scope.parent_id, []).append(scope.id)
    for ids in out.values():
        ids.sort()
    return out


def subtree(scopes: Iterable[Scope], root: str, depth: int = SUBTREE_DEPTH) -> Subtree:
    """``root`` and its descendants down to ``depth`` levels. A root that names no
    Scope is its own subtree (it selects the Work that names it, i.e. none)."""
    below = children_of(scopes)
    ids, level, seen = {root}, [root], {root}
    for _ in range(depth):
        level = [c for parent in level for c in below.get(parent, []) if c not in seen]
        seen.update(level)
        ids.update(level)
    cut = 0
    while level:  # count what lies below the bound without keeping it
        level = [c for parent in level for c in below.get(parent, []) if c not in seen]
        seen.update(level)
        cut += len(level)
    return Subtree(root, frozenset(ids), cut, tuple(below.get(root, [])))


def ancestors(scopes: Iterable[Scope], scope_id: str) -> list[str]:
    """The IDs above ``scope_id``, the top-level Scope first."""
    parent = {s.id: s.parent_id for s in scopes}
    out: list[str] = []
    current = parent.get(scope_id, "")
    while current and current not in out and len(out) < 64:
        out.append(current)
        current = parent.get(current, "")
    return out[::-1]

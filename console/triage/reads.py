"""The Errors page's read: the error groups of the failed and exhausted Work a Work
list filter selects, with the links each group opens, in one ``storage.view``."""

from __future__ import annotations

from dataclasses import dataclass, replace

from django.urls import reverse

from console.polling import polled_view
from console.works.filters import WorkFilter
from console.works.reads import within
from storage import ErrorGroup, Tx, WorkState

# Groups shown at most: the largest; the page says how many more there are.
GROUPS_SHOWN = 100


@dataclass(frozen=True, slots=True)
class GroupRow:
    """One error group and the lists and bulk actions it links to."""

    group: ErrorGroup
    kinds: list[tuple[str, int]]  # largest first
    all_url: str  # every Work in the group, whatever its state
    failed_url: str
    exhausted_url: str
    retry_url: str  # the bulk retry of its exhausted Work (failed Work is terminal)
    cancel_url: str


@dataclass(frozen=True, slots=True)
class ErrorsPage:
    now: int
    stamp: str
    rows: list[GroupRow]
    total_groups: int


def group_row(f: WorkFilter, group: ErrorGroup) -> GroupRow:
    """``group``'s links, each keeping ``f``'s other filters (Scope, kind, time)."""
    base = replace(f, error=group.key, states=(), exhausted=False)
    exhausted = replace(base, exhausted=True)
    home, bulk = reverse("home"), reverse("bulk_action")
    return GroupRow(
        group=group,
        kinds=sorted(group.kinds.items(), key=lambda kv: (-kv[1], kv[0])),
        all_url=home + base.querystring(),
        failed_url=home + replace(base, states=(WorkState.FAILED,)).querystring(),
        exhausted_url=home + exhausted.querystring(),
        retry_url=bulk + exhausted.querystring([("do", "retry-all")]),
        cancel_url=bulk + exhausted.querystring([("do", "cancel-all")]),
    )


def read_error_groups(f: WorkFilter, seen: str = "") -> ErrorsPage | None:
    """The groups of ``f``'s failed and exhausted Work, largest first. Queries: the
    stamp (2), the Scopes when ``within`` is set (1), the groups (1)."""

    def build(tx: Tx, stamp: str) -> ErrorsPage:
        groups = tx.error_groups(f.query(scope_ids=within(tx, f)))
        rows = [group_row(f, g) for g in groups[:GROUPS_SHOWN]]
        return ErrorsPage(now=tx.now, stamp=stamp, rows=rows, total_groups=len(groups))

    return polled_view(seen, build)

"""The Errors page's read: the error groups of the failed and exhausted Work a Work
list filter selects, with the links each group opens, and how many failed and
exhausted Work there are in all (the dashboard's figures), so the page accounts for
every one: what no group holds, and what groups past the shown ones hold, are rows
of their own. One ``storage.view``."""

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
class Remainder:
    """Failed and exhausted Work outside the shown groups: in groups past the largest
    ``GROUPS_SHOWN`` (``groups`` of them), or in no group at all."""

    groups: int
    failed: int
    exhausted: int
    failed_url: str
    exhausted_url: str

    @property
    def count(self) -> int:
        return self.failed + self.exhausted


@dataclass(frozen=True, slots=True)
class ErrorsPage:
    now: int
    stamp: str
    rows: list[GroupRow]
    total_groups: int
    failed: int  # every failed Work the filter selects
    exhausted: int  # every exhausted Work it selects: the dashboard's tile
    more: Remainder | None  # the groups past the shown ones
    ungrouped: Remainder | None  # Work in no group (none: every one is in a group)

    @property
    def count(self) -> int:
        return self.failed + self.exhausted


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


def remainder(f: WorkFilter, groups: list[ErrorGroup], failed: int, exhausted: int) -> Remainder:
    """What of ``failed`` and ``exhausted`` Work ``groups`` leave out, with the lists
    of ``f``'s failed and exhausted Work (no filter selects "no group")."""
    home = reverse("home")
    plain = replace(f, error="", states=(), exhausted=False)
    return Remainder(
        groups=len(groups),
        failed=failed - sum(g.failed for g in groups),
        exhausted=exhausted - sum(g.exhausted for g in groups),
        failed_url=home + replace(plain, states=(WorkState.FAILED,)).querystring(),
        exhausted_url=home + replace(plain, exhausted=True).querystring(),
    )


def read_error_groups(f: WorkFilter, seen: str = "") -> ErrorsPage | None:
    """The groups of ``f``'s failed and exhausted Work, largest first, and their totals.
    Queries: the stamp (none: the View's snapshot read it), the Scopes when ``within``
    is set (1), the groups (1), the totals (the Work facets of the filter, 1)."""

    def build(tx: Tx, stamp: str) -> ErrorsPage:
        query = f.query(scope_ids=within(tx, f))
        groups = tx.error_groups(query)
        facets = tx.work_facets(query)
        failed, exhausted = facets.state.get(WorkState.FAILED.value, 0), facets.exhausted
        shown, past = groups[:GROUPS_SHOWN], groups[GROUPS_SHOWN:]
        more = remainder(f, [], sum(g.failed for g in past), sum(g.exhausted for g in past))
        ungrouped = remainder(f, groups, failed, exhausted)
        return ErrorsPage(
            now=tx.now,
            stamp=stamp,
            rows=[group_row(f, g) for g in shown],
            total_groups=len(groups),
            failed=failed,
            exhausted=exhausted,
            more=replace(more, groups=len(past)) if past else None,
            ungrouped=ungrouped if ungrouped.count else None,
        )

    return polled_view(seen, build)

"""What the simulated supervisor runs: a few packages, their deployments and aliases,
and each invocation's plan.

The deployments have fixed IDs (``dep-demo.<package>.<version>``), so every simulator
run and every seed finds the same catalog; ``ensure_catalog`` creates what is missing
and never changes what an operator changed (a deactivated deployment, a repointed
alias). A plan is derived from the invocation's intent digest (itself a digest of the
seeded input), so a supervisor that restarts finds the same plan for a workflow it did
not admit, and a seed always gives the same fates.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass
from decimal import Decimal

from storage.routed.enums import DeploymentStatus
from storage.routed.errors import AlreadyExists, CASConflict, RoutedNotFound
from storage.routed.ids import DeploymentID
from storage.routed.records import AliasRecord, DeploymentRecord
from storage.routed.store import RoutedStore

CALLERS = ("svc:reports", "svc:ingest-cron", "user:dana")
PUBLISHER = "sim:release-bot"

# Bounds: live (nonterminal) workflows at once; the supervisor admits no more above it,
# so `make run` left for hours keeps a shift's worth of live runs.
MAX_LIVE = 10
BURST = 5  # admissions on the first tick of a fresh store
ADMIT_MEAN = 0.15  # admissions per tick afterwards (while under MAX_LIVE): about 5 live
REPLAY_SHARE = 0.12  # of admissions: a caller resends an earlier request (same key)
CONFLICT_SHARE = 0.06  # of admissions: an earlier key with another input (refused)

LEASE_MS = 20_000  # each attempt's lease; renewed at every step
MINUTE_MS = 60_000
# Active-time ceilings are minutes, so an operator can catch a workflow near its
# ceiling (the console's "near" is its last 20%) and amend or pause it by hand. Far:
# what callers ask for by default, well above a plan's work (under a minute a stage).
ACTIVE_MS = 20 * MINUTE_MS
STEP_SECONDS = (2.5, 6.0)  # simulated seconds between two steps of one workflow
RECOVER_AFTER_MS = 4_000  # an expired lease is recovered this long after it lapsed
OPERATOR_WAIT_TICKS = 30  # how long a run waits for an operator's "continue"


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    digests: dict[str, str]
    max_runs: int = 0
    active: bool = True

    @property
    def deployment_id(self) -> DeploymentID:
        return DeploymentID(f"dep-demo.{self.name}.{self.version}")


def _digest(what: str) -> str:
    return f"sha256:{what}"


PACKAGES = (
    Package("summarise", "1.0.0", {"stage:0": _digest("summarise-1.0.0")}, max_runs=4),
    Package("summarise", "1.1.0", {"stage:0": _digest("summarise-1.1.0")}, max_runs=6),
    Package(
        "ingest",
        "2.0.0",
        {
            "stage:0": _digest("ingest-2.0.0"),
            "stage:1:ingest.transform@2.0.0": _digest("transform-2.0.0"),
            "stage:2:ingest.load@2.0.0": _digest("load-2.0.0"),
            "service:search:search.mcp@1.4.0": _digest("search-1.4.0"),
        },
        max_runs=4,
    ),
    Package(
        "fanout",
        "1.0.0",
        {"stage:0": _digest("fanout-1.0.0"), "child:fanout.item@1.0.0": _digest("item-1.0.0")},
        max_runs=3,
    ),
    # Retired: admissions against it are refused (DeploymentInactive), and logged.
    Package("legacy", "0.9.0", {"stage:0": _digest("legacy-0.9.0")}, active=False),
)
BY_ID = {p.deployment_id: p for p in PACKAGES}

# alias -> its targets in order (created at the first, repointed through the rest),
# so the console shows a history of generations.
ALIASES: dict[str, tuple[DeploymentID, ...]] = {
    "summarise": (PACKAGES[0].deployment_id, PACKAGES[1].deployment_id),
    "ingest": (PACKAGES[2].deployment_id,),
    "fanout": (PACKAGES[3].deployment_id,),
}

# What callers ask for: a deployment ID or an alias, with its weight.
REFS: tuple[tuple[str, float], ...] = (
    ("summarise", 3.0),
    (PACKAGES[0].deployment_id, 1.0),
    ("ingest", 2.5),
    ("fanout", 1.5),
    (PACKAGES[4].deployment_id, 0.3),
)

FATES: tuple[tuple[str, float], ...] = (
    ("succeed", 4.0),
    ("retry", 1.2),  # an attempt fails once, the supervisor retries it
    ("fail", 1.0),  # fails for good: a candidate for restart
    ("operator", 0.8),  # the plan no longer fits: NEEDS_REPLAN until an operator continues
    ("stall", 0.8),  # the worker stops renewing; its lease expires and is recovered
    ("expire", 0.7),  # a tight active-time ceiling: the workflow expires
    ("budget", 0.7),  # a tight spend ceiling: the workflow exceeds its budget
    ("artifacts", 0.8),  # the worker also tries a symlink and an oversized file
)


@dataclass(frozen=True)
class Plan:
    fate: str
    steps: int  # steps per node
    trouble_at: int  # the step at which the fate strikes (1-based)
    children: int  # parent/child workflows: child runs in the batch
    join: str  # their join policy
    child_fails: bool  # one child fails (join_all then fails the batch)


# Near: a tight ceiling (3 minutes, or 5 for the longer pipelines) whose work outruns
# it (``steps_for``): its last minute or so is "near its ceiling", and it expires
# unless an operator amends it (or pauses it: a paused workflow accrues nothing).
EXPIRE_MS = 3 * MINUTE_MS
EXPIRE_LONG_MS = 5 * MINUTE_MS
# Far: each reference's own ceiling when it is not tight.
REF_ACTIVE_MS: dict[str, int] = {
    "summarise": 10 * MINUTE_MS,
    PACKAGES[0].deployment_id: 15 * MINUTE_MS,
    "ingest": 20 * MINUTE_MS,
    "fanout": 30 * MINUTE_MS,
}
TIGHT_SPEND = "0.30"  # a spend ceiling three steps exceed
LONG_SPEND = "50.00"  # what the long work of a tight active-time ceiling may spend


def plan_for(intent_digest: str, restarted: bool) -> Plan:
    """The plan of an invocation, from its intent digest (a digest of the
    seeded input): the same for every supervisor that meets it, whoever admitted it.
    A restarted workflow runs clean: the operator restarted it once the cause was
    fixed. Tight ceilings need no fate: the supervisor enforces every ceiling."""
    # Seeded pseudo-randomness is the point here: a simulation, not security.
    rng = random.Random(f"routed/{intent_digest}")  # noqa: S311
    fate = rng.choices([f for f, _ in FATES], [w for _, w in FATES])[0]
    steps = rng.randint(3, 6)
    return Plan(
        fate="succeed" if restarted else fate,
        steps=steps,
        trouble_at=rng.randint(2, steps),
        children=rng.randint(2, 4),
        join=rng.choice(("join_all", "all_first")),
        child_fails=not restarted and rng.random() < 0.3,
    )


def ceilings_for(kind: str, ref: str = "") -> tuple[int, str]:
    """(active-time ceiling in ms, spend ceiling in USD) an invocation of ``ref``
    asks for: near for the tight kind ("expire"), the reference's far one otherwise."""
    far = REF_ACTIVE_MS.get(ref, ACTIVE_MS)
    if kind == "expire":
        near = EXPIRE_LONG_MS if ref in ("ingest", "fanout") else EXPIRE_MS
        return near, LONG_SPEND
    if kind == "budget":
        return far, TIGHT_SPEND
    return far, "5.00"


def steps_for(plan: Plan, initial_active_ms: int, stages: int = 1) -> int:
    """The steps of a node's work. A tight ceiling (at most ``EXPIRE_LONG_MS``) gets
    more work than it allows, whatever the plan: a step a second (faster than any
    supervisor steps: 2.5 s at least, a test's drive 2 s) still outruns it, so the
    workflow expires unless an operator raises it in time (from its initial value: an
    amendment does not add work), shared among the workflow's ``stages``; at the
    slowest step (6 s) the whole work takes six times its ceiling (18 or 30 minutes)."""
    if 0 < initial_active_ms <= EXPIRE_LONG_MS:
        return initial_active_ms // 1000 // max(1, stages) + plan.steps
    return plan.steps


COST_PER_STEP = Decimal("0.12")  # simulated model spend of one step, in USD


def ensure_catalog(routed: RoutedStore) -> None:
    """Create the deployments and aliases a fresh store lacks (idempotent)."""
    known = {d.record.deployment_id for d in routed.view(lambda r: r.list_deployments())}
    for package in PACKAGES:
        if package.deployment_id in known:
            continue
        dep = DeploymentRecord(
            deployment_id=package.deployment_id,
            package_name=package.name,
            package_version=package.version,
            max_concurrent_runs=package.max_runs,
            bundle_digest=_digest(f"bundle-{package.name}-{package.version}"),
            policy_digest=_digest("policy-demo"),
            image_lock_digest=_digest(f"image-{package.name}"),
            provenance_digest=_digest(f"provenance-{package.name}-{package.version}"),
            created_by=PUBLISHER,
            status=DeploymentStatus.ACTIVE if package.active else DeploymentStatus.INACTIVE,
            nested_package_digests=dict(package.digests),
        )
        with contextlib.suppress(AlreadyExists):  # another simulator made it first
            routed.transact(lambda r, d=dep: r.create_deployment(d))
    for alias, targets in ALIASES.items():
        try:
            routed.view(lambda r, a=alias: r.resolve_alias(a))
            continue  # present: an operator may have repointed it since
        except RoutedNotFound:
            pass
        generation = 0
        for target in targets:
            try:
                record = AliasRecord(alias, target, BY_ID[target].version, PUBLISHER, generation)
                stored = routed.transact(lambda r, a=record: r.compare_and_swap_alias(a))
            except CASConflict:
                break  # another simulator made it first
            generation = stored.generation

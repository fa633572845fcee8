"""What the demo world looks like: its Scopes, the kinds of Work and the flows behind
them, shared by the simulated runtime and the bulk generator.

Each flow names the external source that starts it, the Event type that creates its
Work, the Scope it lands in and the binding its attempts pin. The plans below are the
scripts the simulated workers follow; the runtime draws one per claim.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from storage import Binding, NotFound, Scope, Tx

# Sources of the runtime's own Events (timer fires). core.manual belongs to operators.
TIMER_SOURCE = "core.timer"
MANUAL_SOURCES = frozenset({"core.manual", "core.action"})

SCOPES: tuple[Scope, ...] = (
    Scope(id="acme", name="Acme Corp", config={"region": "eu-west-1"}),
    Scope(
        id="acme/billing",
        parent_id="acme",
        name="Billing",
        bindings=(Binding("charge-worker", "python"), Binding("refund-worker", "python")),
        secret_refs=("stripe/acct_1",),
    ),
    Scope(
        id="acme/deploys",
        parent_id="acme",
        name="Deploys",
        bindings=(Binding("deployer", "container"), Binding("deploy-step", "container")),
    ),
    Scope(id="globex", name="Globex", config={"region": "us-east-1"}),
    Scope(
        id="globex/reports",
        parent_id="globex",
        name="Reports",
        bindings=(Binding("reporter", "python"),),
    ),
    Scope(
        id="globex/ingest",
        parent_id="globex",
        name="Ingest",
        bindings=(Binding("ingester", "container", ("AWS_REGION",)),),
    ),
    Scope(id="initech", name="Initech", bindings=(Binding("triage", "shell"),)),
)


@dataclass(frozen=True, slots=True)
class Flow:
    """One kind of Work and the external traffic that drives it."""

    kind: str
    scope: str
    source: str  # the Event source and the correlation key source
    opens: str  # the Event type that creates the Work
    key_prefix: str
    binding: Binding
    weight: int  # share of new external objectives (0: created another way)
    resumes: bool = True  # parked attempts resume (False: terminal waiting, attempt N+1)
    wake_types: tuple[str, ...] = ()  # Event types its Wait listens for
    follow_up: float = 0.0  # chance the source later sends a waking Event
    child: bool = False  # created by a parent's derived Event


FLOWS: tuple[Flow, ...] = (
    Flow(
        kind="billing.charge",
        scope="acme/billing",
        source="stripe:acct_1",
        opens="stripe.charge.created",
        key_prefix="ch_",
        binding=Binding("charge-worker", "python"),
        weight=4,
        wake_types=("stripe.charge.succeeded", "stripe.charge.failed"),
        follow_up=0.75,
    ),
    Flow(
        kind="billing.refund",
        scope="acme/billing",
        source="stripe:acct_1",
        opens="stripe.refund.created",
        key_prefix="re_",
        binding=Binding("refund-worker", "python"),
        weight=2,
    ),
    Flow(
        kind="deploy.service",
        scope="acme/deploys",
        source="github:acme",
        opens="github.deployment.created",
        key_prefix="deploy-",
        binding=Binding("deployer", "container"),
        weight=2,
        wake_types=("deploy.step.finished",),
    ),
    Flow(
        kind="deploy.step",
        scope="acme/deploys",
        source="github:acme",
        opens="deploy.step.requested",
        key_prefix="",
        binding=Binding("deploy-step", "container"),
        weight=0,
        child=True,
    ),
    Flow(
        kind="report.nightly",
        scope="globex/reports",
        source="cron",
        opens="cron.fired",
        key_prefix="report.nightly/",
        binding=Binding("reporter", "python"),
        weight=0,
    ),
    Flow(
        kind="ingest.batch",
        scope="globex/ingest",
        source="s3:globex-data",
        opens="s3.object.created",
        key_prefix="batch-",
        binding=Binding("ingester", "container", ("AWS_REGION",)),
        weight=3,
    ),
    Flow(
        kind="support.ticket",
        scope="initech",
        source="zendesk:initech",
        opens="zendesk.ticket.created",
        key_prefix="ticket-",
        binding=Binding("triage", "shell"),
        weight=2,
        resumes=False,
        wake_types=("zendesk.ticket.replied",),
        follow_up=0.65,
    ),
)
FLOW_BY_KIND = {f.kind: f for f in FLOWS}
FLOW_BY_OPENER = {f.opens: f for f in FLOWS}
EXTERNAL_FLOWS = tuple(f for f in FLOWS if f.weight)

# Traffic a router drops on purpose (pings, events nobody subscribes to).
NOISE = (("github:acme", "github.ping"), ("stripe:acct_1", "stripe.balance.available"))
CHILD_STEPS = ("build", "migrate", "rollout", "smoke-test")
SCHEDULE_TIMER = "schedule/report.nightly"
SCHEDULE_SCOPE = "globex/reports"

# Retry policy: up to MAX_FAILURES failed attempts are retried automatically after
# BACKOFF * 2**(n-1) seconds; after that the Work stays ready with no timer
# ("retries exhausted") until an operator retries it.
MAX_FAILURES = 3
BACKOFF_SECONDS = 5.0
LEASE_SECONDS = 20.0
SCHEDULE_PERIOD_SECONDS = 30.0

# Plan operations. "abandon" stops renewing: the lease expires and a later scan
# recovers the attempt with a higher epoch.
TERMINAL_OPS = frozenset({"complete", "fail", "fail_final", "handoff", "abandon"})
ABANDON_CHANCE = 0.06

# The first tick also sends a few refunds of a negative amount that every attempt
# rejects the same way: within a minute of `make run` there is retry-exhausted Work
# sharing one error, so the operator's loop (read the failure, retry or cancel) is
# there from the start. The message carries IDs and numbers, as real errors do.
POISON_AT_START = 4
POISON_KIND = "billing.refund"


def poison_failure(context: bytes) -> str:
    """The error every attempt of a poisoned refund ends with, or "" when the Work's
    context (its opening payload) is not one."""
    try:
        body = json.loads(context)
    except ValueError:
        return ""
    if not isinstance(body, dict) or not body.get("poison"):
        return ""
    return (
        f"refund rejected by stripe: amount {body.get('amount')} is negative "
        f"(refund {body.get('id')}, request req_{body.get('request')})"
    )


# Once more Work than this is retry-exhausted, a simulated teammate cancels the
# longest-stuck (as `core.manual` Events, like an operator's), so the pile of a long
# `make run` stays about this size instead of growing without bound.
EXHAUSTED_PILE = 40
TIDY_EVERY_TICKS = 20
TIDY_AT_MOST = 10  # cancels per pass
TEAMMATE = "sim-teammate"

FAILURE_MESSAGES = (
    "upstream returned 502 Bad Gateway",
    "connection reset by peer",
    "exit status 1: assertion failed in step",
    "deadline exceeded after 30s",
    "rate limited (429), giving up",
)


def _pick(rng: random.Random, weighted: dict[str, int]) -> str:
    ops = list(weighted)
    return rng.choices(ops, weights=[weighted[o] for o in ops])[0]


def plan_for(kind: str, phase: str, rng: random.Random) -> list[str]:
    """The steps a worker performs for one claim. ``phase`` is "start" (a fresh or
    recovered attempt), "resumed" (woken by a success) or "resumed_failed"."""
    if phase == "resumed_failed":
        return ["work", "log", "fail_final"]
    resumed = phase == "resumed"
    if kind == "billing.charge":
        plan = (
            ["work", "report", _pick(rng, {"complete": 85, "fail": 10, "handoff": 5})]
            if resumed
            else ["work", "log", "park"]
        )
    elif kind == "billing.refund":
        terminal = {"complete": 60, "fail": 25, "handoff": 5, "fail_final": 10}
        plan = ["work", "log", _pick(rng, terminal)]
    elif kind == "deploy.service":
        plan = (
            ["work", "report", _pick(rng, {"complete": 85, "fail": 15})]
            if resumed
            else ["work", "log", "spawn"]
        )
    elif kind == "deploy.step":
        plan = ["work", "log", _pick(rng, {"complete": 80, "fail": 20})]
    elif kind == "report.nightly":
        plan = ["work", "report", "log", _pick(rng, {"complete": 90, "fail": 10})]
    elif kind == "ingest.batch":
        plan = ["work", "work", _pick(rng, {"handoff": 35, "complete": 45, "fail": 20})]
    elif kind == "support.ticket":
        plan = (
            ["work", _pick(rng, {"complete": 90, "fail": 10})]
            if resumed
            else ["work", "log", "park_terminal"]
        )
    else:  # a kind this demo does not know (someone else's Work): finish it
        plan = ["work", "complete"]
    if rng.random() < ABANDON_CHANCE:
        plan[rng.randrange(1, len(plan))] = "abandon"
        plan = plan[: plan.index("abandon") + 1]
    return plan


def ensure_scopes(tx: Tx) -> None:
    """Create the demo Scopes that do not exist yet (parents first)."""
    for scope in SCOPES:
        try:
            tx.scope(scope.id)
        except NotFound:
            tx.put_scope(scope)


def next_run(tx: Tx, namespace: str) -> int:
    """Count runs in KV: mixed into seeds so a rerun never reuses an ID or delivery."""
    try:
        run = int(tx.kv_get(namespace, "runs")) + 1
    except NotFound:
        run = 1
    tx.kv_put(namespace, "runs", str(run).encode())
    return run

"""The store's figures as Prometheus metric families, read at scrape time.

``StoreCollector.collect`` runs ``read_figures`` (one View) on every scrape and turns
its figures into gauges; nothing is cached between scrapes, so two scrapes never
disagree with the store, and prometheus_client's registry never reads the store
outside a scrape (``describe`` names the families without reading).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from console.metrics.reads import Figures, read_figures


def _gauge(name: str, doc: str, labels: list[str] | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


def families(f: Figures) -> list[Metric]:
    """Every store metric of ``f`` (docs/metrics.md lists them)."""
    work = _gauge("conduit_work", "Work in the store, by state.", ["state"])
    for state, n in f.work_by_state.items():
        work.add_metric([state], n)
    kind = _gauge(
        "conduit_live_work_by_kind",
        "Live Work by kind: the METRICS_TOP_N largest kinds, the rest under (other).",
        ["kind"],
    )
    for k, n in f.live_by_kind.items():
        kind.add_metric([k], n)
    scope = _gauge(
        "conduit_live_work_by_scope",
        "Live Work by Scope: the METRICS_TOP_N largest Scopes, the rest under (other); "
        "(none) is Work without a Scope.",
        ["scope"],
    )
    for s, n in f.live_by_scope.items():
        scope.add_metric([s], n)
    waits = _gauge(
        "conduit_active_waits",
        "Active Waits created more than older_than_seconds ago (0: every active Wait).",
        ["older_than_seconds"],
    )
    for age, n in f.waits_older_than.items():
        waits.add_metric([str(age)], n)
    workflows = _gauge("conduit_routed_workflows", "Routed workflows, by status.", ["status"])
    for status, n in f.workflows_by_status.items():
        workflows.add_metric([status], n)
    single = [
        ("conduit_exhausted_work", "Ready Work whose attempts are exhausted.", f.exhausted),
        (
            "conduit_oldest_ready_work_age_seconds",
            "How long the Work ready longest has been ready (0: none is ready).",
            f.oldest_ready_seconds,
        ),
        (
            "conduit_overdue_timers",
            "Timers due more than conduit_overdue_grace_seconds ago and not fired.",
            f.overdue_timers,
        ),
        (
            "conduit_overdue_grace_seconds",
            "How late a Timer may be before it counts as overdue (CONSOLE_OVERDUE_GRACE_SECONDS).",
            f.grace_seconds,
        ),
        (
            "conduit_expired_leases",
            "Running attempts whose lease has expired.",
            f.expired_leases,
        ),
        ("conduit_running_executions", "Running attempts (Executions).", f.running_executions),
    ]
    out: list[Metric] = [work, kind, scope, waits, workflows]
    for name, doc, value in single:
        gauge = _gauge(name, doc)
        gauge.add_metric([], value)
        out.append(gauge)
    return out


class StoreCollector(Collector):
    def __init__(self, read: Callable[[], Figures] = read_figures) -> None:
        self.read = read

    def collect(self) -> Iterator[Metric]:
        yield from families(self.read())

    def describe(self) -> Iterator[Metric]:
        return iter(())

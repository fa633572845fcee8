"""What the console process counts itself: operator actions and request latency.

With ``PROMETHEUS_MULTIPROC_DIR`` set (scripts/run.sh sets it for its gunicorn
workers), prometheus_client keeps these in files under that folder, one per process,
and /metrics sums every worker's (``console.metrics.views``); without it they live in
this process's memory (a single process: tests, ``runserver``). docs/metrics.md says
which is which.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

# This process's own metrics: registered here, never in prometheus_client's global
# REGISTRY, so /metrics chooses what it adds (the multiprocess collector or these).
OWN = CollectorRegistry(auto_describe=True)

ACTIONS = Counter(
    "conduit_operator_actions",
    "Operator actions the console ran, by action and result.",
    ["action", "result"],
    registry=OWN,
)

# Seconds; a page answers in a few ms to a few hundred, a bulk action in seconds.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUEST_SECONDS = Histogram(
    "conduit_console_request_duration_seconds",
    "Time the console took to answer a request, by resolved view, method and status.",
    ["view", "method", "status"],
    buckets=LATENCY_BUCKETS,
    registry=OWN,
)

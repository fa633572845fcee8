"""/metrics (issue 31): the store's figures read in one View at scrape time, checked by
prometheus_client's own parser against seeded data; who may scrape; a pinned statement
count that does not grow with the store."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from ipaddress import ip_network

import pytest
from django.db import connections
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from console.actions.common import new_token
from console.actions.observed import bulk_label
from console.actions.routed import RoutedAction
from console.metrics.reads import OTHER, read_figures, top
from storage.ops.manual import Action
from tests.console import factories as f
from tests.console import routedfactories as rtf
from tests.console.conftest import DB

pytestmark = DB

LOCAL = {"REMOTE_ADDR": "127.0.0.1"}


def scrape(client: Client, **headers: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape by (name, sorted labels), through the reference parser."""
    response = client.get("/metrics", **(LOCAL | headers))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    out = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            out[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return out


def seed() -> None:
    f.scope("acme")
    f.scope("acme/eu", parent="acme")
    f.work("w-ready-1", kind="mail.send", scope_id="acme")
    f.work("w-ready-2", kind="mail.send", scope_id="acme/eu")
    f.running("w-running", scope_id="acme")
    f.running("w-expired", lease=0.000_001)
    f.parked("w-parked", scope_id="acme")
    f.exhausted("w-exhausted")
    f.failed("w-failed")
    f.completed("w-done")
    f.timer("t-late", fire_in=-3600)  # an hour late: overdue under any grace below that
    f.timer("t-soon", fire_in=-1)  # within the grace: not overdue
    dep = rtf.deployment()
    rtf.running(dep.deployment_id)
    rtf.failed(dep.deployment_id)


def test_it_reports_the_seeded_store(client, settings):
    settings.CONSOLE_OVERDUE_GRACE_SECONDS = 30
    seed()

    got = scrape(client)

    def value(name: str, **labels: str) -> float:
        return got[name, tuple(sorted(labels.items()))]

    assert value("conduit_work", state="ready") == 3  # two plain, one exhausted
    assert value("conduit_work", state="running") == 2
    assert value("conduit_work", state="waiting") == 1
    assert value("conduit_work", state="failed") == 1
    assert value("conduit_work", state="completed") == 1
    assert value("conduit_work", state="cancelled") == 0
    assert value("conduit_live_work_by_kind", kind="mail.send") == 2
    assert value("conduit_live_work_by_kind", kind=f.KIND) == 4
    assert value("conduit_live_work_by_scope", scope="acme") == 3
    assert value("conduit_live_work_by_scope", scope="acme/eu") == 1
    assert value("conduit_live_work_by_scope", scope="(none)") == 2
    assert value("conduit_exhausted_work") == 1
    assert value("conduit_running_executions") == 2
    assert value("conduit_expired_leases") == 1
    assert value("conduit_overdue_timers") == 1
    assert value("conduit_overdue_grace_seconds") == 30
    assert value("conduit_active_waits", older_than_seconds="0") == 1
    assert value("conduit_active_waits", older_than_seconds="3600") == 0
    assert value("conduit_routed_workflows", status="RUNNING") == 1
    assert value("conduit_routed_workflows", status="FAILED") == 1
    assert value("conduit_oldest_ready_work_age_seconds") >= 0


def test_the_figures_follow_the_views_time():
    f.work("w-ready")
    f.parked("w-parked")
    f.timer("t1", fire_in=120)
    base = read_figures()

    later = read_figures(now=base.now + 7200 * 10**9)

    assert later.oldest_ready_seconds >= 7200
    assert later.waits_older_than[3600] == 1
    assert later.waits_older_than[86_400] == 0
    # t1 (due at +120 s) and the Wait's timeout (+3600 s), each late by more than the grace
    assert later.overdue_timers == 2
    assert base.overdue_timers == 0
    assert later.expired_leases == 0  # the parked attempt is not running


def test_kinds_and_scopes_beyond_the_top_n_are_other(client, settings):
    settings.METRICS_TOP_N = 2
    for i, n in enumerate((3, 2, 1, 1)):
        for j in range(n):
            f.work(f"w{i}-{j}", kind=f"kind.k{i}", scope_id="")

    got = scrape(client)
    kinds = {dict(labels)["kind"]: v for (name, labels), v in got.items() if name.endswith("kind")}

    assert kinds == {"kind.k0": 3, "kind.k1": 2, OTHER: 2}


def test_top_keeps_n_and_sums_the_rest():
    assert top({"a": 1, "b": 5, "c": 5, "d": 0}, 2) == {"b": 5, "c": 5, OTHER: 1}
    assert top({"": 4}, 3, {"": "(none)"}) == {"(none)": 4}


@pytest.mark.parametrize("works", [3, 30])
def test_a_scrape_reads_a_fixed_number_of_statements(client, django_assert_num_queries, works):
    """BEGIN, the View's snapshot, Work by state, live by kind and Scope, the oldest
    ready, six Wait ages, workflows by status, exhausted, overdue, expired and running
    attempts, COMMIT: whatever the store holds (the routed store is opened first)."""
    f.scope("acme")
    for i in range(works):
        f.work(f"w{i}", kind=f"kind.{i % 7}", scope_id="acme" if i % 2 else "")
    f.running("r1")
    read_figures()  # the routed store's stamp check, once per process
    with django_assert_num_queries(17, connection=connections["view"]):
        scrape(client)


def test_a_stranger_is_refused_and_nothing_is_read(client, settings, django_assert_num_queries):
    settings.METRICS_NETWORKS = []
    settings.METRICS_TOKEN = "s3cret-token"
    with django_assert_num_queries(0, connection=connections["view"]):
        assert client.get("/metrics", **LOCAL).status_code == 403
        wrong = {"HTTP_AUTHORIZATION": "Bearer nope"}
        assert client.get("/metrics", **LOCAL, **wrong).status_code == 403


def test_the_token_admits_from_anywhere(client, settings):
    settings.METRICS_NETWORKS = []
    settings.METRICS_TOKEN = "s3cret-token"
    auth = {"HTTP_AUTHORIZATION": "Bearer s3cret-token", "REMOTE_ADDR": "203.0.113.9"}
    assert client.get("/metrics", **auth).status_code == 200


def test_no_token_set_means_no_token_is_accepted(client, settings):
    settings.METRICS_NETWORKS = []
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ", **LOCAL).status_code == 403


def test_an_allowed_network_is_the_client_behind_a_trusted_proxy(client, settings):
    """The proxy's own address is not the client: the forwarded one is checked."""
    settings.TRUSTED_PROXIES = [ip_network("10.0.0.1/32")]
    settings.METRICS_NETWORKS = [ip_network("192.0.2.0/24")]
    via = {"REMOTE_ADDR": "10.0.0.1"}
    inside = client.get("/metrics", HTTP_X_FORWARDED_FOR="192.0.2.7", **via)
    outside = client.get("/metrics", HTTP_X_FORWARDED_FOR="198.51.100.7", **via)
    forged = client.get("/metrics", HTTP_X_FORWARDED_FOR="192.0.2.7", REMOTE_ADDR="198.51.100.7")
    assert (inside.status_code, outside.status_code, forged.status_code) == (200, 403, 403)


def test_request_latency_is_labelled_by_view_not_path(as_alice, client):
    f.work("w/with/slashes")
    as_alice.get("/works/w/with/slashes")
    as_alice.get("/no/such/page")

    got = scrape(client)
    views = {
        dict(labels)["view"]
        for (name, labels), _ in got.items()
        if name == "conduit_console_request_duration_seconds_count"
    }

    assert "work_detail" in views
    assert "(unresolved)" in views
    assert not any("/" in v for v in views)


def test_promtool_accepts_the_output(client, as_alice):
    """Prometheus's own linter (Debian's ``prometheus`` package; .ci/run installs it)
    on a scrape of a seeded store with requests counted: no error, no lint warning."""
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool is missing and CI=true: apt-get install -y prometheus")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    seed()
    as_alice.get("/dashboard")
    as_alice.get("/works/w-ready-1")
    body = client.get("/metrics", **LOCAL).content

    checked = subprocess.run(
        [promtool, "check", "metrics"], input=body, capture_output=True, timeout=60, check=False
    )

    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    assert not checked.stdout.strip(), checked.stdout.decode()


def test_operator_actions_are_counted_by_action_and_result(as_alice, client):
    """The counter is the process's: compared before and after, as other tests act too."""
    f.work("w-live")
    f.completed("w-over")
    done = ("conduit_operator_actions_total", (("action", "cancel_work"), ("result", "done")))
    refused = (done[0], (("action", "cancel_work"), ("result", "refused")))
    replay = (done[0], (("action", "cancel_work"), ("result", "duplicate")))
    before = scrape(client)
    form = {"reason": "stop", "token": new_token()}

    as_alice.post("/actions/cancel/w-live", form)
    as_alice.post("/actions/cancel/w-live", form)  # the same form again
    as_alice.post("/actions/cancel/w-over", {"reason": "stop", "token": new_token()})

    after = scrape(client)
    for key in (done, refused, replay):
        assert after[key] - before.get(key, 0) == 1, key


CHILD = """
import os, sys
import django
django.setup()
from console.metrics.instruments import ACTIONS
ACTIONS.labels("cancel_work", "done").inc(int(sys.argv[1]))
"""
SCRAPER = """
import sys
import django
django.setup()
from prometheus_client import generate_latest
from console.metrics.views import registry
sys.stdout.write(generate_latest(registry()).decode())
"""


@pytest.mark.multiprocess
def test_workers_counters_are_summed_in_multiprocess_mode(tmp_path):
    """What gunicorn's workers count (scripts/run.sh sets PROMETHEUS_MULTIPROC_DIR):
    two processes count, a third one's scrape reports their sum."""
    env = os.environ | {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}

    def python(code: str, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode()

    python(CHILD, "2")
    python(CHILD, "3")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(python(SCRAPER))
        for s in family.samples
    }

    key = ("conduit_operator_actions_total", (("action", "cancel_work"), ("result", "done")))
    assert samples[key] == 5
    assert ("conduit_work", (("state", "ready"),)) in samples  # the store's figures too


def test_bulk_labels_name_what_they_act_on_and_stay_bounded():
    work = bulk_label("work", frozenset({"cancel", "retry"}))
    routed = bulk_label("workflow", frozenset({"pause", "resume", "cancel"}))

    assert work({"action": Action.CANCEL}) == "bulk_cancel_work"
    assert routed({"action": RoutedAction.CANCEL}) == "bulk_cancel_workflow"
    assert work({"action": "drop tables"}) == "bulk_unknown_work"

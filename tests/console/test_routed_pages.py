"""The routed-run read pages (issue 18): the Workflows list with its facets, search and
keyset pages, the workflow page, Deployments and aliases, Invocations. Data through
``routedfactories`` (the public store only); queries pinned per page."""

from __future__ import annotations

import os
import re
import time

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from console.routed.reads import read_dashboard_tiles
from storage.routed.enums import ControlCommand, FailureReason, WorkflowStatus
from storage.routed.ids import ID_MAX, InvocationID, WorkflowID
from storage.routed.records import WorkflowRecord
from tests.console import routedfactories as rf
from tests.console.conftest import DB

pytestmark = DB

LIST = reverse("routed_workflows")


def test_the_list_shows_workflows_newest_first_with_their_facets(as_bob):
    dep = rf.deployment("pkg.checkout")
    first, _ = rf.failed(dep.deployment_id, FailureReason.STALL_TIMEOUT)
    second, _ = rf.running(dep.deployment_id)
    body = as_bob.get(LIST).content.decode()
    a, b = first.receipt.workflow_id, second.receipt.workflow_id
    assert body.index(b) < body.index(a)  # newest first
    assert "pkg.checkout@1.0.0" in body
    assert 'id="facet-reason"' in body
    assert "STALL_TIMEOUT" in body


def test_filters_narrow_the_list_in_the_url(as_bob):
    failed, _ = rf.failed(reason=FailureReason.MODEL_RATE_LIMITED)
    running, _ = rf.running()
    body = as_bob.get(LIST, {"status": "FAILED"}).content.decode()
    assert failed.receipt.workflow_id in body
    assert running.receipt.workflow_id not in body
    body = as_bob.get(LIST, {"reason": "MODEL_RATE_LIMITED"}).content.decode()
    assert failed.receipt.workflow_id in body
    assert running.receipt.workflow_id not in body


@pytest.mark.parametrize(
    "params",
    [{"status": "SLEEPING"}, {"reason": "NOPE"}, {"after": "run-x"}, {"size": "7"}, {"alert": "x"}],
)
def test_it_refuses_a_bad_filter_with_400_naming_it(as_bob, params):
    response = as_bob.get(LIST, params)
    assert response.status_code == 400
    assert next(iter(params)) in response.content.decode()


def test_search_finds_a_workflow_by_any_of_its_ids_or_a_prefix(as_bob):
    admission, attempt = rf.running()
    other, _ = rf.running()
    wf = admission.receipt.workflow_id
    for text in (wf, wf[:9], admission.receipt.run_id, attempt.record.attempt_id[:8]):
        body = as_bob.get(LIST, {"q": text}).content.decode()
        assert wf in body, text
        assert other.receipt.workflow_id not in body, text


def test_keyset_pages_walk_every_workflow_once(as_bob):
    dep = rf.deployment()
    ids = [rf.invoke(dep.deployment_id).receipt.workflow_id for _ in range(30)]
    seen: list[str] = []
    url = f"{LIST}?size=25"
    while url:
        body = as_bob.get(url).content.decode()
        seen += re.findall(r'id="row-(wf-[0-9a-f]+)"', body)
        older = re.search(r'rel="next" href="([^"]+)"', body)
        url = LIST + older.group(1).replace("&amp;", "&") if older else ""
    assert seen == list(reversed(ids))


def test_the_list_reads_a_fixed_number_of_queries(as_bob):
    for _ in range(3):
        rf.failed()
    as_bob.get(LIST)  # session, caches
    with CaptureQueriesContext(connections["view"]) as few:
        as_bob.get(LIST)
    for _ in range(5):
        rf.running()
    with CaptureQueriesContext(connections["view"]) as more:
        as_bob.get(LIST)
    assert len(more.captured_queries) == len(few.captured_queries)

    def reading(table: str) -> int:
        return sum(f'"{table}"' in q["sql"] for q in more.captured_queries)

    # The page is one read of the workflow rows; the facets and the count, one read of
    # the workflow tally (benchmark 9: a GROUP BY over the rows grew with them).
    assert reading("conduit_routed_workflow") == 1
    assert reading("conduit_routed_workflow_tally") == 1


def test_the_workflow_page_shows_state_envelope_nodes_attempts_and_history(as_bob):
    admission, attempt = rf.running()
    wf = admission.receipt.workflow_id
    rf.artifact(attempt.record, "out/report.json", b'{"rows": 3}')
    rf.artifact(attempt.record, "log.txt", b"line one\nline two\n")
    rf.journal(attempt.record, 3)
    rf.child_batch(admission)
    rf.control(wf, ControlCommand.PAUSE)
    body = as_bob.get(reverse("routed_workflow", args=[wf])).content.decode()
    assert "pause requested" in body
    assert "operator:alice" in body
    assert 'class="envelope' in body
    assert "remaining of" in body
    assert 'class="node-graph"' in body
    assert 'class="node-list"' in body
    assert "SHA-256 matches" in body
    assert "&quot;rows&quot;: 3" in body
    assert "✓ verified" in body
    assert "3 events" in body
    assert "join_all" in body
    assert "ROUTED CONTROLS" not in body  # the marker is a template comment


def test_a_paused_workflow_shows_its_envelope_frozen(as_bob):
    wf = rf.paused().receipt.workflow_id
    assert rf.routed().view(lambda r: r.get_workflow(wf)).record.status is WorkflowStatus.PAUSED
    body = as_bob.get(reverse("routed_workflow", args=[wf])).content.decode()
    assert "frozen while paused" in body


def test_a_tampered_artifact_and_journal_are_shown_as_such(as_bob):
    admission, attempt = rf.running()
    rf.artifact(attempt.record, "log.txt", b"honest\n")
    rf.journal(attempt.record, 2)
    run_dir = rf.state_dir() / "runs" / attempt.record.run_id
    (run_dir / "artifacts" / "log.txt").write_bytes(b"forged\n")
    events = (run_dir / "control" / attempt.record.attempt_id).glob("*.event")
    event = sorted(events)[-1]  # the last event (beside it, the journal's tail anchor)
    event.chmod(0o600)
    event.write_text(event.read_text().replace("PROGRESS_REF", "SUCCEEDED"))  # HMAC now fails
    body = as_bob.get(
        reverse("routed_workflow", args=[admission.receipt.workflow_id])
    ).content.decode()
    assert "SHA-256 does not match" in body
    assert "✗ invalid" in body


def test_the_workflow_page_reads_a_fixed_number_of_queries(as_bob):
    admission, attempt = rf.running()
    wf = admission.receipt.workflow_id
    url = reverse("routed_workflow", args=[wf])
    as_bob.get(url)
    with CaptureQueriesContext(connections["view"]) as before:
        as_bob.get(url)
    # More of everything the page lists: attempts, artifacts, batches and results, controls.
    rf.artifact(attempt.record, "a.txt", b"a\n")
    rf.end_attempt(attempt)
    second = rf.claim(admission)
    rf.artifact(second.record, "b.json", b"{}")
    rf.child_batch(admission, results=2)
    rf.child_batch(admission, results=1)
    rf.control(wf, ControlCommand.PAUSE)
    with CaptureQueriesContext(connections["view"]) as after:
        as_bob.get(url)
    assert len(after.captured_queries) == len(before.captured_queries)


@pytest.mark.parametrize("wf", ["wf-nothing", "not-a-workflow", "wf-..", "wf-a:b.c_d-e"])
def test_an_unknown_or_malformed_workflow_is_404(as_bob, wf):
    assert as_bob.get(reverse("routed_workflow", args=[wf])).status_code == 404


def test_deployments_show_limits_live_runs_digests_and_aliases(as_bob):
    dep = rf.deployment("pkg.search", max_runs=2)
    rf.alias("search-prod", dep)
    v2 = rf.deployment("pkg.search", "2.0.0")
    rf.alias("search-prod", v2)  # repointed: generation 2
    rf.running(dep.deployment_id)
    body = as_bob.get(reverse("routed_deployments")).content.decode()
    assert "pkg.search" in body
    assert "2.0.0" in body
    assert "1 of 2" in body  # live runs against the limit
    assert dep.bundle_digest in body
    assert "search-prod" in body
    assert 'data-generation="2"' in body


def test_invocations_show_receipts_and_link_their_workflow(as_bob):
    dep = rf.deployment("pkg.mail")
    rf.alias("mail", dep)
    admission = rf.invoke("mail", key="order-77", caller="svc:billing")
    body = as_bob.get(reverse("routed_invocations")).content.decode()
    r = admission.receipt
    assert "order-77" in body
    assert "svc:billing" in body
    assert r.invocation_intent_digest in body
    assert reverse("routed_workflow", args=[r.workflow_id]) in body
    assert "mail" in body
    assert "accepted" in body


def test_every_routed_page_needs_a_sign_in(client):
    for name in ("routed_workflows", "routed_deployments", "routed_invocations"):
        assert client.get(reverse(name)).status_code == 302


def _tile(body: str, figure: str) -> int:
    found = re.search(rf'data-figure="{figure}">.*?<span class="n">(\d+)<', body, re.S)
    assert found, figure
    return int(found.group(1))


def test_the_dashboard_tiles_count_and_link_what_needs_a_look(as_bob):
    hot, _ = rf.running(max_active_ms=1)  # its whole ceiling is consumed within a request
    rf.claim(rf.invoke(rf.deployment().deployment_id), lease_ms=1)  # its lease lapses at once
    replan = rf.needs_replan()
    body = as_bob.get(reverse("routed_tiles")).content.decode()
    assert _tile(body, "routed-near-ceiling") >= 1
    assert _tile(body, "routed-lease-expired") == 1
    assert _tile(body, "routed-needs-replan") == 1
    assert "?alert=near_ceiling" in body
    assert "?status=NEEDS_REPLAN" in body
    listed = as_bob.get(LIST, {"alert": "near_ceiling"}).content.decode()
    assert hot.receipt.workflow_id in listed
    assert replan.receipt.workflow_id not in listed
    assert 'id="routed-tiles"' in as_bob.get(reverse("dashboard")).content.decode()


def test_a_workflow_paused_for_over_an_hour_is_a_tile(as_bob):
    rf.paused()
    now = time.time_ns()
    assert read_dashboard_tiles(now=now).paused_long == 0  # type: ignore[union-attr]
    later = read_dashboard_tiles(now=now + 3601 * 10**9)
    assert later is not None
    assert later.paused_long == 1


@pytest.mark.parametrize("body", ["..", ".", "a.b:c_d-e", ":", "x" * (ID_MAX - len("wf-"))])
def test_every_workflow_id_the_rules_accept_opens_its_page(as_bob, body):
    dep = rf.deployment()
    wf = WorkflowRecord(
        workflow_id=WorkflowID("wf-" + body),
        workflow_kind="standalone",
        invocation_id=InvocationID.new(),
        deployment_id=dep.deployment_id,
        policy_digest="sha256:policy",
        max_active_duration_ms=60_000,
        max_attempt_lease_ms=60_000,
        max_llm_spend_decimal="1.00",
    )
    rf.routed().transact(lambda r: r.create_workflow(wf))
    url = reverse("routed_workflow", args=[wf.workflow_id])
    response = as_bob.get(url)
    assert response.status_code == 200
    assert wf.workflow_id in response.content.decode()
    listed = as_bob.get(LIST, {"q": wf.workflow_id}).content.decode()
    assert url in listed


def test_a_replaced_artifact_shows_no_content_only_that_it_does_not_match(as_bob):
    """Issue 34: a routed artifact replaced after acceptance was still previewed."""
    admission, attempt = rf.running()
    rf.artifact(attempt.record, "log.txt", b"honest line\n")
    path = rf.state_dir() / "runs" / attempt.record.run_id / "artifacts" / "log.txt"
    path.write_bytes(b"forged line\n")  # same size, other bytes

    body = as_bob.get(
        reverse("routed_workflow", args=[admission.receipt.workflow_id])
    ).content.decode()

    assert "SHA-256 does not match" in body
    assert "so it is not shown" in body
    assert "forged line" not in body
    assert "honest line" not in body


def test_a_hard_linked_artifact_is_refused(as_bob, tmp_path):
    admission, attempt = rf.running()
    rf.artifact(attempt.record, "log.txt", b"secret!\n")
    path = rf.state_dir() / "runs" / attempt.record.run_id / "artifacts" / "log.txt"
    elsewhere = path.parent / "copy.txt"
    os.link(path, elsewhere)  # the same bytes under a second name: the digest matches

    body = as_bob.get(
        reverse("routed_workflow", args=[admission.receipt.workflow_id])
    ).content.decode()

    assert "secret!" not in body
    assert "hard links" in body

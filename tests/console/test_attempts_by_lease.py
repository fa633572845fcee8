"""The Executions page sorted and filtered by time to lease expiry ("expiring in the
next 30 s"), keyset-paged in that order, and the attempt page (lease and claims,
outcome, artifacts, Waits, its Work's Events while it lived): each one View with a
query count that does not grow with the history."""

from __future__ import annotations

import html as markup
import re

import pytest
from django.db import connections

from console.saved.presets import BY_KEY
from storage import ExecutionState
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

ROW = re.compile(r'<a class="mono" href="/attempts/([^"]+)"')


def attempts(response) -> list[str]:
    return [markup.unescape(x) for x in ROW.findall(response.content.decode())]


@pytest.fixture
def fleet():
    f.running("soon", lease=10)
    f.running("later", lease=600)
    f.running("gone", lease=0.001)  # expired by the time a page reads it
    f.running("mid", lease=25)
    f.parked("parked")  # live, but holds no lease
    f.completed("done")


def test_the_lease_order_lists_running_attempts_soonest_expiry_first(as_bob, fleet):
    response = as_bob.get("/executions?sort=lease")

    assert response.status_code == 200
    assert attempts(response) == ["gone-x1", "soon-x1", "mid-x1", "later-x1"]


def test_expiring_keeps_live_leases_that_run_out_within_the_span(as_bob, fleet):
    assert attempts(as_bob.get("/executions?expiring=30s&sort=lease")) == ["soon-x1", "mid-x1"]
    assert attempts(as_bob.get("/executions?expiring=15s")) == ["soon-x1"]
    # The default order: the latest first claim first.
    assert attempts(as_bob.get("/executions?expiring=1h")) == ["mid-x1", "later-x1", "soon-x1"]


def test_the_preset_is_leases_expiring_in_the_next_30_seconds(as_bob, fleet):
    url = BY_KEY["leases-expiring-30s"].url()

    assert url == "/executions?expiring=30s&sort=lease"
    assert attempts(as_bob.get(url)) == ["soon-x1", "mid-x1"]


@pytest.mark.parametrize(
    "qs", ["expiring=soon", "expiring=30", "sort=upward", "sort=lease&after=x"]
)
def test_a_bad_span_sort_or_cursor_is_a_400(as_bob, qs):
    assert as_bob.get(f"/executions?{qs}").status_code == 400


def test_the_lease_order_pages_by_keyset(as_bob):
    for n in range(30):
        f.running(f"w{n:02d}", lease=60 + n)
    first = as_bob.get("/executions?sort=lease&size=25")
    html = first.content.decode()
    later = markup.unescape(re.search(r'rel="next" href="([^"]+)"', html).group(1))
    second = as_bob.get("/executions" + later)

    assert attempts(first) == [f"w{n:02d}-x1" for n in range(25)]
    assert "sort=lease" in later
    assert attempts(second) == [f"w{n:02d}-x1" for n in range(25, 30)]


def test_the_lease_order_costs_the_same_whatever_the_history(as_bob, django_assert_num_queries):
    counts = []
    for batch in (range(3), range(3, 40)):
        for n in batch:
            f.running(f"w{n:02d}", lease=20 + n)
            f.completed(f"d{n:02d}")
        # BEGIN, the snapshot (with the store version and latest sequence), the page,
        # its Work, COMMIT.
        with django_assert_num_queries(5, connection=connections["view"]) as ctx:
            response = as_bob.get("/executions?sort=lease&expiring=1h&size=25")
        assert response.status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]


def test_the_attempt_page_shows_its_lease_claims_outcome_artifacts_and_events(as_bob):
    f.running("charge-1", lease=600)
    f.event("hook", work_id="charge-1")
    html = as_bob.get("/attempts/charge-1-x1").content.decode()
    text = " ".join(re.sub(r"<[^>]+>", " ", html).split())

    assert "Attempt 1 of" in text
    assert "worker-1" in text
    assert "claimed 1 time" in text
    assert '<time class="countdown"' in html
    assert "No outcome yet: it is running." in text
    assert 'href="/events/hook"' in html
    assert "the epoch counts claims" in text


def test_the_attempt_page_of_a_failed_attempt_with_an_artifact(as_bob):
    f.work("refund-9")
    x = f.start("refund-9")
    ref = f.publish(b"traceback: card declined\n")
    f.finish(x.id, state=ExecutionState.FAILED, message="card declined", artifacts=[ref])
    html = as_bob.get("/attempts/refund-9-x1").content.decode()

    assert "card declined" in html
    assert f'href="/executions/refund-9-x1/artifacts/{ref.id}"' in html
    assert "no lease held" in html


def test_the_work_page_and_the_executions_list_link_each_attempt(as_bob, fleet):
    assert 'href="/attempts/soon-x1"' in as_bob.get("/works/soon").content.decode()
    assert "soon-x1" in attempts(as_bob.get("/executions"))


def test_an_unknown_attempt_is_a_404(as_bob):
    assert as_bob.get("/attempts/nope").status_code == 404


@pytest.mark.parametrize("work_id", ["a/b", "50%off?x#y", "..", "a b ", "🚀/x"])
def test_odd_attempt_ids_work_from_their_link(as_bob, work_id):
    f.running(work_id, lease=600)
    html = as_bob.get("/executions").content.decode()
    [link] = re.findall(r'<a class="mono" href="(/attempts/[^"]+)"', html)

    response = as_bob.get(markup.unescape(link))
    assert response.status_code == 200
    assert f"{work_id}-x1" in markup.unescape(response.content.decode())


def test_the_attempt_page_costs_the_same_whatever_the_history(as_bob, django_assert_num_queries):
    f.running("w", lease=600)
    counts = []
    for more in (0, 60):
        for n in range(more):
            f.event(f"e{n}", work_id="w")
        # BEGIN, the snapshot (with the store version and latest sequence), the attempt,
        # its Work, its Waits, its Events, COMMIT.
        with django_assert_num_queries(7, connection=connections["view"]) as ctx:
            assert as_bob.get("/attempts/w-x1").status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]

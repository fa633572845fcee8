"""A Work in the past (console/history/, issue 32): the Work page ``?as_of=`` an
Event's sequence, a store version or a time, showing the attempts, Waits and Timers
of that moment; the changes between two moments, naming each transaction, its Event
and actor, its lease and the fields each change made; paging at a fixed query count;
bad moments as 400 pages; odd IDs."""

from __future__ import annotations

import html as markup
import re
from dataclasses import replace

import pytest
from django.db import connections
from django.urls import reverse

from console.history.reads import CHANGES_PAGE
from storage import (
    Event,
    ExecutionState,
    Guard,
    LeaseRef,
    Outcome,
    OutcomeKind,
    Tx,
    Wait,
    WaitState,
    WorkState,
    wall_clock,
)
from storage.default import default_store
from storage.ops import manual
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.markup import text_of
from tests.console.support.odd_ids import IDS

pytestmark = DB


def version() -> int:
    return f.transact(lambda tx: tx.store_version())


def accept(tx: Tx, event_id: str, work_id: str, **kw: str) -> int:
    stored, _ = tx.accept_event(
        Event(
            id=event_id,
            source="github",
            delivery_id=f"d-{event_id}",
            type=kw.pop("type", "push.received"),
            work_id=work_id,
            **kw,
        )
    )
    return stored.sequence


@pytest.fixture
def story() -> dict[str, int]:
    """charge-1's life, with the moments that matter: attempt 1 fails and a retry
    Timer is armed; attempt 2 parks on a Wait; an approval wakes it; attempt 3
    completes. Returns the sequences of the Events that marked each step."""
    f.work("charge-1")
    seq = {"created": f.transact(lambda tx: accept(tx, "opened", "charge-1"))}
    x1 = f.start("charge-1")
    f.finish(
        x1.id, state=ExecutionState.FAILED, work_state=WorkState.READY, message="card declined"
    )
    f.timer("charge-1-retry", work_id="charge-1", purpose="retry")
    seq["failed"] = f.transact(lambda tx: accept(tx, "declined", "charge-1"))
    f.transact(lambda tx: tx.delete_timer("charge-1-retry", tx.timer("charge-1-retry").revision))
    x2 = f.start("charge-1")
    f.timer("charge-1-timeout", work_id="charge-1", fire_in=3600, purpose="timeout")

    def park(tx: Tx) -> None:
        waiting = Outcome(OutcomeKind.WAITING)
        tx.put_execution(replace(tx.execution(x2.id), state=ExecutionState.PARKED, outcome=waiting))
        tx.put_work(replace(tx.work("charge-1"), state=WorkState.WAITING))
        tx.put_wait(
            Wait(
                id="charge-1-wait",
                work_id="charge-1",
                execution_id=x2.id,
                types=("approval.granted",),
                timeout_timer_id="charge-1-timeout",
            )
        )

    f.transact(park)
    seq["parked"] = f.transact(lambda tx: accept(tx, "asked", "charge-1"))

    def woken(tx: Tx) -> None:
        accept(tx, "approval", "charge-1", type="approval.granted", actor="user:maria")
        tx.put_wait(replace(tx.wait("charge-1-wait"), state=WaitState.WOKEN, woken_by="approval"))
        x2 = tx.execution("charge-1-x2")
        tx.put_execution(replace(x2, state=ExecutionState.CANCELLED, outcome=None))

    f.transact(woken)
    seq["approved"] = f.transact(lambda tx: tx.latest_sequence())
    x3 = f.start("charge-1")
    f.finish(x3.id, work_state=WorkState.COMPLETED)
    return seq


def test_the_work_as_of_an_event_three_attempts_ago(as_bob, story):
    """As of the Event after attempt 1 failed: one attempt (failed), the retry Timer
    armed, no Wait; the banner says it is the past and links back to now."""
    response = as_bob.get(f"/works/charge-1?as_of=%23{story['failed']}")
    html = response.content.decode()
    text = text_of(html)

    assert response.status_code == 200
    assert "As it was at" in text
    assert f"Event #{story['failed']}" in text
    assert "Now it is completed" in text
    assert 'href="/works/charge-1">Back to now' in html
    then = text.split("Attempts then")[1]
    assert "charge-1-x1" in then
    assert "charge-1-x2" not in then
    assert "card declined" in then
    assert "No Waits at that moment." in text
    assert "charge-1-retry" in text.split("Timers then")[1]
    assert "Retry…" not in html
    assert "Cancel…" not in html
    assert "hx-get" not in html.split("<main", 1)[-1]  # nor does it poll


def test_the_work_as_of_its_parked_moment_shows_the_wait(as_bob, story):
    text = text_of(as_bob.get(f"/works/charge-1?as_of={story['parked']}").content.decode())

    assert "waiting" in text.split("Attempts then")[0]
    assert re.search(r"Attempts 2 \(1 live\)", text)
    waits = text.split("Waits then")[1].split("Timers then")[0]
    assert "charge-1-wait" in waits
    assert "active" in waits
    assert "No Timers armed" not in text  # the Wait's timeout Timer


def test_a_version_a_time_and_the_present(as_bob, story):
    done = version()  # the Work's last change
    f.work("other")  # a later commit, of another Work
    by_version = as_bob.get(f"/works/charge-1?as_of=v{done}").content.decode()
    assert f"store version {done}" in text_of(by_version)
    assert "A view of the past" in text_of(by_version)
    now = as_bob.get("/works/charge-1?as_of=1m").content.decode()
    assert "store version" in text_of(now)
    ahead = as_bob.get("/works/charge-1?as_of=2999-01-01T00:00:00Z").content.decode()
    assert "Nothing has changed since: this is the Work now." in text_of(ahead)
    before = as_bob.get("/works/charge-1?as_of=2000-01-01T00:00:00Z").content.decode()
    assert "This Work did not exist yet at that moment" in text_of(before)


def test_the_changes_name_each_transaction_its_event_actor_and_lease(as_bob, story):
    response = as_bob.get(f"/changes/charge-1?from=%23{story['parked']}")
    html = response.content.decode()
    text = text_of(html)

    assert response.status_code == 200
    assert f"Event #{story['approved']} approval.granted" in text
    assert "Wait charge-1-wait" in text
    assert re.search(r"state active woken", text)  # the Wait's field, before and after
    assert "attempt 3 created" in text
    assert "control plane" in text  # the factories commit without a lease
    assert re.search(r"finished_at — \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z", text)
    assert 'href="/works/charge-1?as_of=v' in html
    assert "attempt 1" not in text  # before the start


def test_an_operators_retry_shows_as_a_manual_event_and_its_actor(as_bob):
    f.exhausted("refund-7")
    start = version()
    store = default_store()
    stored, _ = store.transact(
        Guard(), lambda tx: manual.record(tx, manual.Action.RETRY, "alice", "refund-7", "why", "t1")
    )
    manual.do_apply_manual_event(store, stored.id)
    text = text_of(as_bob.get(f"/changes/refund-7?from=v{start}").content.decode())

    assert "operator:alice" in text
    assert "attempt 2 created" in text


def test_a_page_of_changes_costs_the_same_whatever_the_history(as_bob, django_assert_num_queries):
    """BEGIN, the View's clock (with the store version), the Work, the start (its own
    log rows' time, the horizon), the end now (the horizon), the page
    of rows, one seek statement for the state after each of its Timers' last change,
    the Work's Timers now, COMMIT; the page is whole transactions of at most
    CHANGES_PAGE rows, the same at 60 and 600."""
    counts = []
    for work_id, steps in (("small", 60), ("large", 600)):
        f.work(work_id)
        start = version()
        for i in range(steps):
            f.timer(f"{work_id}-t{i}", work_id=work_id)
        with django_assert_num_queries(10, connection=connections["view"]) as ctx:
            response = as_bob.get(f"/changes/{work_id}?from=v{start}")
        html = response.content.decode()
        assert response.status_code == 200
        assert html.count('class="change"') == CHANGES_PAGE
        assert "Next page of changes" in html
        counts.append(len(ctx.captured_queries))
        following = re.search(r'after=(\d+)">Next page', html)
        assert following is not None
        second = as_bob.get(f"/changes/{work_id}?from=v{start}&after={following[1]}")
        assert f"Timer {work_id}-t{CHANGES_PAGE}" in text_of(second.content.decode())
    assert counts[0] == counts[1]


def test_the_work_page_links_each_event_to_its_moment(as_bob, story):
    html = as_bob.get("/works/charge-1").content.decode()
    assert f'href="/works/charge-1?as_of=%23{story["approved"]}"' in html


@pytest.mark.parametrize(
    "query",
    [
        "as_of=",
        "as_of=yesterday",
        "as_of=%230",
        "as_of=%23-3",
        "as_of=99999999999999999999",
        "as_of=%C2%B2",
        "as_of=" + "9" * 80,
    ],
)
def test_a_bad_moment_is_a_400_page(as_bob, query):
    f.work("w1")
    response = as_bob.get(f"/works/w1?{query}")
    assert response.status_code == 400
    assert 'class="field-error"' in response.content.decode()


@pytest.mark.parametrize(
    "query", ["", "from=x", "from=v1&to=later", "from=v1&after=-1", "from=v1&after=1e3"]
)
def test_bad_changes_input_is_a_400_page(as_bob, query):
    f.work("w1")
    response = as_bob.get(f"/changes/w1?{query}")
    assert response.status_code == 400
    assert 'class="field-error"' in response.content.decode()


def test_an_end_before_the_start_is_a_400_page(as_bob):
    f.work("w1")
    f.work("w2")
    response = as_bob.get(f"/changes/w1?from=v{version()}&to=v1")
    assert response.status_code == 400


def test_an_unknown_event_or_work_is_the_404_page(as_bob):
    f.work("w1")
    assert as_bob.get("/works/w1?as_of=%23999999").status_code == 404
    assert as_bob.get("/works/nobody?as_of=v1").status_code == 404
    assert as_bob.get("/changes/nobody?from=v1").status_code == 404


def test_a_pruned_past_says_the_log_no_longer_reaches_it(as_bob):
    f.work("w1")
    early = version()
    f.timer("w1-t", work_id="w1")
    store = default_store()
    while store.transact(Guard(), lambda tx: tx.prune_versions(wall_clock() + 1)):
        pass
    text = text_of(as_bob.get(f"/works/w1?as_of=v{early - 1}").content.decode())
    assert "The version log no longer reaches back to this moment" in text


def test_every_odd_id_opens_as_of_and_its_changes(as_bob):
    for work_id in IDS.values():
        f.work(work_id)
    for work_id in IDS.values():
        then = as_bob.get(reverse("work_detail", args=[work_id]) + f"?as_of=v{version()}")
        assert then.status_code == 200, work_id
        assert "Attempts then" in text_of(then.content.decode()), work_id
        changes = as_bob.get(reverse("work_changes", args=[work_id]) + "?from=v0")
        assert changes.status_code == 200, work_id
        assert "the Work created" in text_of(changes.content.decode()), work_id


def test_a_lease_holders_change_is_named(as_bob):
    x = f.running("leased")
    start = version()
    lease = LeaseRef(x.id, x.owner, x.epoch)
    default_store().transact(Guard(lease=lease), lambda tx: tx.kv_put("ns", "k", b"v"))
    f.timer("leased-t", work_id="leased")  # the control plane, for contrast
    default_store().transact(
        Guard(lease=lease),
        lambda tx: tx.delete_timer("leased-t", tx.timer("leased-t").revision),
    )
    text = text_of(as_bob.get(f"/changes/leased?from=v{start}").content.decode())
    assert "under the lease of attempt 1" in text


def test_an_anonymous_visitor_is_sent_to_sign_in(client):
    f.work("w1")
    assert client.get("/works/w1?as_of=v1").status_code == 302
    assert client.get("/changes/w1?from=v1").status_code == 302


def test_the_store_wide_changes_name_scopes_kv_and_each_records_work(as_bob, story):
    start = version()
    f.scope("acme", name="Acme")
    f.transact(lambda tx: tx.kv_put("cursors", "github", b'{"after": 41}'))
    f.transact(lambda tx: tx.kv_put("cursors", "github", b'{"after": 42}'))
    f.work("w2")
    x = f.start("w2")
    html = as_bob.get(f"/changes?from=v{start}").content.decode()
    text = text_of(html)

    assert "Scope acme created" in text
    assert 'href="/dashboard/acme"' in html
    assert "KV cursors / github created" in text
    assert 'href="/kv?namespace=cursors&amp;prefix=github&amp;as_of=v' in html
    first = re.search(r'href="(/kv\?namespace=cursors[^"]+)"', html)
    assert first is not None
    then = as_bob.get(markup.unescape(first[1]))
    assert then.status_code == 200
    assert '"after": 41' in text_of(then.content.decode())  # the entry as it was created
    assert re.search(
        r'KV cursors / github Field Before After value \{"after": 41\} \{"after": 42\}', text
    )
    assert "Work w2 created" in text
    assert 'href="/works/w2?as_of=v' in html
    assert "attempt 1 of Work w2 created" in text
    assert f'href="/attempts/{x.id}"' in html
    assert "charge-1" not in text  # before the start


def test_a_store_wide_page_reads_at_most_a_page_of_records(as_bob, django_assert_num_queries):
    """BEGIN, the clock (with the store version), the start (2) and the end (1), the
    page's rows, a seek
    statement for its Work, a point read of each Work unchanged since (at most a
    page of them), COMMIT: bounded by the page, not by the store."""
    start = version()
    for i in range(60):
        f.work(f"w{i:02}")
    with django_assert_num_queries(8 + CHANGES_PAGE, connection=connections["view"]):
        response = as_bob.get(f"/changes?from=v{start}")
    assert response.status_code == 200
    assert response.content.decode().count('class="change"') == CHANGES_PAGE


@pytest.mark.parametrize("query", ["", "from=soon", "from=v1&to=%231x", "from=v1&after=x"])
def test_bad_store_wide_input_is_a_400_page(as_bob, query):
    response = as_bob.get(f"/changes?{query}")
    assert response.status_code == 400
    assert 'class="field-error"' in response.content.decode()


def test_a_dashboards_counts_as_of_a_moment(as_bob, story):
    """As of the moment charge-1 parked: it was waiting, the other Work of acme did
    not exist yet; now both are elsewhere. Store-wide and for a Scope's subtree."""
    f.scope("acme")
    f.scope("acme-eu", parent="acme")
    f.work("eu-1", scope_id="acme-eu")
    before_eu2 = version()
    f.completed("eu-2", scope_id="acme-eu")
    f.work("elsewhere")
    text = text_of(as_bob.get(f"/dashboard?as_of=%23{story['parked']}").content.decode())
    assert re.search(r"waiting 1 0", text)  # charge-1 then, and now
    assert re.search(r"completed 0 2", text)  # charge-1 and eu-2 completed since
    scoped = as_bob.get(f"/dashboard/acme?as_of=v{before_eu2}").content.decode()
    text = text_of(scoped)
    assert "In Scope acme and the 1 below it." in text
    assert re.search(r"ready 1 1", text)  # eu-1, then and now
    assert re.search(r"completed 0 1", text)  # eu-2, created since
    assert 'href="/changes?from=v' in scoped
    assert "Work counts as of" in as_bob.get("/dashboard").content.decode()  # the form


@pytest.mark.parametrize("query", ["as_of=", "as_of=later", "as_of=%23-1"])
def test_a_bad_dashboard_moment_is_a_400_page(as_bob, query):
    response = as_bob.get(f"/dashboard?{query}")
    assert response.status_code == 400
    assert 'class="field-error"' in response.content.decode()


def test_counting_back_past_the_cap_is_refused_in_words(as_bob, monkeypatch):
    from console.history import counts

    monkeypatch.setattr(counts, "STEP", 5)
    monkeypatch.setattr(counts, "SINCE_MAX", 10)
    start = version()
    for i in range(12):
        f.work(f"w{i}")
    text = text_of(as_bob.get(f"/dashboard?as_of=v{start}").content.decode())
    assert "More has changed since that moment than a page counts back through" in text
    assert "Work by state" not in text

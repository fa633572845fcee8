"""A Work's whole causation (``/causation/<id>``, console/causation/): the tree
back to the roots and forward to what was caused, what each Event did, paging of a
big Work at a fixed query count, awkward IDs and bad input."""

from __future__ import annotations

import html as markup
import re
from dataclasses import replace
from urllib.parse import unquote

import pytest
from django.db import connections
from django.urls import resolve, reverse

from console.causation.reads import SPINE, UP_LEVELS
from storage import (
    Event,
    Execution,
    ExecutionState,
    Guard,
    Outcome,
    OutcomeKind,
    Tx,
    Wait,
    WaitState,
    Work,
    WorkState,
)
from storage.default import default_store
from storage.ops import manual
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.markup import text_of
from tests.console.support.odd_ids import IDS, seed

pytestmark = DB


def rows(html: str) -> list[str]:
    """The rows' Event sequences, in page order."""
    return re.findall(r'<li id="seq-(\d+)"', html)


def accept(tx: Tx, event_id: str, **kw: str) -> None:
    tx.accept_event(
        Event(id=event_id, source="github", delivery_id=f"d-{event_id}", type="push.received", **kw)
    )


@pytest.fixture
def story() -> None:
    """charge-1's life: a webhook (root, via an upstream Event) routed to it creates it
    with attempt 1; that Event arms a retry Timer and spawns child Work refund-1; an
    operator's manual Event; an approval wakes its Wait; a cancel ends it."""
    f.event("upstream", source="stripe", type="charge.created")

    def opened(tx: Tx) -> None:
        accept(tx, "hook", causation_id="upstream")
        tx.put_work(Work(id="charge-1", kind="billing.charge"))
        tx.put_execution(Execution(id="charge-1-x1", work_id="charge-1", attempt=1))
        tx.mark_routed("hook", "charge-1", "routed")

    f.transact(opened)
    f.timer("retry-1", work_id="charge-1", purpose="retry")
    f.transact(
        lambda tx: tx.put_timer(
            replace(
                tx.timer("retry-1"),
                template=replace(tx.timer("retry-1").template, causation_id="hook"),
            )
        )
    )

    def spawned(tx: Tx) -> None:
        accept(tx, "spawn", causation_id="hook")
        tx.put_work(Work(id="refund-1", kind="billing.refund", parent_id="charge-1"))
        tx.mark_routed("spawn", "refund-1", "routed")

    f.transact(spawned)
    f.event("relay", causation="hook")  # no Work: followed one level further ...
    f.event("echo", causation="relay")
    f.event("ignored", causation="spawn")  # ... not below another Work's Event
    f.event(
        "nudge",
        source="core.manual",
        type="core.manual",
        work_id="charge-1",
        actor="operator:alice",
    )
    f.transact(
        lambda tx: tx.put_execution(
            replace(tx.execution("charge-1-x1"), state=ExecutionState.CANCELLED)
        )
    )
    x2 = f.start("charge-1")

    def park(tx: Tx) -> None:
        waiting = Outcome(OutcomeKind.WAITING)
        tx.put_execution(replace(tx.execution(x2.id), state=ExecutionState.PARKED, outcome=waiting))
        tx.put_work(replace(tx.work("charge-1"), state=WorkState.WAITING))
        tx.put_wait(Wait(id="charge-1-wait", work_id="charge-1", execution_id=x2.id))

    f.transact(park)

    def woken(tx: Tx) -> None:
        accept(tx, "approval", work_id="charge-1")
        tx.put_wait(replace(tx.wait("charge-1-wait"), state=WaitState.WOKEN, woken_by="approval"))

    f.transact(woken)

    def ended(tx: Tx) -> None:
        accept(tx, "stop", work_id="charge-1", causation_id="approval")
        for x in tx.live_executions("charge-1"):
            tx.put_execution(replace(x, state=ExecutionState.CANCELLED, outcome=None))
        tx.put_work(replace(tx.work("charge-1"), state=WorkState.CANCELLED))

    f.transact(ended)


def test_the_tree_goes_back_to_the_roots_and_forward_to_what_was_caused(as_bob, story):
    response = as_bob.get("/causation/charge-1")
    html = response.content.decode()
    text = text_of(html)

    assert response.status_code == 200
    # Tree order: the root, its child, then that child's subtree by sequence; then
    # the other roots of this Work's Events.
    order = [text_of(m) for m in re.findall(r'<li id="seq-\d+".*?</a>', html, re.S)]
    assert [o.split()[-1] for o in order] == [
        "charge.created",  # upstream
        "push.received",  # hook
        "push.received",  # spawn
        "push.received",  # relay
        "push.received",  # echo
        "core.manual",  # nudge
        "push.received",  # approval
        "push.received",  # stop
    ]
    assert 'href="/events/ignored"' not in html
    assert 'href="/events/upstream"' in html
    assert "a root: nothing caused it" in text
    assert "created Work billing.charge: charge-1" in text
    assert "started attempt 1: charge-1-x1" in text
    assert "armed Timer (retry) retry-1" in text
    assert "created Work billing.refund: refund-1" in text
    assert 'href="/causation/refund-1"' in html
    assert 'href="/events/echo"' in html  # below an Event of no Work
    assert "operator:alice" in text
    assert "woke Wait charge-1-wait" in text
    assert "ended Work billing.charge: cancelled" in text
    assert "during attempt 2" in text  # the approval came while attempt 2 was parked
    assert 'href="/attempts/charge-1-x2"' in html
    assert "this Work's 1\u20134 of 4" in text
    assert "Next:" not in text
    # The Work page links here.
    assert 'href="/causation/charge-1"' in as_bob.get("/works/charge-1").content.decode()


def test_an_operators_retry_and_cancel_say_what_they_did(as_bob):
    """Through the console's own actions (storage.ops.manual: record, then apply with
    the route): the retry started attempt 2, the cancel ended the Work."""
    f.exhausted("refund-7")
    store = default_store()
    for action, token in ((manual.Action.RETRY, "t-retry"), (manual.Action.CANCEL, "t-cancel")):
        stored, _ = store.transact(
            Guard(),
            lambda tx, a=action, t=token: manual.record(tx, a, "alice", "refund-7", "why", t),
        )
        manual.do_apply_manual_event(store, stored.id)
    text = text_of(as_bob.get("/causation/refund-7").content.decode())

    assert "started attempt 2: retry-" in text
    assert "ended Work billing.charge: cancelled" in text
    assert text.count("operator:alice") == 2


def test_a_cause_from_another_work_names_that_work(as_bob):
    f.work("parent")
    f.work("child", parent="parent")
    p1 = f.event("p1", work_id="parent")
    c1 = f.event("c1", work_id="child", causation="p1")
    html = as_bob.get("/causation/child").content.decode()

    assert rows(html) == [str(p1.sequence), str(c1.sequence)]
    assert 'href="/causation/parent"' in html
    assert "cause" in text_of(html)


def chain(work_id: str, n: int) -> None:
    """``n`` Events of one Work, each caused by the one before: the deepest tree."""

    def run(tx: Tx) -> None:
        tx.put_work(Work(id=work_id, kind="billing.charge"))
        for i in range(n):
            cause = f"{work_id}-{i - 1}" if i else ""
            accept(tx, f"{work_id}-{i}", work_id=work_id, causation_id=cause)

    f.transact(run)


def sequence(event_id: str) -> int:
    """An Event's acceptance sequence (PostgreSQL's do not restart per test)."""
    return f.transact(lambda tx: tx.event(event_id).sequence)


def test_a_big_work_is_paged_and_says_how_many_more(as_bob):
    chain("big", 2 * SPINE + 20)
    first = as_bob.get("/causation/big").content.decode()
    text = text_of(first)

    assert f"this Work's 1\u2013{SPINE} of {2 * SPINE + 20}" in text
    assert f"Next: {SPINE + 20} more of this Work's Events" in text
    later = markup.unescape(re.search(r'rel="next" href="([^"]+)"', first).group(1))
    assert later == f"/causation/big?after={sequence(f'big-{SPINE - 1}')}"
    second = as_bob.get(later).content.decode()
    text = text_of(second)
    assert f"this Work's {SPINE + 1}\u2013{2 * SPINE} of {2 * SPINE + 20}" in text
    # Its first Event's causes come from the page before, up to UP_LEVELS of them,
    # and the rest of the chain is said, not read.
    assert len(rows(second)) == UP_LEVELS + SPINE + 1
    assert "1 earlier cause not read" in text
    assert "First page" in text
    third = as_bob.get(f"/causation/big?after={sequence(f'big-{2 * SPINE - 1}')}")
    third = third.content.decode()
    assert "Next:" not in text_of(third)
    assert f"of {2 * SPINE + 20}" in text_of(third)


def test_a_page_costs_the_same_whatever_the_tree(as_bob, django_assert_num_queries):
    """The deepest tree the page walks (a chain, each Event caused by the one before),
    on its second page: BEGIN, the View's clock, the Work, its window of Events, the
    counts before and after it, UP_LEVELS levels of causes, one level of effects (the
    next Event is the Work's own: not followed), its attempts, Waits and Timers,
    COMMIT. The same at 120 and at 1,000 Events."""
    counts = []
    for work_id, size in (("deep", 2 * SPINE + 20), ("deeper", 1000)):
        chain(work_id, size)
        after = sequence(f"{work_id}-{SPINE - 1}")
        pinned = 2 + 1 + 1 + 1 + 2 + UP_LEVELS + 1 + 3
        with django_assert_num_queries(pinned, connection=connections["view"]) as ctx:
            response = as_bob.get(f"/causation/{work_id}?after={after}")
        assert response.status_code == 200
        assert len(rows(response.content.decode())) == UP_LEVELS + SPINE + 1
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]


def test_many_effects_are_cut_and_counted(as_bob):
    f.work("fan")
    f.event("fan-0", work_id="fan")

    def fan_out(tx: Tx) -> None:
        for i in range(150):
            accept(tx, f"out-{i}", causation_id="fan-0")

    f.transact(fan_out)
    html = as_bob.get("/causation/fan").content.decode()

    assert len(rows(html)) == 1 + 100
    assert "50 more Events caused by this page's Events not shown" in text_of(html)


def test_past_the_last_page_and_a_work_without_events(as_bob):
    chain("short", 3)
    f.work("quiet")
    past = as_bob.get(f"/causation/short?after={sequence('short-2')}").content.decode()
    quiet = as_bob.get("/causation/quiet").content.decode()

    assert rows(past) == []
    assert "No Events name this Work or were routed to it after this point." in text_of(past)
    assert 'href="/causation/short">First page' in past
    assert rows(quiet) == []
    assert "No Events name this Work or were routed to it." in text_of(quiet)
    assert "First page" not in quiet


def test_an_unknown_work_is_the_404_page(as_bob):
    response = as_bob.get("/causation/nobody")
    assert response.status_code == 404
    assert "Not found" in response.content.decode()


@pytest.mark.parametrize(
    "query", ["after=x", "after=-1", "before=3", "after=99999999999999999999", "after=1&before=2"]
)
def test_a_bad_cursor_is_a_400_page(as_bob, query):
    f.work("w1")
    response = as_bob.get(f"/causation/w1?{query}")
    assert response.status_code == 400
    assert 'class="field-error"' in response.content.decode()


def test_an_anonymous_visitor_is_sent_to_sign_in(client):
    f.work("w1")
    response = client.get("/causation/w1")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


# IDs spelt like the page's name: the page's name comes first, so none is mistaken.
NAMED = {"suffix": "a/causation", "bare": "causation", "prefix": "causation/b"}


@pytest.mark.parametrize("name", [*IDS, *NAMED])
def test_every_awkward_id_reaches_its_causation_and_its_work_page(as_bob, name):
    """Any ID the storage accepts: the causation page answers and links the Work
    page, and both URLs resolve back to that ID."""
    work_id = {**IDS, **NAMED}[name]
    seed(work_id, 0)
    url = reverse("work_causation", kwargs={"work_id": work_id})
    detail = reverse("work_detail", kwargs={"work_id": work_id})

    for path, view in ((url, "work_causation"), (detail, "work_detail")):
        match = resolve(unquote(path))
        assert (match.url_name, match.kwargs) == (view, {"work_id": work_id})
    response = as_bob.get(url)
    assert response.status_code == 200
    assert f'href="{markup.escape(detail)}"' in response.content.decode()
    assert f'href="{markup.escape(url)}"' in as_bob.get(detail).content.decode()

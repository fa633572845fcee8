"""Per-region stamps: a poll answers 204 when its region did not change, even while
other things commit, and 200 as soon as something the region shows changed, even a
change that does not touch the Work's revision (a Timer, an Event, a lease)."""

from dataclasses import replace

import pytest
from django.db import connections

from console.polling import HEADER
from storage import Event, Guard, LeaseRef
from storage.default import default_store
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.polling import poll_url_of

pytestmark = DB

# A filtered list and a Work page: the two regions the 204 goal is stated for.
REGIONS = ["/?scope=acme", "/works/w1"]


@pytest.fixture
def acme_work():
    f.scope("acme")
    f.running("w1", scope_id="acme")
    f.event("e1", work_id="w1")


def poll(client, url, stamp=""):
    headers = {"HTTP_HX_REQUEST": "true"}
    if stamp:
        headers[f"HTTP_{HEADER.upper().replace('-', '_')}"] = stamp
    return client.get(url, **headers)


@pytest.mark.parametrize("path", REGIONS)
def test_a_change_elsewhere_answers_204_with_the_current_stamp(as_alice, acme_work, path):
    url = poll_url_of(as_alice.get(path).content.decode())
    old = url.rsplit("stamp=", 1)[1]
    f.work("elsewhere")  # no Scope: neither the acme list nor w1's page shows it

    response = poll(as_alice, url)

    assert response.status_code == 204
    assert response[HEADER] != old  # the store moved on; the digest did not
    assert response[HEADER].split("-")[1] == old.split("-")[1]


@pytest.mark.parametrize("path", REGIONS)
def test_the_stamp_a_204_brought_back_takes_the_cheap_path(
    as_alice, acme_work, path, django_assert_num_queries
):
    url = poll_url_of(as_alice.get(path).content.decode())
    f.work("elsewhere")
    fresh = poll(as_alice, url)[HEADER]

    # BEGIN, snapshot (with the store version and latest sequence), COMMIT: the region
    # is not read.
    with django_assert_num_queries(3, connection=connections["view"]):
        response = poll(as_alice, url, stamp=fresh)

    assert response.status_code == 204


def renew(tx):
    x = tx.execution("w1-x1")
    lease = LeaseRef(x.id, x.owner, x.epoch)
    return tx.renew(lease, x.lease_expires_at + 60 * 10**9)


# What each change does to the two regions: 200 where the region shows it.
CHANGES = {
    "a new Work in the Scope": (lambda: f.work("w2", scope_id="acme"), 200, 204),
    "an Event of the Work": (lambda: f.event("e2", work_id="w1"), 204, 200),
    # Neither bumps the Work's revision or updated_at: a revision stamp would miss them.
    "a Timer of the Work": (lambda: f.timer("t1", work_id="w1", fire_in=30), None, 200),
    "the attempt's lease renewed": (lambda: default_store().transact(Guard(), renew), None, 200),
}


CASES = [
    pytest.param(path, make, status, id=f"{path} {change}")
    for change, (make, *statuses) in CHANGES.items()
    for path, status in zip(REGIONS, statuses, strict=True)
    if status is not None  # the list's last-try summary decides whether it shows those
]


@pytest.mark.parametrize(("path", "make", "status"), CASES)
def test_a_change_answers_200_exactly_where_the_region_shows_it(
    as_alice, acme_work, path, make, status
):
    url = poll_url_of(as_alice.get(path).content.decode())
    make()

    assert poll(as_alice, url).status_code == status


# Every polling page, to pin that its digest is stable: built twice from the same
# content it hashes the same (no set order, no object address in it).
EVERY_REGION = [
    "/?scope=acme",
    "/works/w1",
    "/events",
    "/executions",
    "/waits",
    "/timers",
    "/scopes",
    "/errors",
    "/run-records",
    "/dashboard?window=1h",
]


@pytest.mark.parametrize("path", EVERY_REGION)
def test_a_commit_no_page_shows_answers_204_everywhere(as_alice, acme_work, path, monkeypatch):
    # The dashboard's minute must not turn between the two requests here.
    monkeypatch.setattr("console.dashboard.reads.STAMP_PERIOD", 10**30)
    url = poll_url_of(as_alice.get(path).content.decode())
    f.transact(lambda tx: tx.kv_put("test", "note", b"nothing a page shows"))

    response = poll(as_alice, url)

    assert response.status_code == 204
    assert response[HEADER] != url.rsplit("stamp=", 1)[1]  # built and hashed, not skipped


# -- the Work page's mark (issue 35): a poll after a commit elsewhere reads indexes only


def marked_stamp(client, path):
    """The stamp a Work page's region holds once its first poll after a commit came
    back 204: the store part, the digest and the page's mark."""
    url = poll_url_of(client.get(path).content.decode())
    f.work(f"elsewhere-{path}")
    response = poll(client, url)
    assert response.status_code == 204
    assert response[HEADER].count("-") == 2, response[HEADER]
    return url, response[HEADER]


def test_a_marked_work_page_poll_reads_only_its_mark(
    as_alice, acme_work, django_assert_num_queries
):
    url, stamp = marked_stamp(as_alice, "/works/w1")
    f.event("e-elsewhere")  # the runtime commits elsewhere
    f.transact(lambda tx: tx.kv_put("test", "note", b"nothing the page shows"))

    # BEGIN, snapshot (with the store version and latest sequence), the mark (one
    # statement: w1 has no child, so the children's statement is not sent), COMMIT:
    # none of the Work's records is read or decoded.
    with django_assert_num_queries(4, connection=connections["view"]):
        response = poll(as_alice, url, stamp=stamp)

    assert response.status_code == 204
    assert response[HEADER].split("-")[1:] == stamp.split("-")[1:]
    assert response[HEADER] != stamp


def _route_to_w1(tx):
    tx.accept_event(Event(id="e-routed", source="github", delivery_id="d-r", type="push.received"))
    tx.mark_routed("e-routed", "w1", "routed")


def _move_timer_in(tx):
    timer = tx.timer("t-other")
    tx.put_timer(replace(timer, work_id="w1"))


# Every kind of change the Work page shows, each missed by a stamp of the Work's
# revision: with a marked stamp, each answers 200.
WORK_PAGE_CHANGES = {
    **{name: make for name, (make, _, status) in CHANGES.items() if status == 200},
    "an Event routed to it": lambda: f.transact(_route_to_w1),
    "its Event given a Scope": lambda: f.transact(lambda tx: tx.set_event_scope("e1", "acme")),
    "another Work's Timer moved to it": lambda: f.transact(_move_timer_in),
    "a child created": lambda: f.work("w1-child", parent="w1"),
    "a child changed": lambda: f.start("w1-kid"),  # it is running now
}


@pytest.mark.parametrize("change", list(WORK_PAGE_CHANGES))
def test_a_change_the_work_page_shows_answers_200_to_a_marked_poll(as_alice, acme_work, change):
    f.work("other")
    f.timer("t-other", work_id="other", fire_in=60)
    f.work("w1-kid", parent="w1")
    url, stamp = marked_stamp(as_alice, "/works/w1")

    WORK_PAGE_CHANGES[change]()

    assert poll(as_alice, url, stamp=stamp).status_code == 200


def test_a_waiting_work_page_is_built_on_every_poll_for_its_near_misses(as_alice):
    """Its near misses are the store's newest Events of the awaited types, which no
    index of the Work tells: the page has no mark, and an Event of that type routed
    nowhere shows at once."""
    f.parked("w1")
    url = poll_url_of(as_alice.get("/works/w1").content.decode())
    f.work("elsewhere")
    stamp = poll(as_alice, url)[HEADER]
    assert stamp.count("-") == 1  # no mark

    f.event("e-near", type="approval.granted")

    response = poll(as_alice, url, stamp=stamp)
    assert response.status_code == 200
    assert "e-near" in response.content.decode()


# -- the Work list's mark: the page's IDs, their newest rows and Timers, the facets


def test_a_marked_list_poll_reads_only_its_mark(as_alice, acme_work, django_assert_num_queries):
    url, stamp = marked_stamp(as_alice, "/?scope=acme")
    f.event("e-elsewhere")  # the runtime commits elsewhere
    f.work("w-elsewhere", scope_id="")

    # BEGIN, snapshot (with the store version and latest sequence), the page's IDs, their
    # newest rows and Timers, the facets (the tally), COMMIT: no Work is decoded.
    with django_assert_num_queries(6, connection=connections["view"]):
        response = poll(as_alice, url, stamp=stamp)

    assert response.status_code == 204
    assert response[HEADER].split("-")[1:] == stamp.split("-")[1:]


def _move_timer_to_w1(tx):
    tx.put_timer(replace(tx.timer("t-other"), work_id="w1", purpose="retry"))


LIST_CHANGES = {
    "a new Work in the Scope": lambda: f.work("w2", scope_id="acme"),
    "the listed Work finished": lambda: f.finish("w1-x1"),
    "a retry Timer moved to the listed Work": lambda: f.transact(_move_timer_to_w1),
}


@pytest.mark.parametrize("change", list(LIST_CHANGES))
def test_a_change_the_list_shows_answers_200_to_a_marked_poll(as_alice, acme_work, change):
    f.work("other")
    f.timer("t-other", work_id="other", fire_in=60)
    url, stamp = marked_stamp(as_alice, "/?scope=acme")

    LIST_CHANGES[change]()

    assert poll(as_alice, url, stamp=stamp).status_code == 200


def test_the_exhausted_list_is_marked_too(as_alice):
    """Its facets are counted from its rows (the tally does not answer a triage
    filter): the mark reads them as the page does, and still no Work is decoded."""
    f.exhausted("x1")
    url, stamp = marked_stamp(as_alice, "/?is=exhausted")
    f.work("w-elsewhere")

    assert poll(as_alice, url, stamp=stamp).status_code == 204
    f.exhausted("x2")
    assert poll(as_alice, url, stamp=stamp).status_code == 200


def test_a_parents_mark_reads_its_children_too(as_alice, acme_work, django_assert_num_queries):
    f.work("w1-kid", parent="w1")
    url, stamp = marked_stamp(as_alice, "/works/w1")
    f.event("e-elsewhere")

    # As above, and the children's statement (their index range and newest rows).
    with django_assert_num_queries(5, connection=connections["view"]):
        assert poll(as_alice, url, stamp=stamp).status_code == 204


def test_a_list_poll_whose_mark_moved_reads_the_facets_once(
    as_alice, acme_work, django_assert_num_queries
):
    url, stamp = marked_stamp(as_alice, "/?scope=acme")
    f.work("w2", scope_id="acme")  # the list shows it: the mark moves

    # BEGIN, snapshot (with the store version and latest sequence), the mark (the
    # page's IDs, their newest rows and Timers, the facets), then the page and its
    # last tries (3) with the facets the mark read, COMMIT.
    with django_assert_num_queries(10, connection=connections["view"]):
        assert poll(as_alice, url, stamp=stamp).status_code == 200

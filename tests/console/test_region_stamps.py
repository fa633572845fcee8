"""Per-region stamps: a poll answers 204 when its region did not change, even while
other things commit, and 200 as soon as something the region shows changed, even a
change that does not touch the Work's revision (a Timer, an Event, a lease)."""

import pytest
from django.db import connections

from console.polling import HEADER
from storage import Guard, LeaseRef
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

    # BEGIN, snapshot, latest sequence, store version, COMMIT: the region is not read.
    with django_assert_num_queries(5, connection=connections["view"]):
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

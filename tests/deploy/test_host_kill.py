"""A console host SIGKILLed in the middle of a bulk action (issue 30).

The operator cancels 1,000 Work through nginx; while the confirmation shows the run's
progress, the host running it (its progress names the process) is killed with its
workers. nginx sends the POST again to the other host (deploy/nginx/conduit.conf:
operator actions carry an idempotency token), which resumes the stored plan: every
Work is cancelled by exactly one manual Event, the progress keeps moving on the page,
and the summary counts the whole run.
"""

from __future__ import annotations

import time

import psycopg
from playwright.sync_api import expect

from tests.deploy.topology import Topology

KIND = "deploy.bulk"
COUNT = 1000


def test_a_host_killed_mid_bulk_leaves_the_other_to_finish_it_once(
    topology: Topology, new_page, sign_in, measured
):
    topology.seed(KIND, COUNT)
    page = new_page()
    sign_in(page, path=f"/actions/bulk?do=cancel-all&kind={KIND}")
    expect(page.locator("h1")).to_contain_text("Cancel 1,000 Work")
    page.fill("textarea[name=reason]", "deploy suite: a host dies under this")
    page.click("button:has-text('Cancel 1,000 Work')")

    owner = page.locator("#bulk-progress [data-bulk-owner]")
    expect(owner).to_be_visible()
    victim_pid = _pid_of(owner)
    victim = topology.host_of_pid(victim_pid)
    survivor = next(name for name in topology.hosts if name != victim)
    before = _looked_at(page)
    assert before < COUNT
    topology.kill_host(victim)
    try:
        killed = time.monotonic()
        # The other host serves the next request.
        assert topology.status("/healthz") == 200
        # The progress stays visible and moves on, now written by the other host.
        owners = _owners_until_the_summary(page)
        resumed_in = time.monotonic() - killed
        expect(page.locator("h1")).to_contain_text(f"Cancel: {COUNT:,} done, 0 skipped")
    finally:
        topology.start_host(victim)
    # The dead host's last progress shows until the other host's first batch replaces it.
    assert {topology.host_of_pid(pid) for pid in owners - {victim_pid}} == {survivor}

    with psycopg.connect(topology.database_url) as db:
        events = db.execute(
            "SELECT work_id, count(*) FROM conduit_event WHERE type = 'core.manual.cancel'"
            " AND work_id LIKE %s GROUP BY work_id",
            [f"{KIND}-%"],
        ).fetchall()
        states = db.execute(
            "SELECT state, count(*) FROM conduit_work WHERE kind = %s GROUP BY state", [KIND]
        ).fetchall()
    assert len(events) == COUNT
    assert {n for _, n in events} == {1}  # exactly once
    assert states == [("cancelled", COUNT)]
    measured["host kill mid-bulk"] = (
        f"killed after {before:,} of {COUNT:,} looked at; the summary {resumed_in:.1f} s later"
    )


def _pid_of(owner) -> int:
    return int(owner.get_attribute("data-bulk-owner").rpartition(":")[2])


def _owners_until_the_summary(page) -> set[int]:
    """The processes the progress region names, read until the summary replaces it."""
    owners: set[int] = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if "done" in page.locator("h1").inner_text():
            return owners
        for value in page.locator("#bulk-progress [data-bulk-owner]").evaluate_all(
            "els => els.map(e => e.dataset.bulkOwner)"
        ):
            owners.add(int(value.rpartition(":")[2]))
        time.sleep(0.2)
    raise AssertionError(f"no summary within 120 s; progress by {owners}")


def _looked_at(page) -> int:
    text = page.locator("#bulk-progress strong").first.inner_text()
    return int(text.replace(",", ""))

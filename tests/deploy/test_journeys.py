"""Operator journeys through nginx over HTTPS, on two console hosts and PostgreSQL."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.deploy.topology import Topology

KIND = "deploy.journey"


def test_sign_in_find_a_work_and_cancel_it_with_confirmation(topology: Topology, new_page, sign_in):
    topology.seed(KIND, 3)
    page = new_page()
    sign_in(page, path=f"/?kind={KIND}")

    expect(page.locator(".count")).to_contain_text("3 Work match the filter")
    page.locator("td.id a", has_text=f"{KIND}-00001").click()
    expect(page.locator("h1")).to_contain_text(f"{KIND}-00001")
    page.click("text=Cancel…")
    expect(page.locator("h1")).to_contain_text(f"Cancel Work {KIND}-00001")
    page.fill("textarea[name=reason]", "deploy suite: no longer wanted")
    page.click("button:has-text('Cancel Work')")
    expect(page.locator(".message")).to_contain_text(f"Cancelled Work {KIND}-00001.")
    expect(page.locator("h1 .badge")).to_have_text("cancelled")
    assert page.url.startswith(topology.url("/"))


def test_the_second_host_serves_a_session_made_on_the_first(topology: Topology, new_page, sign_in):
    page = new_page(390, 844)
    sign_in(page, host="a")
    session = {c["name"]: c for c in page.context.cookies()}["sessionid"]
    assert session["secure"]
    assert session["httpOnly"]

    # Cookies are per host name, not port: host b's listener gets the same session.
    page.goto(topology.url("/", host="b"))
    expect(page.locator("h1")).to_contain_text("Work")
    assert "/accounts/login/" not in page.url
    served_by_b = topology.hosts["b"].proc.log.read_text()
    assert '"GET / HTTP/1.0" 200' in served_by_b

"""Sign-in through the identity provider in Chromium, against the test suite's real
OIDC provider (django-oauth-toolkit in its own process, tests/support/oidc.py): the
console sends the browser to the provider's own login page, the provider sends it back
signed in, and the provider's groups decide what the operator may do, at every
sign-in. The same journey without a browser: tests/console/test_oidc_sign_in.py."""

import re

import pytest

from console.actions.common import new_token
from storage import WorkState
from tests.console import factories as f

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
]


def through_the_provider(page, provider, username: str) -> None:
    """From the console's login page: the provider's button, then its own login form
    (the console is registered with skip_authorization, so no consent page follows)."""
    from playwright.sync_api import expect

    page.click("#oidc-sign-in")
    expect(page).to_have_url(re.compile(rf"^{re.escape(provider.url)}/login/\?next="))
    expect(page.locator("h1")).to_have_text("Test identity provider")
    page.fill("#provider-username", username)
    page.fill("#provider-password", "provider-pw")
    page.click("#provider-submit")


def test_the_providers_group_grants_the_action_until_it_is_removed_there(
    live_server, browser_page, console_errors, oidc_live
):
    from playwright.sync_api import expect

    oidc_live.set_user("olga", "conduit-ops")  # mapped to the console's "operators"
    f.exhausted("refund-1", message="card declined")
    f.exhausted("refund-2", message="card declined")
    page = browser_page
    actions = page.locator("#work .actions")
    role = page.locator(".user-menu .role")

    page.goto(f"{live_server.url}/works/refund-1")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/works/refund-1$"))
    through_the_provider(page, oidc_live, "olga")
    expect(page).to_have_url(f"{live_server.url}/works/refund-1")
    expect(page.locator(".user-menu .who")).to_have_text("olga")
    expect(role).to_have_text("(operator)")
    expect(actions.locator("a", has_text="Retry…")).to_be_visible()
    page.click("text=Cancel…")
    page.fill("textarea[name=reason]", "customer asked")
    page.click("button:has-text('Cancel Work')")
    expect(page.locator(".message")).to_contain_text("Cancelled Work refund-1.")
    expect(page.locator(".tl-item").last).to_contain_text("operator:olga")

    # The directory administrator takes olga out of conduit-ops. The session already
    # open keeps the groups it signed in with (docs/oidc.md) ...
    oidc_live.set_user("olga", "payroll")
    page.goto(f"{live_server.url}/works/refund-2")
    expect(actions.locator("a", has_text="Cancel…")).to_be_visible()

    # ... until the next sign-in. The provider asks for the password again: its
    # directory endpoint set it anew with the groups, which ends olga's session there.
    page.locator(".user-menu summary").click()
    page.click("button:has-text('Sign out')")
    expect(page).to_have_url(f"{live_server.url}/accounts/login/")
    through_the_provider(page, oidc_live, "olga")
    expect(page).to_have_url(f"{live_server.url}/")
    expect(role).to_have_text("(viewer)")
    expect(page.locator("#workspace td.id a", has_text="refund-2")).to_be_visible()
    expect(page.locator("#workspace th.select")).to_have_count(0)

    page.goto(f"{live_server.url}/works/refund-2")
    expect(page.locator("h1")).to_contain_text("refund-2")
    expect(actions).to_have_count(0)
    expect(page.locator("text=Retry…")).to_have_count(0)
    # A POST as a stale page or a script would send it, with this session's CSRF
    # token: refused by the permission, not by CSRF, and nothing is retried.
    csrf = page.locator(".sign-out input[name=csrfmiddlewaretoken]").get_attribute("value")
    refused = page.request.post(
        f"{live_server.url}/actions/retry/refund-2",
        form={"csrfmiddlewaretoken": csrf or "", "reason": "x", "token": new_token()},
        headers={"Referer": live_server.url},
    )
    assert refused.status == 403
    assert "Action not allowed" in refused.text()
    assert f.transact(lambda tx: len(tx.executions("refund-2"))) == 1
    assert f.transact(lambda tx: tx.work("refund-1").state) is WorkState.CANCELLED
    assert console_errors == []


def test_with_passwords_off_a_user_without_a_mapped_group_only_reads(
    live_server, browser_page, console_errors, oidc_live, passwords_off
):
    from playwright.sync_api import expect

    oidc_live.set_user("rita", "payroll")  # a provider group the mapping does not name
    f.exhausted("refund-3", message="card declined")
    page = browser_page

    page.goto(f"{live_server.url}/works/refund-3")
    expect(page.locator("#oidc-sign-in")).to_have_text("Sign in with Test IdP")
    expect(page.locator("input[name=password]")).to_have_count(0)
    through_the_provider(page, oidc_live, "rita")
    expect(page).to_have_url(f"{live_server.url}/works/refund-3")
    expect(page.locator(".user-menu .who")).to_have_text("rita")
    expect(page.locator(".user-menu .role")).to_have_text("(viewer)")
    expect(page.locator("#work .actions")).to_have_count(0)
    page.goto(f"{live_server.url}/?is=exhausted")
    expect(page.locator("#workspace td.id a", has_text="refund-3")).to_be_visible()
    expect(page.locator(".bulk-bar")).to_have_count(0)
    assert console_errors == []

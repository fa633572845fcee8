"""A stale form (CSRF failure) gets a page of ours that says what happened and links
back, under the strict CSP (issue 20)."""

import re

import pytest
from django.test import Client

from tests.console.conftest import DB

pytestmark = DB


@pytest.fixture
def strict_client():
    return Client(enforce_csrf_checks=True)


def test_a_stale_sign_in_form_gets_a_page_that_explains_and_links_back(strict_client, alice):
    response = strict_client.post(
        "/accounts/login/",
        {"username": "alice", "password": "password"},
        HTTP_REFERER="http://testserver/accounts/login/?next=/",
    )

    assert response.status_code == 403
    html = response.content.decode()
    assert "This form has expired" in html
    assert "nothing was done" in html
    assert 'href="http://testserver/accounts/login/?next=/"' in html
    assert "_auth_user_id" not in strict_client.session


def test_the_csrf_page_is_clean_under_the_csp(strict_client):
    response = strict_client.post("/accounts/login/", {})

    html = response.content.decode()
    assert "style-src 'self'" in response["Content-Security-Policy"]
    assert not re.search(r"<style|\sstyle=|<script>", html)  # nothing the CSP blocks
    assert 'href="/"' in html  # no referrer: back to the start


def test_the_csrf_page_never_links_to_another_site(strict_client):
    response = strict_client.post("/accounts/login/", {}, HTTP_REFERER="https://evil.example/")

    assert "evil.example" not in response.content.decode()

"""The login page with a provider configured, with local passwords on (development's
default) and off (CONDUIT_LOCAL_PASSWORDS=false): then the provider is the only way in."""

from django.contrib.auth import authenticate
from django.test import RequestFactory

from tests.console.conftest import DB
from tests.support.oidc import sign_in_through

pytestmark = DB


def test_the_login_page_offers_the_provider_beside_the_password_form(client, oidc):
    page = client.get("/accounts/login/?next=/work/").content.decode()

    assert "Sign in with Test IdP" in page
    assert 'href="/oidc/start/?next=/work/"' in page
    assert 'name="password"' in page


def test_without_a_provider_the_login_page_has_the_password_form_only(client):
    page = client.get("/accounts/login/").content.decode()

    assert 'name="password"' in page
    assert "/oidc/start/" not in page


def test_with_passwords_off_the_login_page_offers_only_the_provider(client, passwords_off):
    page = client.get("/accounts/login/").content.decode()

    assert "Sign in with Test IdP" in page
    assert 'name="password"' not in page
    assert 'action="/accounts/login/"' not in page


def test_with_passwords_off_a_password_post_is_refused(client, passwords_off, alice):
    response = client.post("/accounts/login/", {"username": "alice", "password": "password"})

    assert response.status_code == 403
    assert "_auth_user_id" not in client.session
    assert authenticate(RequestFactory().post("/"), username="alice", password="password") is None


def test_with_passwords_off_the_admin_login_is_the_providers_page(client, passwords_off):
    page = client.get("/admin/login/?next=/admin/")

    assert page.status_code == 200
    assert 'href="/oidc/start/?next=/admin/"' in page.content.decode()
    assert client.post("/admin/login/", {"username": "x", "password": "y"}).status_code == 403


def test_with_passwords_off_the_provider_still_signs_in(client, passwords_off, django_user_model):
    passwords_off.set_user("olga", "conduit-ops")

    assert sign_in_through(client, passwords_off, "olga").status_code == 302
    assert client.get("/").status_code == 200

"""Sign-in throttling (django-axes): repeated wrong passwords for one username from one
address lock that pair out for a while, with a page that says so (issue 20)."""

from django.conf import settings

from tests.console.conftest import DB

pytestmark = DB

LIMIT = getattr(settings, "AXES_FAILURE_LIMIT", 5)


def sign_in(client, username="alice", password="password", address="10.0.0.1"):
    return client.post(
        "/accounts/login/",
        {"username": username, "password": password, "next": "/"},
        REMOTE_ADDR=address,
    )


def fail(client, times, **kwargs):
    return [sign_in(client, password="wrong", **kwargs).status_code for _ in range(times)]


def test_the_right_password_is_refused_after_too_many_wrong_ones(client, alice):
    fail(client, 30)

    response = sign_in(client)

    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    html = response.content.decode()
    assert "Too many failed sign-ins" in html
    assert "alice" in html
    assert 'href="/accounts/login/"' in html


def test_the_lockout_starts_at_the_limit(client, alice):
    assert fail(client, LIMIT - 1) == [200] * (LIMIT - 1)  # the form, with its error
    assert sign_in(client).status_code == 302  # one short of the limit: signs in

    client.logout()
    assert fail(client, LIMIT) == [200] * (LIMIT - 1) + [429]
    assert sign_in(client).status_code == 429


def test_a_lockout_is_keyed_by_username_and_address(client, alice, bob):
    fail(client, LIMIT)

    # The same user from another address, and another user from the same address,
    # still sign in: a stranger cannot lock an operator out from elsewhere.
    assert sign_in(client, address="10.0.0.2").status_code == 302
    client.logout()
    assert sign_in(client, username="bob").status_code == 302


def test_a_successful_sign_in_clears_the_count(client, alice):
    fail(client, LIMIT - 1)
    assert sign_in(client).status_code == 302
    client.logout()

    fail(client, LIMIT - 1)

    assert sign_in(client).status_code == 302

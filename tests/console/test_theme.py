"""The theme choice: a cookie the server reads, so a page renders in its theme."""

import pytest

from console.theme import THEME_COOKIE
from tests.console.conftest import DB

pytestmark = DB


def test_a_page_follows_the_system_until_a_theme_is_chosen(as_alice):
    html = as_alice.get("/").content.decode()

    assert '<html lang="en">' in html
    assert '<meta name="color-scheme" content="light dark">' in html
    assert 'name="theme" value="light" data-theme-toggle data-theme-current="system"' in html


@pytest.mark.parametrize(("choice", "following"), [("dark", "system"), ("light", "dark")])
def test_the_chosen_theme_is_stored_and_rendered_by_the_server(as_alice, choice, following):
    response = as_alice.post("/preferences/theme", {"theme": choice, "next": "/events?q=a"})

    assert response.status_code == 302
    assert response["Location"] == "/events?q=a"
    assert response.cookies[THEME_COOKIE].value == choice
    assert response.cookies[THEME_COOKIE]["httponly"]
    html = as_alice.get("/").content.decode()
    assert f'<html lang="en" data-theme="{choice}">' in html
    assert f'<meta name="color-scheme" content="{choice}">' in html
    assert f'value="{following}" data-theme-toggle data-theme-current="{choice}"' in html


def test_a_background_post_from_the_script_gets_no_page(as_alice):
    response = as_alice.post(
        "/preferences/theme", {"theme": "dark", "next": "/"}, headers={"HX-Request": "true"}
    )

    assert response.status_code == 204
    assert response.cookies[THEME_COOKIE].value == "dark"


def test_the_sign_in_page_has_the_theme_button_and_accepts_a_choice(client):
    assert b"data-theme-toggle" in client.get("/accounts/login/").content

    response = client.post("/preferences/theme", {"theme": "dark", "next": "/accounts/login/"})

    assert response["Location"] == "/accounts/login/"
    assert b'data-theme="dark"' in client.get("/accounts/login/").content


@pytest.mark.parametrize("choice", ["", "purple", "dark\x00", "DARK"])
def test_it_refuses_an_unknown_theme_and_keeps_the_cookie_unset(as_alice, choice):
    response = as_alice.post("/preferences/theme", {"theme": choice, "next": "/"})

    assert response.status_code == 400
    assert THEME_COOKIE not in response.cookies


def test_a_forged_cookie_renders_the_system_theme(as_alice):
    as_alice.cookies[THEME_COOKIE] = '"><script>'

    html = as_alice.get("/").content.decode()

    assert '<html lang="en">' in html
    assert '<script>"' not in html


def test_the_theme_post_refuses_to_redirect_off_site(as_alice):
    response = as_alice.post("/preferences/theme", {"theme": "light", "next": "//evil.example/"})

    assert response["Location"] == "/"


def test_the_theme_post_is_a_post(as_alice):
    assert as_alice.get("/preferences/theme").status_code == 405

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.template.loader import render_to_string
from django.test import RequestFactory

from tests.console.conftest import DB


def test_healthz_answers_ok_without_login(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.content == b"ok"
    assert response["Content-Type"].startswith("text/plain")


@DB
def test_it_redirects_an_anonymous_visitor_to_login(client):
    response = client.get("/")

    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"


@DB
def test_login_page_renders(client):
    response = client.get("/accounts/login/")

    assert response.status_code == 200
    assert b'name="password"' in response.content


@DB
def test_an_operator_signs_in_and_sees_the_work_list(client, alice):
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "password", "next": "/"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/"

    response = client.get("/")

    assert response.status_code == 200
    assert b"<h1>Work</h1>" in response.content
    assert b"alice" in response.content


@DB
def test_every_page_serves_htmx_and_our_js_from_static_files_under_a_strict_csp(as_alice):
    response = as_alice.get("/")

    csp = response["Content-Security-Policy"]
    assert "default-src 'self'" in csp
    assert "script-src 'self'" in csp
    assert "style-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert b'<script src="/static/django_htmx/htmx-2.min.js" defer>' in response.content
    assert b'<script src="/static/js/console.js" defer></script>' in response.content
    assert b"<script>" not in response.content  # no inline scripts
    assert b"hx-on" not in response.content
    assert b' style="' not in response.content  # no inline styles either
    assert response["X-Frame-Options"] == "DENY"


@DB
def test_the_workspace_is_a_partial_that_renders_alone(alice):
    request = RequestFactory().get("/")
    request.user = alice
    request.COOKIES = {}
    context = {"page": None, "facets": [], "filter": None, "chips": []}

    html = render_to_string("console/work_list.html#workspace", context, request=request)

    assert '<div id="workspace"' in html
    assert "<header" not in html


@DB
def test_logout_is_a_post(client, alice):
    client.force_login(alice)

    response = client.post("/accounts/logout/")

    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/"
    assert client.get("/").status_code == 302


@pytest.mark.django_db
def test_a_migration_creates_the_operators_group():
    assert Group.objects.filter(name="operators").exists()


@DB
def test_ensure_dev_operator_creates_a_superuser_once(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    settings.DEV_PASSWORD = ""
    settings.DEV_USER = "devop"

    first, second = io.StringIO(), io.StringIO()
    call_command("ensure_dev_operator", stdout=first)
    password = (tmp_path / "dev_password").read_text().strip()
    call_command("ensure_dev_operator", stdout=second)

    user = get_user_model().objects.get(username="devop")
    assert user.is_superuser
    assert user.check_password(password)
    assert password in first.getvalue()
    assert password in second.getvalue()

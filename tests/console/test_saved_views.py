"""Saved views: saving the Work list's filter under a name (no script: a form POST),
who sees and changes which view, and the names and filters refused."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from console.saved import rules
from console.saved.models import NAME_MAX, SavedView
from tests.console.conftest import DB

pytestmark = DB


@pytest.fixture
def carol(django_user_model):
    """A viewer who may change the team's views (the permission, no group)."""
    user = django_user_model.objects.create_user(username="carol", password="password")
    user.user_permissions.add(Permission.objects.get(codename="manage_team_views"))
    return user


def save(client, name, query="state=ready", **extra):
    return client.post("/views/save", {"name": name, "query": query, **extra})


def test_saving_the_filter_stores_its_canonical_query_and_opens_it(as_alice, alice):
    # A cursor, a poll stamp and search qualifiers are not part of a view.
    response = save(as_alice, "Billing ready", "kind=billing&state=ready&after=12.w1&q=source:gh")

    assert response.status_code == 302
    assert response["Location"] == "/?state=ready&source=gh&kind=billing"
    view = SavedView.objects.get()
    assert (view.owner, view.team, view.name) == (alice, False, "Billing ready")
    assert view.query == "state=ready&source=gh&kind=billing"
    html = as_alice.get(response["Location"]).content.decode()
    assert "Saved view “Billing ready”." in html
    link = 'href="/?state=ready&amp;source=gh&amp;kind=billing" aria-current="true"'
    assert f"{link}>Billing ready" in html


def test_saving_again_under_a_name_updates_that_view(as_alice):
    save(as_alice, "Mine", "state=ready")
    response = save(as_alice, "  Mine ", "state=failed")

    assert response["Location"] == "/?state=failed"
    assert list(SavedView.objects.values_list("name", "query")) == [("Mine", "state=failed")]


@pytest.mark.parametrize(
    "name",
    ["", "   ", "x" * (NAME_MAX + 1), "tab\there", "new\nline", "evil\u202eflip", "zero\u200bw"],
)
def test_it_refuses_a_name_that_cannot_be_shown_as_typed(as_alice, name):
    response = save(as_alice, name)

    assert response.status_code == 400
    assert not SavedView.objects.exists()
    assert b'role="alert"' in response.content


@given(st.text(max_size=NAME_MAX + 5))
def test_a_name_is_stored_trimmed_and_showable_or_refused_with_a_400(raw):
    try:
        name = rules.clean_name(raw)
    except rules.Refused as exc:
        status = exc.status
        assert status == 400
    else:
        assert name == name.strip()
        assert 0 < len(name) <= NAME_MAX
        assert name.isprintable()


def test_it_refuses_a_filter_the_work_list_would_refuse(as_alice):
    response = save(as_alice, "Bad", "state=nope")

    assert response.status_code == 400
    assert b"Unknown state" in response.content
    assert not SavedView.objects.exists()


@pytest.mark.parametrize("query", ["kind=" + "x" * 300, "state=ready&" * 200])
def test_it_refuses_a_filter_too_long_to_keep(as_alice, query):
    assert save(as_alice, "Long", query).status_code == 400
    assert not SavedView.objects.exists()


def test_a_personal_view_is_its_owners_alone(as_alice, bob):
    save(as_alice, "Alice's")
    view = SavedView.objects.get()
    client = Client()  # not alice's: her flash message waits in her cookie
    client.force_login(bob)

    assert "Alice&#x27;s" not in client.get("/").content.decode()
    assert client.post(f"/views/{view.pk}/delete").status_code == 404
    assert client.post(f"/views/{view.pk}/rename", {"name": "Bob's"}).status_code == 404
    assert SavedView.objects.get().name == "Alice's"
    # The same name is free for anyone else's own view.
    assert save(client, "Alice's").status_code == 302
    assert SavedView.objects.count() == 2


def test_a_viewer_without_the_permission_cannot_save_a_team_view(as_bob):
    response = save(as_bob, "Ours", team="1")

    assert response.status_code == 403
    assert not SavedView.objects.exists()


def test_a_team_view_is_read_by_all_and_changed_by_holders_of_the_permission(
    client, carol, bob, alice
):
    client.force_login(carol)
    assert save(client, "Team: failures", "state=failed", team="1").status_code == 302
    view = SavedView.objects.get()
    assert view.team

    for reader in (bob, alice):
        client = Client()
        client.force_login(reader)
        assert "Team: failures" in client.get("/").content.decode()
        assert client.post(f"/views/{view.pk}/delete").status_code == 403
        assert client.post(f"/views/{view.pk}/rename", {"name": "x"}).status_code == 403
    client = Client()
    client.force_login(carol)
    assert client.post(f"/views/{view.pk}/rename", {"name": "Failures"}).status_code == 302
    assert client.post(f"/views/{view.pk}/delete").status_code == 302
    assert not SavedView.objects.exists()


def test_the_owner_renames_and_deletes_their_view(as_alice):
    save(as_alice, "One")
    save(as_alice, "Two")
    one, two = SavedView.objects.order_by("name")

    assert as_alice.post(f"/views/{one.pk}/rename", {"name": "Two"}).status_code == 409
    assert as_alice.post(f"/views/{one.pk}/rename", {"name": ""}).status_code == 400
    response = as_alice.post(f"/views/{one.pk}/rename", {"name": "Uno", "next": "/views"})
    assert (response.status_code, response["Location"]) == (302, "/views")
    assert as_alice.post(f"/views/{two.pk}/delete").status_code == 302
    assert list(SavedView.objects.values_list("name", flat=True)) == ["Uno"]
    assert as_alice.post("/views/999999/delete").status_code == 404


def test_the_manage_page_lists_presets_team_and_own_views(as_alice):
    save(as_alice, "Mine", "is=exhausted")
    html = as_alice.get("/views").content.decode()

    assert "Waits older than an hour" in html
    assert "Mine" in html
    assert "is=exhausted" in html
    assert 'aria-label="Delete Mine"' in html


def test_read_only_mode_leaves_saved_views_working(as_alice, settings):
    # CONSOLE_READ_ONLY switches off actions on the store; a view is not one.
    settings.CONSOLE_READ_ONLY = True

    assert save(as_alice, "Still").status_code == 302
    assert SavedView.objects.filter(name="Still").exists()


def test_saving_is_post_only_and_needs_a_sign_in(client, as_bob):
    assert as_bob.get("/views/save").status_code == 405
    client.logout()
    response = save(client, "Anon")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login")


def test_a_facet_click_brings_back_a_save_form_for_the_new_filter(as_bob):
    # htmx swaps the results and, out of band, the filter form and this menu: the
    # menu's hidden query must be the filter now on screen, not the page's first.
    html = as_bob.get("/?state=ready&kind=x", headers={"HX-Request": "true"}).content.decode()

    assert 'id="view-tools" class="view-tools" hx-swap-oob="true"' in html
    assert 'name="query" value="state=ready&amp;kind=x"' in html

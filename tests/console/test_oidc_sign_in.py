"""Sign-in through the test suite's real OIDC provider (tests/support/oidc.py), without
a browser: the console's side through Django's test client, the provider's through
HTTP. First sign-in creates the user, groups follow the provider at every sign-in, and
every broken callback is a 4xx page."""

from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from django.contrib.auth.models import Group

from console.access import ROUTED_AMEND_LIMITS, WORK_CONTROL, holds
from tests.console.conftest import DB
from tests.support.oidc import provider_redirect, sign_in_through

pytestmark = DB


def _signed_in_user(client, django_user_model, username):
    user = django_user_model.objects.get(username=username)
    assert int(client.session["_auth_user_id"]) == user.pk
    return user


def test_first_sign_in_creates_the_user_with_the_mapped_groups(client, oidc, django_user_model):
    oidc.set_user("olga", "conduit-ops", "conduit-limits", "payroll")
    assert not django_user_model.objects.filter(username="olga").exists()

    response = sign_in_through(client, oidc, "olga")

    assert response.status_code == 302
    assert response["Location"] == "/"
    olga = _signed_in_user(client, django_user_model, "olga")
    assert olga.email == "olga@example.com"
    assert not olga.has_usable_password()
    assert sorted(olga.groups.values_list("name", flat=True)) == ["limit-amenders", "operators"]
    assert holds(olga, WORK_CONTROL)
    assert holds(olga, ROUTED_AMEND_LIMITS)
    assert client.get("/").status_code == 200


def test_a_user_without_a_mapped_group_is_read_only(client, oidc, django_user_model):
    oidc.set_user("rita", "payroll")

    assert sign_in_through(client, oidc, "rita").status_code == 302

    rita = _signed_in_user(client, django_user_model, "rita")
    assert not rita.groups.exists()
    assert not holds(rita, WORK_CONTROL)
    assert client.get("/").status_code == 200
    refused = client.post("/actions/cancel/01J0000000000000000000000", {"reason": "x"})
    assert refused.status_code == 403


def test_a_group_removed_at_the_provider_is_gone_at_the_next_sign_in(
    client, oidc, django_user_model
):
    oidc.set_user("omar", "conduit-ops")
    sign_in_through(client, oidc, "omar")
    assert holds(_signed_in_user(client, django_user_model, "omar"), WORK_CONTROL)

    oidc.set_user("omar", "payroll")
    client.logout()
    sign_in_through(client, oidc, "omar")

    omar = _signed_in_user(client, django_user_model, "omar")
    assert not omar.groups.filter(name="operators").exists()
    assert not holds(omar, WORK_CONTROL)


def test_console_groups_the_mapping_does_not_name_are_left_alone(client, oidc, django_user_model):
    oidc.set_user("olga", "conduit-ops")
    sign_in_through(client, oidc, "olga")
    olga = django_user_model.objects.get(username="olga")
    olga.groups.add(Group.objects.create(name="auditors"))

    oidc.set_user("olga")
    client.logout()
    sign_in_through(client, oidc, "olga")

    assert list(olga.groups.values_list("name", flat=True)) == ["auditors"]


def test_an_existing_account_of_the_same_username_is_the_one_signed_in(
    client, oidc, django_user_model
):
    local = django_user_model.objects.create_user("olga", password="password")
    oidc.set_user("olga", "conduit-ops")

    sign_in_through(client, oidc, "olga")

    assert _signed_in_user(client, django_user_model, "olga").pk == local.pk
    assert django_user_model.objects.filter(username="olga").count() == 1


def test_a_disabled_account_is_refused(client, oidc, django_user_model):
    django_user_model.objects.create_user("olga", is_active=False)
    oidc.set_user("olga", "conduit-ops")

    response = sign_in_through(client, oidc, "olga")

    assert response.status_code == 403
    assert "_auth_user_id" not in client.session


def test_a_replayed_callback_is_a_400(client, oidc):
    oidc.set_user("olga", "conduit-ops")
    back = urlsplit(provider_redirect(client, oidc, "olga"))
    assert client.get(f"{back.path}?{back.query}").status_code == 302

    assert client.get(f"{back.path}?{back.query}").status_code == 400


@pytest.mark.parametrize(
    ("changed", "status"),
    [
        # A state this browser did not start: not its sign-in.
        ({"state": "not-the-state"}, 400),
        # A code the provider did not issue: its token endpoint refuses it.
        ({"code": "forged"}, 403),
    ],
    ids=["foreign-state", "forged-code"],
)
def test_a_tampered_callback_is_refused(client, oidc, changed, status):
    oidc.set_user("olga", "conduit-ops")
    back = urlsplit(provider_redirect(client, oidc, "olga"))
    query = dict(parse_qsl(back.query)) | changed

    response = client.get(f"{back.path}?{urlencode(query)}")

    assert response.status_code == status
    assert "_auth_user_id" not in client.session


def test_a_callback_without_a_sign_in_started_is_a_403(client, oidc):
    response = client.get("/oidc/callback/?code=abc&state=def")

    assert response.status_code == 403
    assert b"Sign-in did not succeed" in response.content


def test_a_nonce_that_does_not_match_is_a_400(client, oidc):
    oidc.set_user("olga", "conduit-ops")
    back = urlsplit(provider_redirect(client, oidc, "olga"))
    session = client.session
    state = dict(parse_qsl(back.query))["state"]
    session["oidc_states"][state]["nonce"] = "another-nonce"
    session.save()

    response = client.get(f"{back.path}?{back.query}")

    assert response.status_code == 400
    assert "_auth_user_id" not in client.session


def test_a_provider_error_answer_is_a_403(client, oidc):
    client.get("/oidc/start/")

    response = client.get("/oidc/callback/?error=access_denied")

    assert response.status_code == 403


def test_an_unreachable_provider_is_a_502(client, oidc, settings):
    oidc.set_user("olga", "conduit-ops")
    back = urlsplit(provider_redirect(client, oidc, "olga"))
    # A port nothing listens on: the connection is refused at once.
    settings.OIDC_OP_TOKEN_ENDPOINT = "http://127.0.0.1:9/o/token/"

    response = client.get(f"{back.path}?{back.query}")

    assert response.status_code == 502


@pytest.mark.parametrize("path", ["/oidc/start/", "/oidc/callback/?code=a&state=b"])
def test_without_a_provider_the_oidc_urls_are_404(client, path):
    assert client.get(path).status_code == 404

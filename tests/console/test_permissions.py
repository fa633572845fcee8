"""Who may do what: anonymous visitors sign in, viewers read, operators act, and the
read-only switch turns everyone into a viewer."""

import pytest
from django.test import Client

import storage
from console.actions.common import new_token
from storage import WorkState
from storage.default import default_store
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

PAGES = [
    "/",
    "/works/w1",
    "/events",
    "/events/e1",
    "/executions",
    "/waits",
    "/timers",
    "/scopes",
    "/actions/cancel/w1",
    "/actions/bulk?do=cancel-all",
    "/executions/x/artifacts/a",
]


def state_of(work_id: str) -> WorkState:
    return storage.view(default_store(), None, lambda tx: tx.work(work_id).state)


@pytest.fixture
def w1():
    f.exhausted("w1")
    f.event("e1", work_id="w1")


@pytest.mark.parametrize("path", PAGES)
def test_it_redirects_an_anonymous_visitor_to_sign_in(client, path):
    response = client.get(path)

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


@pytest.mark.parametrize(
    "path", ["/actions/cancel/w1", "/actions/bulk", "/actions/bulk/review", "/preferences/poll"]
)
def test_an_anonymous_post_changes_nothing(client, w1, path):
    response = client.post(path, {"reason": "x", "token": new_token(), "do": "cancel-selected"})

    assert response.status_code == 302
    assert state_of("w1") is WorkState.READY


@pytest.mark.parametrize("path", PAGES[:8])
def test_a_viewer_reads_every_page(as_bob, w1, path):
    assert as_bob.get(path).status_code == (403 if path.startswith("/actions") else 200)


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/actions/cancel/w1", {"reason": "x"}),
        ("/actions/retry/w1", {"reason": "x"}),
        ("/actions/bulk", {"do": "cancel-selected", "work": "w1", "reason": "x"}),
    ],
)
def test_a_viewer_gets_403_on_actions_and_nothing_happens(as_bob, w1, path, data):
    page = as_bob.get(path)
    response = as_bob.post(path, {**data, "token": new_token()})

    assert page.status_code == 403
    assert response.status_code == 403
    assert b"operators" in response.content  # says how to get the role
    assert state_of("w1") is WorkState.READY


def test_a_viewer_sees_no_selection_or_bulk_buttons(as_bob, w1):
    html = as_bob.get("/").content.decode()

    assert 'name="work"' not in html
    assert "retry-all" not in html
    assert "viewer" in html


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "workspace"},  # facet, sort, page
        {"HTTP_HX_REQUEST": "true", "QUERY_STRING": "stamp=0.0"},  # a live poll
    ],
    ids=["navigation", "poll"],
)
def test_every_swapped_workspace_keeps_the_operators_controls(client, alice, bob, w1, headers):
    client.force_login(alice)
    operator = client.get("/", **headers).content.decode()
    client.force_login(bob)
    viewer = client.get("/", **headers).content.decode()

    assert operator.lstrip().startswith('<div id="workspace"')
    assert 'name="work" value="w1"' in operator
    assert "data-select-all" in operator
    assert "data-selected-count" in operator
    for value in ("retry-selected", "cancel-selected", "retry-all", "cancel-all"):
        assert f'value="{value}"' in operator
    assert viewer.lstrip().startswith('<div id="workspace"')
    assert 'name="work"' not in viewer
    assert "retry-all" not in viewer


def test_a_superuser_is_an_operator(client, django_user_model, w1):
    root = django_user_model.objects.create_superuser("root", password="password")
    client.force_login(root)

    client.post("/actions/cancel/w1", {"reason": "x", "token": new_token()})

    assert state_of("w1") is WorkState.CANCELLED


def test_read_only_mode_hides_every_action(as_alice, w1, settings):
    settings.CONSOLE_READ_ONLY = True

    listing = as_alice.get("/").content.decode()
    detail = as_alice.get("/works/w1").content.decode()

    assert "Read-only mode" in listing
    assert "retry-all" not in listing
    assert 'name="work"' not in listing
    assert "/actions/" not in detail


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/actions/cancel/w1", {"reason": "x"}),
        ("/actions/bulk", {"do": "cancel-selected", "work": "w1", "reason": "x"}),
        ("/actions/bulk/review", {"do": "cancel-selected", "work": "w1"}),
    ],
)
def test_read_only_mode_refuses_actions_server_side(as_alice, w1, settings, path, data):
    settings.CONSOLE_READ_ONLY = True

    response = as_alice.post(path, {**data, "token": new_token()})

    assert response.status_code == 403
    assert b"read-only mode" in response.content
    assert state_of("w1") is WorkState.READY


def test_a_viewer_cannot_review_a_bulk_action(as_bob, w1):
    response = as_bob.post("/actions/bulk/review", {"do": "cancel-selected", "work": "w1"})

    assert response.status_code == 403
    assert as_bob.get("/actions/bulk/review").status_code == 405


def test_actions_need_a_csrf_token(alice, w1):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    response = client.post("/actions/cancel/w1", {"reason": "x", "token": new_token()})

    assert response.status_code == 403
    assert state_of("w1") is WorkState.READY


def test_actions_are_post_only(as_alice, w1):
    response = as_alice.put("/actions/cancel/w1")

    assert response.status_code == 405

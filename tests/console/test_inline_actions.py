"""One-step actions from list rows: Retry and Cancel open a compact confirmation in
place (htmx) or the full page (no script), with preset reasons plus free text; acting
returns the operator to the list they came from, with the result flashed."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest

import storage
from console.actions.common import new_token
from console.forms import PRESET_REASONS
from storage import WorkState
from storage.default import default_store
from storage.ops.manual import MANUAL_SOURCE
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB
HX = {"HTTP_HX_REQUEST": "true"}
LIST = "/?state=ready&kind=billing.charge"


def reasons(work_id: str) -> list[str]:
    """The reasons recorded in the Work's manual (audit) Events."""
    events = storage.view(default_store(), None, lambda tx: tx.work_events(work_id))
    return [
        json.loads(e.event.payload.data)["reason"]
        for e in events
        if e.event.source == MANUAL_SOURCE and e.event.payload
    ]


def test_a_row_offers_retry_and_cancel_that_return_to_the_list(as_alice):
    f.exhausted("w-ex")
    f.running("w-run")
    f.completed("w-done")

    html = as_alice.get("/?stamp=1.1&state=ready&state=running&state=completed").content.decode()

    back = "next=/%3Fstate%3Dready%26state%3Drunning%26state%3Dcompleted"
    assert f'href="/actions/retry/w-ex?{back}"' in html
    assert f'hx-get="/actions/cancel/w-ex?{back}"' in html
    assert 'hx-target="closest tr" hx-swap="afterend"' in html
    assert "/actions/retry/w-run" not in html  # a live attempt: retry does not apply
    assert "/actions/cancel/w-run" in html
    assert "/actions/cancel/w-done" not in html  # terminal: nothing to do
    assert "stamp" not in re.search(r'href="/actions/retry/w-ex\?[^"]*"', html).group(0)


def test_htmx_gets_the_compact_confirmation_with_presets_and_the_failure(as_alice):
    f.exhausted("w1")

    response = as_alice.get(f"/actions/retry/w1?next={quote(LIST)}", **HX)

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<tr class="inline-confirm"')
    assert "<html" not in html
    assert f'name="next" value="{LIST.replace("&", "&amp;")}"' in html
    for preset in PRESET_REASONS:
        assert preset in html
    assert "attempt 1" in html
    assert "boom" in html
    assert "Attempt 2 is created pending" in html


def test_without_script_the_link_opens_the_full_page_which_carries_next(as_alice):
    f.exhausted("w1")

    html = as_alice.get(f"/actions/retry/w1?next={quote(LIST)}").content.decode()

    assert "<html" in html
    assert f'name="next" value="{LIST.replace("&", "&amp;")}"' in html
    assert "← Back to the list" in html


def test_acting_returns_to_the_list_with_the_result_flashed(as_alice):
    f.exhausted("w1")
    data = {"preset": "Fix deployed", "reason": "", "token": new_token(), "next": LIST}

    response = as_alice.post("/actions/retry/w1", data)

    assert response.status_code == 302
    assert response["Location"] == LIST
    page = as_alice.get(LIST).content.decode()
    assert "Retried Work w1: attempt 2 is pending." in page
    assert reasons("w1") == ["Fix deployed"]


def test_htmx_acting_reloads_the_list_it_came_from(as_alice):
    f.running("w1")
    data = {"preset": "Duplicate", "reason": "same as w0", "token": new_token(), "next": LIST}

    response = as_alice.post("/actions/cancel/w1", data, **HX)

    assert response["HX-Redirect"] == LIST
    work = storage.view(default_store(), None, lambda tx: tx.work("w1"))
    assert work.state is WorkState.CANCELLED
    assert reasons("w1") == ["Duplicate: same as w0"]


@pytest.mark.parametrize(
    "unsafe",
    ["//evil.example/", "https://evil.example/", "javascript:alert(1)", "/\\evil.example", "evil"],
)
def test_it_refuses_a_next_that_leaves_the_site(as_alice, unsafe):
    f.exhausted("w1")
    data = {"preset": "Fix deployed", "token": new_token(), "next": unsafe}

    response = as_alice.post("/actions/retry/w1", data)

    assert response.status_code == 302
    assert response["Location"] == "/works/w1"


def test_a_confirmation_without_a_reason_is_shown_again_in_place_as_a_400(as_alice):
    f.exhausted("w1")

    response = as_alice.post(
        "/actions/retry/w1", {"reason": " ", "token": new_token(), "next": LIST}, **HX
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert "data-inline-confirm" in html
    assert "Give a reason" in html
    assert reasons("w1") == []


def test_an_unknown_preset_is_refused(as_alice):
    f.exhausted("w1")

    response = as_alice.post(
        "/actions/retry/w1", {"preset": "because", "token": new_token(), "next": LIST}
    )

    assert response.status_code == 400
    assert reasons("w1") == []


def test_the_dashboards_exhausted_rows_act_in_place_and_return_to_the_dashboard(as_alice):
    f.exhausted("w1")

    html = as_alice.get("/dashboard?window=1h").content.decode()

    exhausted = html.split('id="exhausted"')[1].split("</section>")[0]
    assert 'hx-get="/actions/retry/w1?next=/dashboard%3Fwindow%3D1h"' in exhausted
    assert 'hx-get="/actions/cancel/w1?next=/dashboard%3Fwindow%3D1h"' in exhausted


def test_a_viewer_sees_no_row_actions(as_bob):
    f.exhausted("w1")

    html = as_bob.get("/").content.decode()

    assert "/actions/retry/w1" not in html

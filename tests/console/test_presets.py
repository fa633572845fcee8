"""Built-in presets: each opens a list page that answers, the dashboard's tiles link
to them, and the Waits page's ``older`` filter behind "Waits older than an hour"."""

from __future__ import annotations

import time

import pytest

from console.runtime.filters import PageCursor, WaitFilter
from console.runtime.reads import read_wait_page
from console.saved.presets import BY_KEY, PRESETS
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

HOUR = 3600 * 10**9


def test_every_preset_opens_a_page_that_answers(as_bob):
    f.exhausted("stuck")
    for preset in PRESETS:
        response = as_bob.get(preset.url())
        assert response.status_code == 200, preset.key
    assert "stuck" in as_bob.get(BY_KEY["exhausted"].url()).content.decode()


def test_the_work_list_menu_lists_every_preset(as_bob):
    html = as_bob.get("/").content.decode()

    for preset in PRESETS:
        assert preset.name in html


def test_the_dashboard_tiles_are_presets(as_bob):
    html = as_bob.get("/dashboard").content.decode()

    for key, figure in (
        ("exhausted", "exhausted"),
        ("expired-leases", "expired"),
        ("timers-overdue", "overdue"),
    ):
        url = BY_KEY[key].url().replace("&", "&amp;")
        assert f'href="{url}" data-figure="{figure}"' in html


def test_a_scope_dashboards_exhausted_tile_is_the_preset_within_that_scope(as_bob):
    f.scope("acme")
    html = as_bob.get("/dashboard/acme").content.decode()

    url = BY_KEY["exhausted"].url("acme").replace("&", "&amp;")
    assert "within=acme" in url
    assert f'href="{url}" data-figure="exhausted"' in html


def test_waits_older_than_an_age_leave_out_the_younger(as_bob):
    f.parked("young")

    assert "young-wait" in as_bob.get("/waits").content.decode()
    html = as_bob.get("/waits?older=1h").content.decode()
    assert "young-wait" not in html
    assert "No Wait has waited longer than 1h." in html
    later = read_wait_page(WaitFilter("1h", HOUR), PageCursor(), now=time.time_ns() + 2 * HOUR)
    assert later is not None
    assert [r.wait.id for r in later.rows] == ["young-wait"]


@pytest.mark.parametrize("older", ["1x", "-1h", "1.5h", "yesterday"])
def test_it_refuses_an_age_it_cannot_read(as_bob, older):
    assert as_bob.get(f"/waits?older={older}").status_code == 400

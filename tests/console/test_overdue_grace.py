"""Overdue Timers (issue 34): a Timer counts as overdue only when it is late by more
than the grace (``CONSOLE_OVERDUE_GRACE_SECONDS``, 30 s unless set), which the tile
states, on the dashboard, a Scope's dashboard and the Timers list the tile opens."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import urlencode

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from conduit.env import env_seconds
from console.saved.presets import BY_KEY
from tests.console import factories as f
from tests.console.conftest import DB


def _seed() -> None:
    f.scope("acme")
    f.work("w-acme", scope_id="acme")
    f.work("w-free")
    f.timer("just-due", work_id="w-acme", fire_in=-5)  # a healthy runtime fires it now
    f.timer("late", work_id="w-acme", fire_in=-120)
    f.timer("late-free", work_id="w-free", fire_in=-90)
    f.timer("later", work_id="w-acme", fire_in=300)


def _tile(html: str) -> tuple[int, str]:
    found = re.search(
        r'data-figure="overdue">.*?<span class="n">(\d+)</span>\s*<span class="since">(.*?)</span>',
        html,
        re.S,
    )
    assert found is not None
    return int(found.group(1)), found.group(2)


def _listed(html: str) -> list[str]:
    return re.findall(r'<tr id="timer-([^"]+)"', html)


@DB
def test_only_timers_late_by_more_than_the_grace_are_overdue(as_alice) -> None:
    _seed()

    everywhere = as_alice.get("/dashboard").content.decode()
    acme = as_alice.get("/dashboard/acme").content.decode()
    target = as_alice.get(BY_KEY["timers-overdue"].url()).content.decode()

    assert _tile(everywhere)[0] == 2
    assert _tile(everywhere)[1].startswith("overdue by more than 30 s; since ")
    assert _tile(acme)[0] == 1
    panel = re.search(r'id="overdue".*?</section>', acme, re.S)
    assert panel is not None
    assert "late" in panel.group(0)
    assert "just-due" not in panel.group(0)
    assert _listed(target) == ["late", "late-free"]
    assert "2</strong> timers overdue by more than 30 s" in target
    assert _listed(as_alice.get("/timers?due=1").content.decode()) == [
        "late",
        "late-free",
        "just-due",
    ]


@DB
def test_the_grace_is_a_setting(as_alice, settings) -> None:
    _seed()
    settings.CONSOLE_OVERDUE_GRACE_SECONDS = 0

    assert _tile(as_alice.get("/dashboard").content.decode())[0] == 3
    html = as_alice.get("/timers?overdue=1").content.decode()
    assert _listed(html) == ["late", "late-free", "just-due"]
    assert "Overdue by more than 0 s" in html


@DB
def test_no_overdue_timer_says_so_with_the_grace(as_alice) -> None:
    f.work("w")
    f.timer("just-due", work_id="w", fire_in=-5)

    count, since = _tile(as_alice.get("/dashboard").content.decode())
    assert (count, since) == (0, "overdue by more than 30 s")
    assert b"No timer is overdue." in as_alice.get("/timers?overdue=1").content
    assert as_alice.get("/timers?overdue=yes").status_code == 400


@pytest.mark.parametrize(("raw", "value"), [(None, 30), ("0", 0), (" 45 ", 45)])
def test_the_reader_takes_whole_seconds(monkeypatch, raw, value) -> None:
    if raw is None:
        monkeypatch.delenv("CONSOLE_OVERDUE_GRACE_SECONDS", raising=False)
    else:
        monkeypatch.setenv("CONSOLE_OVERDUE_GRACE_SECONDS", raw)
    assert env_seconds("CONSOLE_OVERDUE_GRACE_SECONDS", 30) == value


@pytest.mark.parametrize("raw", ["-1", "30s", "", "1.5"])
def test_the_reader_refuses_anything_else(monkeypatch, raw) -> None:
    monkeypatch.setenv("CONSOLE_OVERDUE_GRACE_SECONDS", raw)
    with pytest.raises(ImproperlyConfigured, match="CONSOLE_OVERDUE_GRACE_SECONDS"):
        env_seconds("CONSOLE_OVERDUE_GRACE_SECONDS", 30)


def _tile_link(html: str) -> str:
    found = re.search(r'<a class="tile[^"]*" href="([^"]+)" data-figure="overdue">', html)
    assert found is not None
    return unescape(found.group(1))


@DB
@pytest.mark.parametrize("root", ["a b ", "why?not=1&x", "50%off%2e%2F", "a/../b", "🚀/👩\u200d💻"])
def test_a_scope_dashboards_overdue_link_lists_exactly_its_count(as_alice, root: str) -> None:
    """Issue 34: a Scope dashboard's tile counted that Scope's tree but its link opened
    every Scope's overdue Timers. The link names the Scope (any ID the store accepts),
    and its list holds exactly the tile's Timers: the Scope's and its descendants'."""
    child, other = f"{root}/child", "other"
    f.scope(root)
    f.scope(child, parent=root)
    f.scope(other)
    for scope_id in (root, child, other, ""):
        f.work(f"w-{scope_id}", scope_id=scope_id)
        f.timer(f"late-{scope_id}", work_id=f"w-{scope_id}", fire_in=-120)
        f.timer(f"just-{scope_id}", work_id=f"w-{scope_id}", fire_in=-5)
    f.timer("late-no-work", fire_in=-100)

    dashboard = as_alice.get(reverse("dashboard_scope", args=[root])).content.decode()
    count, _ = _tile(dashboard)
    link = _tile_link(dashboard)
    assert link == "/timers?" + urlencode({"overdue": "1", "scope": root})
    listed = as_alice.get(link)

    html = listed.content.decode()
    assert listed.status_code == 200
    assert count == 2
    assert sorted(unescape(t) for t in _listed(html)) == sorted(f"late-{s}" for s in (root, child))
    assert f"<strong>{count}</strong> timers overdue by more than 30 s" in html
    # Every Scope's overdue Timers are the store-wide preset's: the rest are there.
    everywhere = as_alice.get("/timers?overdue=1").content.decode()
    assert len(_listed(everywhere)) == 5


@DB
def test_the_timers_scope_filter_refuses_what_no_scope_id_is(as_alice) -> None:
    assert as_alice.get("/timers", {"scope": "a\x00b"}).status_code == 400
    assert as_alice.get("/timers", {"scope": "x" * 256}).status_code == 400
    html = as_alice.get("/timers", {"overdue": "1", "scope": "no-such"}).content.decode()
    assert "No timer is overdue." in html

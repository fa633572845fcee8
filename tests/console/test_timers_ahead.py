"""Timers to come (``/timers/ahead``, issue 32): what fires in the next hour or day as
a density strip over the list. Each column equals a recount of the seeded Timers; the
overdue ones are marked with the dashboards' grace; ``scope`` takes the Scope's
subtree and ``kind`` the Work's kind; the list pages by keyset; bad input is a 400;
the query count is pinned whatever the store holds."""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import urlencode

import pytest
from django.db import connections

from console.runtime.ahead import WINDOWS, AheadFilter, parse_ahead_filter
from console.runtime.filters import PageCursor
from console.runtime.reads import AheadPage, read_ahead
from console.urlstate import FilterError
from storage import Timer, seconds
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.paging import timer_in

pytestmark = DB

# (Timer ID, fires in seconds from now, Work ID).
SEEDED = [
    ("late", -120, "w-acme"),  # overdue: late by more than the 30 s grace
    ("late-eu", -45, "w-eu-mail"),
    ("just-due", -5, "w-acme"),  # due, within the grace
    ("soon", 30, "w-eu"),
    ("soon-free", 30, ""),  # serves no Work
    ("4m", 240, "w-globex"),
    ("7m", 420, "w-eu-mail"),
    ("59m", 3540, "w-acme"),
    ("61m", 3660, "w-eu"),  # past the hour, within the day
    ("23h", 23 * 3600, "w-globex"),
    ("25h", 25 * 3600, "w-acme"),  # past the day
]


def seed() -> dict[str, Timer]:
    f.scope("acme")
    f.scope("acme/eu", parent="acme")
    f.scope("globex")
    f.work("w-acme", scope_id="acme", kind="billing.charge")
    f.work("w-eu", scope_id="acme/eu", kind="billing.charge")
    f.work("w-eu-mail", scope_id="acme/eu", kind="mail.send")
    f.work("w-globex", scope_id="globex", kind="billing.charge")
    armed = f.transact(lambda tx: [timer_in(tx, i, w, s) for i, s, w in SEEDED])
    return {t.id: t for t in armed}


WORK = {
    "w-acme": ("acme", "billing.charge"),
    "w-eu": ("acme/eu", "billing.charge"),
    "w-eu-mail": ("acme/eu", "mail.send"),
    "w-globex": ("globex", "billing.charge"),
    "": ("", ""),
}


def recount(
    timers: dict[str, Timer], now: int, window: str, scopes: set[str] | None, kind: str
) -> tuple[int, int, list[int], list[str]]:
    """Overdue, due (overdue included), per bucket ahead and the listed IDs, counted
    here from the seeded records: bucket i is (now + i*width, now + (i+1)*width]."""
    w = WINDOWS[window]
    chosen = [
        t
        for t in timers.values()
        if (scopes is None or WORK[t.work_id][0] in scopes)
        and (not kind or WORK[t.work_id][1] == kind)
    ]
    overdue = sum(1 for t in chosen if t.fire_at <= now - seconds(30))
    due = sum(1 for t in chosen if t.fire_at <= now)
    ahead = [0] * w.count
    for t in chosen:
        if now < t.fire_at <= now + w.span:
            ahead[(t.fire_at - now - 1) // w.width] += 1
    listed = sorted(
        (t for t in chosen if t.fire_at <= now + w.span), key=lambda t: (t.fire_at, t.id)
    )
    return overdue, due, ahead, [t.id for t in listed]


def read(af: AheadFilter, now: int) -> AheadPage:
    page = read_ahead(af, PageCursor(), now=now)
    assert page is not None
    return page


@pytest.mark.parametrize("window", list(WINDOWS))
def test_each_column_is_a_recount_of_the_timers_firing_in_it(window: str) -> None:
    timers = seed()
    now = f.transact(lambda tx: tx.now)
    for scope, scopes in (("", None), ("acme", {"acme", "acme/eu"}), ("acme/eu", {"acme/eu"})):
        for kind in ("", "billing.charge", "mail.send", "no.such.kind"):
            page = read(AheadFilter(window, scope, kind, 200), now)
            overdue, due, ahead, listed = recount(timers, now, window, scopes, kind)
            assert (page.overdue, page.due, page.ahead) == (overdue, due, ahead), (scope, kind)
            assert [r.timer.id for r in page.rows] == listed
            assert page.total == len(listed) == due + sum(ahead)


def test_the_windows_split_the_seeded_timers_where_expected() -> None:
    seed()
    now = f.transact(lambda tx: tx.now)
    hour, day = read(AheadFilter("1h"), now), read(AheadFilter("24h"), now)
    assert (hour.overdue, hour.due) == (day.overdue, day.due) == (2, 3)
    # soon and soon-free in 0-5 min, 4m too; 7m in 5-10 min; 59m in 55-60 min.
    assert hour.ahead == [3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    assert day.ahead[0] == 5
    assert day.ahead[1] == 1
    assert day.ahead[22] == 1
    assert "61m" not in [r.timer.id for r in hour.rows]
    assert [r.timer.id for r in day.rows][-2:] == ["61m", "23h"]


def listed(page: str) -> list[str]:
    return [html.unescape(i) for i in re.findall(r'<tr id="timer-([^"]+)"', page)]


def test_overdue_timers_are_marked_with_the_dashboards_grace(as_alice, settings) -> None:
    seed()
    page = as_alice.get("/timers/ahead").content.decode()
    assert listed(page)[:3] == ["late", "late-eu", "just-due"]
    late = re.search(r'<tr id="timer-late" class="overdue">.*?</tr>', page, re.S)
    assert late is not None
    assert "overdue &gt; 30 s" in late.group(0)
    just = re.search(r'<tr id="timer-just-due">.*?</tr>', page, re.S)
    assert just is not None
    assert ">due</span>" in just.group(0)
    assert "overdue" not in just.group(0)
    assert "<strong>2</strong> overdue by more than 30 s" in page
    assert "Overdue by more than 30 s <strong>2</strong>" in page  # the strip's legend

    settings.CONSOLE_OVERDUE_GRACE_SECONDS = 0
    page = as_alice.get("/timers/ahead").content.decode()
    assert re.search(r'<tr id="timer-just-due" class="overdue">', page)
    assert "<strong>3</strong> overdue by more than 0 s" in page


def test_scope_takes_its_subtree_and_kind_the_works_kind(as_alice) -> None:
    seed()
    acme = as_alice.get("/timers/ahead?" + urlencode({"scope": "acme", "window": "24h"}))
    assert listed(acme.content.decode()) == [
        "late",
        "late-eu",
        "just-due",
        "soon",
        "7m",
        "59m",
        "61m",
    ]
    eu_mail = as_alice.get("/timers/ahead?" + urlencode({"scope": "acme/eu", "kind": "mail.send"}))
    assert listed(eu_mail.content.decode()) == ["late-eu", "7m"]
    text = as_alice.get("/timers/ahead?kind=mail.send&window=24h").content.decode()
    # The window's tabs keep the filters; the Scope's name links to its dashboard.
    assert 'href="/timers/ahead?kind=mail.send"' in text
    assert listed(text) == ["late-eu", "7m"]
    nothing = as_alice.get("/timers/ahead?scope=nowhere").content.decode()
    assert "Nothing fires in the next hour." in nothing


@pytest.mark.parametrize(
    "query",
    [
        {"window": "2h"},
        {"window": "day"},
        {"kind": "a\x00b"},
        {"scope": "s" * 256},
        {"size": "7"},
        {"after": "soon"},
        {"after": "1.a", "before": "2.b"},
        {"before": "99999999999999999999.x"},
    ],
)
def test_bad_input_is_a_400_naming_it(as_alice, query: dict[str, str]) -> None:
    answer = as_alice.get("/timers/ahead?" + urlencode(query))
    assert answer.status_code == 400, query


def test_the_filter_keeps_what_it_was_given() -> None:
    from django.http import QueryDict

    af = parse_ahead_filter(QueryDict("window=24h&scope=a%20b%2F%3F&kind=mail.send&size=25"))
    assert af == AheadFilter("24h", "a b/?", "mail.send", 25)
    assert af.querystring() == "?" + urlencode(
        {"window": "24h", "scope": "a b/?", "kind": "mail.send", "size": "25"}
    )
    with pytest.raises(FilterError) as caught:
        parse_ahead_filter(QueryDict("window=7d&size=3"))
    assert set(caught.value.errors) == {"window", "size"}
    # What no store could take never reaches it: a lone surrogate, a NUL, 256 bytes.
    hostile = QueryDict(mutable=True)
    hostile.update({"scope": "a\ud800", "kind": "x\x00"})
    with pytest.raises(FilterError) as caught:
        parse_ahead_filter(hostile)
    assert set(caught.value.errors) == {"scope", "kind"}


def link(page: str, rel: str) -> str:
    found = re.search(rf'<a rel="{rel}" href="([^"]+)"', page)
    return html.unescape(found.group(1)) if found else ""


def test_the_list_pages_both_ways_and_a_column_opens_it_at_its_first_timer(as_alice) -> None:
    f.work("w", kind="paging.test")
    ids = [f"t-{n:03d}" for n in range(120)]
    # Ties within each minute, written in the reverse of ID order.
    f.transact(
        lambda tx: [
            timer_in(tx, i, "w", 60 + 60 * (n // 10)) for n, i in reversed(list(enumerate(ids)))
        ]
    )
    pages, url = [], "?"
    while url:
        text = as_alice.get("/timers/ahead" + url).content.decode()
        pages.append(listed(text))
        assert ("data-poll" in text) == (url == "?")  # only the first page polls
        url = link(text, "next")
    assert [len(p) for p in pages] == [50, 50, 20]
    assert [i for p in pages for i in p] == ids
    second = as_alice.get(
        "/timers/ahead" + link(as_alice.get("/timers/ahead").content.decode(), "next")
    )
    back = link(second.content.decode(), "prev")
    assert listed(as_alice.get("/timers/ahead" + back).content.decode()) == ids[:50]
    assert "⇤ Earliest" in second.content.decode()
    assert "Later →" in second.content.decode()

    # The page's View comes after the write: timers 40..49 (due 5 min after it) fall
    # in the first column, 50..99 (6 to 10 min) in the second, which opens the list
    # at its first.
    first = as_alice.get("/timers/ahead").content.decode()
    table = re.search(r'id="chart-ahead-table">.*?</details>', first, re.S)
    assert table is not None
    cells = re.findall(
        r'<th scope="row">([^<]+)</th><td class="num"><a href="([^"]+)">(\d+)</a>', table.group(0)
    )
    by_label = {label: (html.unescape(href), int(n)) for label, href, n in cells}
    assert by_label["in 5 to 10m"][1] == 50
    opened = as_alice.get(by_label["in 5 to 10m"][0]).content.decode()
    assert listed(opened)[:2] == ["t-050", "t-051"]


def test_a_page_costs_the_same_whatever_the_store_holds(
    as_alice, django_assert_num_queries
) -> None:
    """BEGIN, the View's clock (with the store version and latest sequence) (2);
    the list's page, the overdue and due counts and the strip (4; the list's count is
    the due ones' and the strip's sum); the page's Work (1); COMMIT (1): 9, and the
    Scopes (1) with
    ``scope``. The strip is one statement
    whatever the window, and no Timer of it is decoded."""
    seed()
    view = connections["view"]
    with django_assert_num_queries(8, connection=view):
        assert len(listed(as_alice.get("/timers/ahead").content.decode())) == 8
    f.work("bulk", scope_id="acme", kind="billing.charge")
    f.transact(lambda tx: [timer_in(tx, f"b-{n:03d}", "bulk", n * 300) for n in range(300)])
    seen: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    for url, n in (
        ("/timers/ahead?window=24h&size=200", 8),
        ("/timers/ahead?scope=acme&kind=billing.charge", 9),
    ):
        seen.clear()
        with django_assert_num_queries(n, connection=view), view.execute_wrapper(record):
            assert as_alice.get(url).status_code == 200
        # Timers are decoded for the page only: one statement reads their data.
        assert sum("SELECT data FROM conduit_timer" in sql for sql in seen) == 1, url

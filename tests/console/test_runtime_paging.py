"""The Waits and Timers pages in keyset pages (issue 22: a million Work rendered
every active Wait and every Timer, 10 MB a page): more rows than a page walked at
the default size both ways, the filters kept in every link, only the first page
polling, the query count pinned whatever the store holds, bad input a 400, and
cursors that hold any ID the storage rules accept."""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import urlencode

import pytest
from django.db import connections

from console.runtime.filters import PageCursor, WaitFilter
from console.runtime.reads import read_wait_page
from console.runtime.views import _pager
from console.urlstate import DEFAULT_PAGE_SIZE
from storage import seconds
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.odd_ids import IDS
from tests.console.support.paging import parked_at_once, timer_in

pytestmark = DB

ROW = re.compile(r'<tr[^>]*>\s*<td><span class="mono"><span title="([^"]*)" data-sid>')


def rows(page: str) -> list[str]:
    """The first ID of each table row (the Wait's, the Timer's), unescaped."""
    return [html.unescape(found) for found in ROW.findall(page)]


def link(page: str, rel: str) -> str:
    found = re.search(rf'<a rel="{rel}" href="([^"]+)"', page)
    return html.unescape(found.group(1)) if found else ""


def timers_at_once(*timer_ids: str, fire_in: float = 60) -> None:
    """Timers serving no Work, in ONE transaction, all firing at the same instant."""
    f.transact(lambda tx: [timer_in(tx, i, "", fire_in) for i in timer_ids])


def walk(client: Any, path: str, first: str, rel: str) -> list[list[str]]:
    """The pages from ``first`` following ``rel`` links, each page's row IDs."""
    pages, url = [], first
    while url:
        page = client.get(path + url)
        assert page.status_code == 200, url
        text = page.content.decode()
        pages.append(rows(text))
        # Only the first page polls (later ones shift as rows come and go); every
        # other page links to it.
        assert ("data-poll" in text) == ("⇤" not in text), url
        url = link(text, rel)
    return pages


def test_waits_walk_older_to_newer_and_back_at_the_default_size(as_alice) -> None:
    batches = [[f"wait-{b}-{n:02d}" for n in range(40)] for b in range(3)]
    for batch in batches:
        parked_at_once(*reversed(batch))  # ties, written in the reverse of ID order
    everything = [w for batch in batches for w in batch]  # oldest first, ties by ID

    forward = walk(as_alice, "/waits", "?", "next")
    assert [len(p) for p in forward] == [DEFAULT_PAGE_SIZE, DEFAULT_PAGE_SIZE, 20]
    assert [w for p in forward for w in p] == everything

    last = as_alice.get("/waits?" + urlencode({"after": key_of_wait(everything[-1])}))
    assert rows(last.content.decode()) == []  # nothing after the newest
    assert "No more active waits here." in last.content.decode()
    third = "?" + urlencode({"after": key_of_wait(everything[99])})
    backward = walk(as_alice, "/waits", third, "prev")
    assert backward == forward[::-1]

    first = as_alice.get("/waits").content.decode()
    assert "<strong>120</strong> active waits; 50 on this page" in first


def key_of_wait(wait_id: str) -> str:
    created = f.transact(lambda tx: tx.wait(wait_id).created_at)
    return f"{created}.{wait_id}"


def test_older_and_size_stay_in_every_page_link(as_alice) -> None:
    parked_at_once(*(f"old-{n:02d}" for n in range(30)))
    parked_at_once("young-0", "young-1", "young-2")
    # An hour later (the View's time injected), every Wait is older than a minute.
    later = f.transact(lambda tx: tx.now) + seconds(3600)
    older = WaitFilter("1m", 60 * 10**9, 25)
    page = read_wait_page(older, PageCursor(), now=later)
    assert page is not None
    assert page.total == 33
    assert [r.wait.id for r in page.rows] == [f"old-{n:02d}" for n in range(25)]
    links = _pager(older, page)
    assert links["next_url"] == "?" + urlencode(
        {"older": "1m", "size": 25, "after": f"{page.rows[-1].wait.created_at}.old-24"}
    )
    assert links["prev_url"] == links["first_url"] == ""  # the first page
    text = as_alice.get("/waits?size=25").content.decode()
    assert link(text, "next").startswith("?size=25&after=")
    assert "No Wait has waited longer than 1h." in as_alice.get("/waits?older=1h").content.decode()


def test_timers_walk_both_ways_and_due_stays_in_the_links(as_alice) -> None:
    timers_at_once(*(f"late-{n:03d}" for n in range(70)), fire_in=300)
    timers_at_once(*(f"over-{n:03d}" for n in range(60)), fire_in=-30)
    overdue = [f"over-{n:03d}" for n in range(60)]
    everything = overdue + [f"late-{n:03d}" for n in range(70)]

    forward = walk(as_alice, "/timers", "?", "next")
    assert [len(p) for p in forward] == [50, 50, 30]
    assert [t for p in forward for t in p] == everything

    due = walk(as_alice, "/timers", "?due=1", "next")
    assert [t for p in due for t in p] == overdue
    first = as_alice.get("/timers?due=1").content.decode()
    assert link(first, "next").startswith("?due=1&after=")
    assert "<strong>60</strong> timers due, earliest first; 50 on this page" in first
    back = as_alice.get("/timers" + link(first, "next")).content.decode()
    assert link(back, "prev").startswith("?due=1&before=")
    # Back from the second page of the due Timers: the first page again, polling.
    first_again = as_alice.get("/timers" + link(back, "prev")).content.decode()
    assert rows(first_again) == overdue[:50]
    assert "data-poll" in first_again


def test_a_page_costs_the_same_whatever_the_store_holds(
    as_alice, django_assert_num_queries
) -> None:
    """BEGIN, the View's clock (with the store version and latest sequence) (2),
    the page (1), the count (1), the page's Work's Timers (1) and its Work (1), COMMIT
    (1): 8 for Waits; Timers read no Work: 6. A page back that reaches the start reads
    the first page again: one more."""
    parked_at_once("few-0", "few-1", "few-2")
    view = connections["view"]
    with django_assert_num_queries(7, connection=view):
        assert len(rows(as_alice.get("/waits").content.decode())) == 3
    with django_assert_num_queries(5, connection=view):
        assert len(rows(as_alice.get("/timers").content.decode())) == 3
    parked_at_once(*(f"many-{n:03d}" for n in range(120)))
    timers_at_once(*(f"spare-{n:03d}" for n in range(100)))
    with django_assert_num_queries(7, connection=view):
        first = as_alice.get("/waits").content.decode()
    assert len(rows(first)) == DEFAULT_PAGE_SIZE
    with django_assert_num_queries(7, connection=view):
        second = as_alice.get("/waits" + link(first, "next")).content.decode()
    assert len(rows(second)) == DEFAULT_PAGE_SIZE
    with django_assert_num_queries(8, connection=view):
        back = as_alice.get("/waits" + link(second, "prev")).content.decode()
    assert rows(back) == rows(first)
    with django_assert_num_queries(5, connection=view):
        assert len(rows(as_alice.get("/timers?size=200").content.decode())) == 200


def test_the_waits_page_reads_the_timers_of_its_own_rows_only(as_alice) -> None:
    parked_at_once(*(f"wt-{n:03d}" for n in range(80)))
    timers_at_once(*(f"other-{n:03d}" for n in range(30)))
    seen: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "conduit_timer" in sql:
            seen.append(sql)
        return execute(sql, params, many, context)

    with connections["view"].execute_wrapper(record):
        text = as_alice.get("/waits?size=25").content.decode()
    assert len(rows(text)) == 25
    [timers_read] = seen
    assert "work_id IN" in timers_read, timers_read  # by the page's Work, not the table
    assert text.count('class="countdown"') == 25  # every row's timeout labelled


@pytest.mark.parametrize("path", ["/waits", "/timers"])
@pytest.mark.parametrize(
    "query",
    [
        "after=notakey",
        "before=12",
        "after=.x",
        "after=-1.x",
        "after=1.x&before=1.y",
        "size=7",
        f"after={2**63}.x",
        "after=" + "9" * 40 + ".x",
        "after=1." + "x" * 300,
        "after=1.a%00b",
    ],
)
def test_it_refuses_a_bad_cursor_or_size_with_400(as_alice, path: str, query: str) -> None:
    assert as_alice.get(f"{path}?{query}").status_code == 400, query


def test_bad_filters_name_the_field(as_alice) -> None:
    assert b"page position" in as_alice.get("/waits?after=nope").content
    assert b"Page size is one of" in as_alice.get("/timers?size=1000").content
    assert b"older is an age" in as_alice.get("/waits?older=soon").content
    assert b"not both" in as_alice.get("/timers?after=1.a&before=1.b").content


def test_cursors_hold_any_id_the_storage_rules_accept(as_alice) -> None:
    odd = sorted(IDS.values())
    # One instant each: the ID alone orders them, and each is a cursor.
    parked_at_once(*odd, timeout=False)
    timers_at_once(*odd)
    created = f.transact(lambda tx: tx.wait(odd[0]).created_at)
    fires = f.transact(lambda tx: tx.timer(odd[0]).fire_at)
    for n, record_id in enumerate(odd[:-1]):
        for path, time in (("/waits", created), ("/timers", fires)):
            query = urlencode({"after": f"{time}.{record_id}", "size": 25})
            page = as_alice.get(f"{path}?{query}")
            assert page.status_code == 200, (path, record_id)
            got = [r for r in rows(page.content.decode()) if r in odd]
            assert got == odd[n + 1 : n + 26], (path, record_id)
            back = link(page.content.decode(), "prev")
            assert back == "?" + urlencode({"size": 25, "before": f"{time}.{odd[n + 1]}"})
    walked = walk(as_alice, "/waits", "?size=25", "next")
    assert [w for p in walked for w in p] == odd

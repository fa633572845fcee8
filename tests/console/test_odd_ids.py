"""Every URL that carries an ID, with the longest and oddest IDs the storage rule
allows (issue 20): 255 bytes of multibyte UTF-8, "/", "%", "?", "#", a space, "+",
"..", a dot-only ID, a bidi control, emoji, a leading "~". Each record's page answers
200, a missing one 404, never a 500; and every link the list pages render to them,
followed as a browser would (dot segments removed first), lands on that record."""

from __future__ import annotations

import html
from html.parser import HTMLParser
from urllib.parse import unquote, urlencode, urlsplit

import pytest
from django.urls import Resolver404, resolve, reverse

from storage import WorkState
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.odd_ids import IDS, seed

pytestmark = DB


assert all(len(i.encode()) <= 255 for i in IDS.values())
assert {len(IDS[k].encode()) for k in ("255-bytes", "255-bytes-slashes")} == {255}


@pytest.fixture
def seeded() -> dict[str, str]:
    return {record_id: seed(record_id, n) for n, record_id in enumerate(IDS.values())}


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "action") and value:
                self.hrefs.append(value)


def browser_path(href: str) -> str:
    """What a browser requests for ``href`` on this site: the path with its dot
    segments removed (the URL standard counts "%2e" as a dot), and the query."""
    parts = urlsplit(html.unescape(href))
    out: list[str] = []
    segments = parts.path.split("/")[1:]
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment.lower() in (".", "%2e"):
            if last:
                out.append("")
        elif segment.lower() in ("..", ".%2e", "%2e.", "%2e%2e"):
            if out:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(segment)
    path = "/" + "/".join(out)
    return f"{path}?{parts.query}" if parts.query else path


def links(page: bytes) -> list[str]:
    parser = Links()
    parser.feed(page.decode())
    return [browser_path(h) for h in parser.hrefs if h.startswith("/")]


def resolved(path: str) -> tuple[str, dict[str, str]] | None:
    try:
        match = resolve(unquote(urlsplit(path).path))
    except Resolver404:
        return None
    return match.url_name or "", match.kwargs


DETAIL = {
    "work_detail": "work_id",
    "cancel_work": "work_id",
    "retry_work": "work_id",
    "event_detail": "event_id",
    "run_record": "run_id",
    "dashboard_scope": "scope_id",
}


@pytest.mark.parametrize("name", IDS)
def test_every_page_of_an_odd_id_answers_200_and_a_missing_one_404(
    as_alice, seeded: dict[str, str], name: str
) -> None:
    record_id = IDS[name]
    artifact = seeded[record_id]
    pages = [
        reverse("work_detail", args=[record_id]),
        reverse("cancel_work", args=[record_id]),
        reverse("retry_work", args=[record_id]),
        reverse("event_detail", args=[record_id]),
        reverse("run_record", args=[record_id]),
        reverse("dashboard_scope", args=[record_id]),
        reverse("artifact", args=[record_id, artifact]),
        reverse("home") + "?" + urlencode({"scope": record_id}),
    ]
    for page in pages:
        # What the browser sends is what the link says: no dot segment to remove.
        assert browser_path(page) == page, page
        response = as_alice.get(page)
        assert response.status_code == 200, (page, response.status_code)
    for view in ("work_detail", "event_detail", "run_record", "dashboard_scope"):
        missing = reverse(view, args=[record_id[:-1] + "?" if record_id[-1] != "?" else "!"])
        assert as_alice.get(missing).status_code == 404, missing
    assert as_alice.get(reverse("artifact", args=[record_id, "0" * 64])).status_code == 404


def test_a_cancel_of_an_odd_id_goes_back_to_its_page(as_alice, seeded: dict[str, str]) -> None:
    for record_id in IDS.values():
        confirm = as_alice.get(reverse("cancel_work", args=[record_id]))
        token = confirm.context["form"]["token"].value()
        form = {"token": token, "reason": "odd ID"}
        done = as_alice.post(reverse("cancel_work", args=[record_id]), form, follow=True)
        assert done.status_code == 200
        assert done.redirect_chain[-1][0] == reverse("work_detail", args=[record_id])
        assert f.transact(lambda tx, i=record_id: tx.work(i).state) is WorkState.CANCELLED


LISTS = {
    "home": {"work_detail"},
    "events": {"event_detail"},
    "executions": {"work_detail"},
    "waits": {"work_detail"},
    "timers": {"work_detail"},
    "timers_ahead": {"work_detail"},
    "scopes": {"dashboard_scope"},
    "run_records": {"run_record"},
}


@pytest.mark.parametrize("page", LISTS)
def test_the_links_a_list_renders_to_odd_ids_land_on_them(
    as_alice, seeded: dict[str, str], page: str
) -> None:
    response = as_alice.get(reverse(page) + "?size=100")
    assert response.status_code == 200
    found: dict[str, set[str]] = {}
    for path in links(response.content):
        match = resolved(path)
        if match is None or match[0] not in DETAIL:
            continue
        view, kwargs = match
        found.setdefault(view, set()).add(kwargs[DETAIL[view]])
        assert as_alice.get(path).status_code == 200, path

    for view in LISTS[page]:
        assert set(IDS.values()) <= found.get(view, set()), view

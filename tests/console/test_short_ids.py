"""Readable IDs (console/templatetags/ids.py): every list and detail page that names a
record shows its ID shortened with the whole of it in a title and a copy button, and
an ID made of the characters HTML cares about arrives escaped, never as markup."""

from __future__ import annotations

import html
import re

from django.template import Context, Template
from django.urls import reverse

from tests.console.conftest import DB
from tests.console.support.odd_ids import seed

pytestmark = DB

# Quotes, angle brackets, an ampersand and a bidi override: each would break out of an
# attribute or reorder the text if it were not escaped and isolated.
HOSTILE = "q\"'<i>&amp;\u202ex"


def copies(page: str) -> set[str]:
    return {html.unescape(v) for v in re.findall(r'data-copy="([^"]*)"', page)}


def titled(page: str) -> set[str]:
    return {html.unescape(v) for v in re.findall(r'title="([^"]*)" data-sid', page)}


PAGES = ["home", "executions", "waits", "timers", "events", "run_records", "work", "event", "run"]


def test_each_page_shows_a_hostile_id_shortened_with_its_whole_copy_and_title(as_alice) -> None:
    seed(HOSTILE, 0)  # once for every page: a seed is a Scope, Work, attempt, Wait, run...
    for page in PAGES:
        url = {
            "work": reverse("work_detail", args=[HOSTILE]),
            "event": reverse("event_detail", args=[HOSTILE]),
            "run": reverse("run_record", args=[HOSTILE]),
        }.get(page) or reverse(page)
        response = as_alice.get(url)
        assert response.status_code == 200, page
        body = response.content.decode()
        assert HOSTILE in copies(body), f"no copy button on {page} carries the whole ID"
        assert "<i>" not in body, page
        if page not in ("event", "run"):  # these name the ID whole in their heading
            assert HOSTILE in titled(body), f"no shortened ID on {page} has its title"


def render(source: str, **context: object) -> str:
    return Template("{% load ids %}" + source).render(Context(context))


def test_a_linked_id_keeps_its_whole_text_for_selection_and_screen_readers() -> None:
    out = render('{% short_id v "/works/x" "Work ID" %}', v="0193a4f2-9c1e-7d3b-8f00-1234")
    assert out.startswith(
        '<a class="mono" href="/works/x"><span title="0193a4f2-9c1e-7d3b-8f00-1234" data-sid>'
        "0193a4f2-9c1e-7d3b-8f00-1234</span></a>"
    )
    assert 'aria-label="Copy Work ID 0193a4f2-9c1e-7d3b-8f00-1234"' in out
    assert 'type="button"' in out


def test_a_control_character_shows_as_its_code_point_but_copies_as_itself() -> None:
    out = render("{% short_id v %}", v="a\u202eb")
    assert 'data-copy="a\u202eb"' in out
    assert "U+202E" in out
    assert "<bdi>" in out


def test_an_empty_id_is_a_dash_without_a_button() -> None:
    assert render('{% short_id "" %}') == '<span class="muted">—</span>'
    assert render('{% copy_button "" %}') == ""

"""The Work list's rows come from one tag (console/templatetags/works.py), not a template
loop: each cell in its place, every value escaped in text and in attributes."""

from __future__ import annotations

import html
import re

import pytest

from . import factories as f

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

HOSTILE = "q\"<&>'x"
MESSAGE = '<b>boom</b> & "quoted"'


def test_a_row_escapes_a_hostile_id_and_message_in_every_cell(as_alice) -> None:
    f.exhausted(HOSTILE, message=MESSAGE)
    page = as_alice.get("/").content.decode()
    e = html.escape(HOSTILE)
    match = re.search(rf'<tr>\s*<td class="select">.*?value="{re.escape(e)}".*?</tr>', page, re.S)
    assert match, "no row for the hostile ID"
    row = match.group(0)
    assert HOSTILE not in row
    assert "<b>" not in row
    assert f'aria-label="Select {e}"' in row
    assert f'<span title="{e}" data-sid>{e}</span>' in row
    assert f'data-copy="{e}"' in row
    assert f'title="{html.escape(MESSAGE)}"' in row
    assert "badge-exhausted" in row
    assert "attempt 1" in row
    # Retry and Cancel keep the page to return to, each link once in href and hx-get.
    assert row.count("?next=/") == 4
    cells = re.findall(r'<td(?: class="([a-z-]+)")?>', row)
    assert cells == [
        "select",
        "id",
        "",
        "last",
        "mono",
        "mono",
        "mono",
        "mono",
        "time",
        "time",
        "row-actions",
    ]


def test_a_viewer_gets_the_rows_without_select_boxes_or_actions(as_bob) -> None:
    f.exhausted("w-viewer")
    page = as_bob.get("/").content.decode()
    assert 'value="w-viewer"' not in page  # no select box
    assert "row-actions" not in page
    assert '<span title="w-viewer" data-sid>w-viewer</span>' in page

"""The Work list's rows come from one tag (console/templatetags/works.py), not a template
loop: each cell in its place, every value escaped in text and in attributes."""

from __future__ import annotations

import html
import re

import pytest

from console.saved.columns import COLUMN_KEYS, choose_work_columns

from . import factories as f

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

HOSTILE = "q\"<&>'x"
MESSAGE = '<b>boom</b> & "quoted"'


def _hostile_row(client) -> str:
    page = client.get("/").content.decode()
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
    return row


def _cells(row: str) -> list[str]:
    return re.findall(r'<td(?: class="([a-z-]+)")?>', row)


def test_a_row_escapes_a_hostile_id_and_message_in_every_cell(as_alice, alice) -> None:
    f.exhausted(HOSTILE, message=MESSAGE, keys=[(HOSTILE, "ext-1")])
    # The default columns (Source, Executor and Created are left out: issue 34).
    assert _cells(_hostile_row(as_alice)) == [
        "select",
        "id",
        "",  # state
        "last",
        "mono",  # kind
        "mono",  # scope
        "time",  # updated
        "row-actions",
    ]
    # Every column chosen: the hidden ones escape their values too.
    choose_work_columns(alice, COLUMN_KEYS)
    row = _hostile_row(as_alice)
    assert _cells(row) == [
        "select",
        "id",
        "",
        "last",
        "mono",  # kind
        "mono",  # scope
        "mono",  # source
        "mono",  # executor
        "time",  # created
        "time",  # updated
        "row-actions",
    ]
    # The source cell (the correlation key's source) is the one more escaped value.
    source_cell = re.findall(r'<td class="mono">(.*?)</td>', row, re.S)[2]
    assert html.escape(HOSTILE) in source_cell


def test_a_viewer_gets_the_rows_without_select_boxes_or_actions(as_bob) -> None:
    f.exhausted("w-viewer")
    page = as_bob.get("/").content.decode()
    assert 'value="w-viewer"' not in page  # no select box
    assert "row-actions" not in page
    assert '<span title="w-viewer" data-sid>w-viewer</span>' in page

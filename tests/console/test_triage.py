"""Exhausted Work and error groups in the console: the Work list's ``is=exhausted`` and
``error=`` filters (and ``is:``/``error:`` qualifiers), their facets, the dashboard's
tile, the Errors page, and bulk retry that never sweeps in Work in backoff."""

from __future__ import annotations

import re

import pytest

import storage
from storage import ExecutionState, WorkState
from storage.default import default_store
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB


def read(fn):
    return storage.view(default_store(), None, fn)


def listed(html: str) -> list[str]:
    return re.findall(r'<td class="id"><a class="mono" href="/works/([^"]+)">', html)


def section(html: str, start: str, end: str) -> str:
    return html.split(start)[1].split(end)[0]


@pytest.fixture
def triage():
    """Two exhausted Work with one failure, one with another, one in backoff, one
    failed for good, one new and one running."""
    f.exhausted("ex-1", message="card 4242 declined")
    f.exhausted("ex-2", message="card 17 declined", kind="billing.refund")
    f.exhausted("ex-3", message="db down at 10.0.0.7")
    f.backoff("wait-1", message="card 99 declined")
    f.failed("dead-1", message="card 5 declined")
    f.work("new-1")
    f.running("busy-1")


def test_the_work_list_keeps_only_exhausted_work_under_is_exhausted(as_alice, triage):
    html = as_alice.get("/", {"is": "exhausted", "sort": "created"}).content.decode()
    assert listed(html) == ["ex-1", "ex-2", "ex-3"]
    assert '<span class="chip-name">is:</span> <span class="mono">exhausted</span>' in html
    assert "Retry all exhausted…" in html


def test_the_exhausted_filter_composes_with_the_others(as_alice, triage):
    html = as_alice.get("/", {"is": "exhausted", "kind": "billing.refund"}).content.decode()
    assert listed(html) == ["ex-2"]


def test_the_search_qualifiers_become_the_filters_url(as_alice, triage):
    response = as_alice.get("/", {"q": 'is:exhausted error:"card <n> declined"'})
    assert response.status_code == 302
    assert response["Location"] == "/?is=exhausted&error=card+%3Cn%3E+declined"
    html = as_alice.get(response["Location"]).content.decode()
    assert sorted(listed(html)) == ["ex-1", "ex-2"]


def test_it_refuses_an_unknown_is_value_with_a_400(as_alice, triage):
    for params in ({"q": "is:stuck"}, {"is": "stuck"}):
        response = as_alice.get("/", params)
        assert response.status_code == 400
        assert "Unknown is:stuck; use is:exhausted." in response.content.decode()


def test_the_facets_count_exhausted_work_and_error_groups(as_alice, triage):
    html = as_alice.get("/").content.decode()
    needs = section(html, 'id="facet-is"', "</section>")
    assert 'href="?is=exhausted"' in needs
    assert '<span class="n">3</span>' in needs
    groups = section(html, 'id="facet-error"', "</section>")
    # Four Work whose latest attempt failed with a card message: ex-1, ex-2, wait-1,
    # dead-1; the facet counts every Work of the filter, as the other facets do.
    assert re.search(r"card &lt;n&gt; declined</span></a><span class=\"n\">4</span>", groups)
    assert "db down at &lt;n&gt;" in groups


def test_the_dashboard_tile_opens_the_exhausted_list_stuck_longest_first(as_alice, triage):
    html = as_alice.get("/dashboard").content.decode()
    tile = re.search(r'<a class="tile alert" href="([^"]+)" data-figure="exhausted">', html)
    assert tile is not None
    assert tile.group(1).replace("&amp;", "&") == "/?is=exhausted&sort=updated"
    assert listed(as_alice.get(tile.group(1).replace("&amp;", "&")).content.decode()) == [
        "ex-1",
        "ex-2",
        "ex-3",
    ]


def test_the_errors_page_groups_failed_and_exhausted_work(as_alice, triage):
    html = as_alice.get("/errors").content.decode()
    rows = re.findall(r'<tr data-group="([^"]+)">(.*?)</tr>', html, re.S)
    assert [key for key, _ in rows] == ["card &lt;n&gt; declined", "db down at &lt;n&gt;"]
    card = rows[0][1]
    # ex-1, ex-2 exhausted and dead-1 failed; wait-1 is in backoff: in neither.
    assert re.findall(r'<td class="n">(?:<a href="[^"]*">)?(\d+)', card) == ["3", "1", "2"]
    assert "billing.refund 1" in card
    assert "/actions/bulk?is=exhausted&amp;error=card+%3Cn%3E+declined&amp;do=retry-all" in card


def test_the_errors_page_takes_the_work_lists_filters(as_alice, triage):
    html = as_alice.get("/errors", {"kind": "billing.refund"}).content.decode()
    assert re.findall(r'<tr data-group="([^"]+)">', html) == ["card &lt;n&gt; declined"]
    assert as_alice.get("/errors", {"since": "yesterday-ish"}).status_code == 400


def test_retrying_one_error_group_retries_its_exhausted_work_only(as_alice, triage):
    url = "/actions/bulk?is=exhausted&error=card+%3Cn%3E+declined&do=retry-all"
    html = as_alice.get(url).content.decode()
    assert "<h1>Retry 2 Work</h1>" in html
    assert "Every Work with retries exhausted, error group “card &lt;n&gt; declined”" in html
    assert "its Timer keeps running" in html
    token = re.search(r'name="token" value="([^"]+)"', html).group(1)
    through = re.search(r'name="through" value="([^"]+)"', html).group(1)
    form = {
        "do": "retry-all",
        "is": "exhausted",
        "error": "card <n> declined",
        "from": "",
        "through": through,
        "token": token,
        "reason": "card processor back",
    }
    done = as_alice.post("/actions/bulk", form).content.decode()
    assert "Retry: 2 done, 0 skipped, 0 left" in done
    attempts = read(lambda tx: {w.id: len(tx.executions(w.id)) for w in tx.works()})
    assert (attempts["ex-1"], attempts["ex-2"], attempts["ex-3"], attempts["wait-1"]) == (
        2,
        2,
        1,
        1,
    )
    assert listed(as_alice.get("/", {"is": "exhausted"}).content.decode()) == ["ex-3"]


def test_retry_all_on_ready_leaves_work_in_backoff_and_its_timer_alone(as_alice, triage):
    html = as_alice.get("/actions/bulk", {"do": "retry-all", "state": "ready"}).content.decode()
    excluded = section(html, 'id="excluded"', "</section>")
    assert "wait-1" in excluded
    assert re.search(r"in backoff: its retry Timer runs it at \d\d:\d\d:\d\d UTC", excluded)
    eligible = section(html, 'id="eligible"', 'id="excluded"')
    assert "wait-1" not in eligible
    assert "ex-1" in eligible
    assert "new-1" in eligible
    token = re.search(r'name="token" value="([^"]+)"', html).group(1)
    through = re.search(r'name="through" value="([^"]+)"', html).group(1)
    form = {"do": "retry-all", "state": "ready", "through": through, "token": token}
    done = as_alice.post("/actions/bulk", {**form, "reason": "sweep"}).content.decode()
    assert "wait-1" in done
    timers = read(lambda tx: [t.id for t in tx.timers("wait-1")])
    assert timers == ["wait-1-retry"]
    assert read(lambda tx: len(tx.executions("wait-1"))) == 1


def test_a_selected_work_in_backoff_is_excluded_with_the_reason(as_alice, triage):
    response = as_alice.post(
        "/actions/bulk/review", {"do": "retry-selected", "work": ["wait-1", "ex-1"]}
    )
    html = response.content.decode()
    assert "ex-1" in section(html, 'id="eligible"', 'id="excluded"')
    assert "wait-1" in section(html, 'id="excluded"', "</section>")


def test_the_errors_page_reads_in_one_view_with_a_pinned_query_count(
    as_alice, triage, django_assert_num_queries
):
    from django.db import connections

    # BEGIN, snapshot (with the store version and latest sequence), the groups (1: one
    # GROUP BY), the failed and exhausted totals (1: the filter's Work facets),
    # COMMIT; the same with twice the groups.
    with django_assert_num_queries(5, connection=connections["view"]):
        assert as_alice.get("/errors").status_code == 200
    for i in range(3):
        f.exhausted(f"more-{i}", message=f"quota {i} of kind {i} used up #{i}")
    with django_assert_num_queries(5, connection=connections["view"]):
        assert as_alice.get("/errors").status_code == 200


def _figures(html: str) -> dict[str, list[int]]:
    """Each row's Work, Failed and Exhausted figures, by its data-group."""
    rows = re.findall(r'<tr[^>]*data-group="([^"]+)">(.*?)</tr>', html, re.S)
    cell = r'<td class="n">(?:<a href="[^"]*">)?([\d,]+)'
    return {key: [int(n.replace(",", "")) for n in re.findall(cell, row)] for key, row in rows}


def _tile(html: str, figure: str) -> int:
    found = re.search(rf'data-figure="{figure}">.*?<span class="n">([\d,]+)</span>', html, re.S)
    assert found is not None, figure
    return int(found.group(1).replace(",", ""))


def test_the_errors_page_accounts_for_every_failed_and_exhausted_work(as_alice, triage):
    """Issue 34: Work whose Wait timed out is a group of its own, Work in no group is a
    row of its own, and the rows add up to the dashboard's exhausted tile."""
    for n in range(3):
        f.timed_out(f"ticket-{n}", kind="support.ticket")
    f.timed_out("order-1", types=("v2.order.paid", "v2.order.voided"))
    f.finish(
        f.start(f.work("handed-1").id).id, state=ExecutionState.HANDOFF, work_state=WorkState.READY
    )

    figures = _figures(as_alice.get("/errors").content.decode())
    exhausted_tile = _tile(as_alice.get("/dashboard").content.decode(), "exhausted")

    assert figures["timed out waiting for zendesk.ticket.replied"] == [3, 0, 3]
    assert figures["timed out waiting for v2.order.paid or v2.order.voided"] == [1, 0, 1]
    assert figures["(no group)"] == [1, 0, 1], "handed-1: its attempt handed off"
    grouped = {k: v for k, v in figures.items() if not k.startswith("(")}
    assert sum(v[2] for v in figures.values()) == exhausted_tile == 3 + 3 + 1 + 1
    assert sum(v[1] for v in grouped.values()) == 1, "dead-1, failed for good"
    assert sum(v[0] for v in figures.values()) == exhausted_tile + 1


def test_the_no_group_row_links_the_lists_it_counts(as_alice, triage):
    f.finish(
        f.start(f.work("handed-1").id).id, state=ExecutionState.HANDOFF, work_state=WorkState.READY
    )
    html = as_alice.get("/errors", {"kind": "billing.charge"}).content.decode()
    row = html.split('data-group="(no group)"')[1].split("</tr>")[0]
    assert 'href="/?is=exhausted&amp;kind=billing.charge"' in row
    assert "and 1 in none" in html

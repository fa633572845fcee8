"""The Run records section: the list (filters, keyset pages, owned, validator check, polling)
and the run page (the tree, digests, Retry groups, stream frontiers, messages, findings,
format 1, unreadable and unknown records). Records are saved through the run store's
Sessions; the few a Session cannot write (format 1, corrupt bytes, a newer format) are
planted as stored rows, as another implementation or a damaged disk would leave them."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from django.db import connections

from storage.default import default_run_store, default_store
from storage.run_records import AttemptState, DurableRunRecord, NodeAttemptRecord, ScopeRecord
from tests.console import run_record_factories as rf
from tests.console.conftest import DB
from tests.console.support.polling import poll_url_of
from tests.storage.support.run_records import format1_json, plant, row

pytestmark = DB

SECOND = 1_000_000_000
T0 = 1_780_000_000 * SECOND  # 2026-05-28 20:26:40Z, the "updated" time of planted rows


def owned_queries() -> int:
    """The query ``owned`` costs on the view connection: pg_locks on PostgreSQL; on
    SQLite it tests lock files and asks the database nothing."""
    return 1 if connections["view"].vendor == "postgresql" else 0


def rows_of(html: str) -> list[str]:
    return re.findall(r'<td class="id"><a class="mono" href="/run-records/([^"]+)">', html)


def planted(run_id: str, at: int, *, data: bytes | None = None, fmt: int = 1) -> None:
    plant(default_store(), row(run_id, data or format1_json(run_id, 1), fmt=fmt, at=at))


# ---------------------------------------------------------------- the list


def test_the_list_shows_format_revision_update_owned_and_check(as_alice):
    rf.checkout("checkout/1")
    rf.save(rf.until("checkout/1", rf.Plan("checkout")))  # revision 2
    rf.payment("payment/1")

    with default_run_store().acquire("payment/1"):
        html = as_alice.get("/run-records").content.decode()

    assert rows_of(html) == ["payment/1", "checkout/1"]  # most recently saved first
    checkout = html[html.index("/run-records/checkout/1") :]
    assert re.search(r'<td class="num mono">2</td>', checkout[:2000])
    payment = html[html.index("/run-records/payment/1") : html.index("/run-records/checkout/1")]
    assert "A Session holds this run now" in payment
    assert "A Session holds this run now" not in checkout
    assert html.count("✓ valid") == 2
    assert '<a href="/run-records" aria-current="page">Run records</a>' in html


def test_a_format_1_record_is_listed_as_upgrading_on_its_next_save(as_alice):
    planted("legacy/1", T0)

    html = as_alice.get("/run-records").content.decode()

    assert rows_of(html) == ["legacy/1"]
    assert "→ 2 on save" in html


def test_an_unreadable_record_is_listed_with_its_error_not_a_500(as_alice):
    planted("broken/1", T0, data=b"{not json", fmt=2)
    rf.checkout("checkout/1")

    response = as_alice.get("/run-records")

    html = response.content.decode()
    assert response.status_code == 200
    assert rows_of(html) == ["checkout/1", "broken/1"]
    assert "unreadable" in html
    assert "not JSON" in html  # the decoder's message, in the badge's title


def test_filters_select_by_run_id_format_and_updated_window(as_alice):
    planted("alpha/1", T0)
    planted("alpha/2", T0 + 60 * SECOND)
    planted("beta/1", T0 + 120 * SECOND)
    rf.checkout("checkout/alpha")  # format 2, updated now

    def ids(query: str) -> list[str]:
        response = as_alice.get("/run-records" + query)
        assert response.status_code == 200
        return rows_of(response.content.decode())

    assert ids("?q=alpha") == ["checkout/alpha", "alpha/2", "alpha/1"]
    assert ids("?q=alpha&format=1") == ["alpha/2", "alpha/1"]
    assert ids("?format=2") == ["checkout/alpha"]
    # since is inclusive, until exclusive (alpha/2 was updated at 20:27:40); UTC.
    assert ids("?since=2026-05-28T20:26:40Z&until=2026-05-28T20:27:40Z") == ["alpha/1"]
    assert ids("?since=2026-05-28 20:27:40&until=1h") == ["beta/1", "alpha/2"]
    assert ids("?since=1h") == ["checkout/alpha"]
    html = as_alice.get("/run-records?q=alpha&format=1").content.decode()
    assert "<strong>2</strong> run records match the filter" in html
    assert 'href="?format=1" title="Remove"' in html  # the q chip drops only q


def test_an_old_bookmark_with_before_still_bounds_the_list_and_links_use_until(as_alice):
    planted("alpha/1", T0)
    planted("alpha/2", T0 + 60 * SECOND)

    old = as_alice.get("/run-records?before=2026-05-28T20:27:40Z")
    new = as_alice.get("/run-records?until=2026-05-28T20:27:40Z")

    assert old.status_code == new.status_code == 200
    assert rows_of(old.content.decode()) == rows_of(new.content.decode()) == ["alpha/1"]
    html = old.content.decode()
    # The form and the chip carry the bound under its one name from now on.
    assert 'name="until" value="2026-05-28T20:27:40Z"' in html
    assert '<span class="chip-name">until:</span>' in html
    assert 'chip-name">before' not in html


def test_until_wins_over_an_old_before_when_a_url_has_both(as_alice):
    planted("alpha/1", T0)
    planted("alpha/2", T0 + 60 * SECOND)

    html = as_alice.get("/run-records?until=2026-05-28T20:28:40Z&before=2026-05-28T20:27:40Z")

    assert rows_of(html.content.decode()) == ["alpha/2", "alpha/1"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?format=3", "Format is one of 1, 2."),
        ("?since=yesterday", "Enter a UTC time"),
        ("?until=soon", "Enter a UTC time"),
        ("?before=soon", "Enter a UTC time"),
        ("?size=7", "Page size is one of"),
        ("?after=nonsense", "is not a page position"),
        ("?q=" + "x" * 300, "At most 255 characters."),
    ],
)
def test_a_bad_filter_is_a_400_naming_the_field(as_alice, query, message):
    response = as_alice.get("/run-records" + query)

    assert response.status_code == 400
    assert message in response.content.decode()


def test_keyset_pages_cover_every_run_once_including_ties(as_alice):
    for i in range(15):
        planted(f"run/{i:02d}", T0 + i * SECOND)
    for i in range(15, 30):
        planted(f"run/{i:02d}", T0 + 100 * SECOND)  # one update time: ties by run ID

    first = as_alice.get("/run-records?size=25").content.decode()
    older = re.search(r'<a rel="next" href="([^"]+)">', first).group(1).replace("&amp;", "&")
    second = as_alice.get("/run-records" + older).content.decode()

    page1, page2 = rows_of(first), rows_of(second)
    assert len(page1) == 25
    assert page1[:15] == [f"run/{i:02d}" for i in range(29, 14, -1)]
    assert sorted(page1 + page2) == [f"run/{i:02d}" for i in range(30)]
    assert '<span class="disabled">Older →</span>' in second
    assert '<a href="?size=25">⇤ Newest</a>' in second
    assert "data-poll" not in second  # a later page does not poll: its rows shift


def test_the_list_is_one_view_and_asks_owned_once(
    as_alice, django_assert_num_queries, django_assert_max_num_queries
):
    for i in range(3):
        rf.payment(f"payment/{i}")

    # BEGIN, snapshot (with the store version and latest sequence), page (1), count
    # (1), COMMIT; owned: see owned_queries.
    with (
        django_assert_num_queries(5 + owned_queries(), connection=connections["view"]),
        django_assert_max_num_queries(3, connection=connections["default"]),
    ):
        response = as_alice.get("/run-records")

    assert response.status_code == 200


def test_a_poll_is_204_until_a_session_saves(as_alice, django_assert_num_queries):
    rf.checkout("checkout/1")
    url = poll_url_of(as_alice.get("/run-records").content.decode())

    with django_assert_num_queries(3, connection=connections["view"]):
        unchanged = as_alice.get(url, HTTP_HX_REQUEST="true")
    rf.payment("payment/1")
    changed = as_alice.get(url, HTTP_HX_REQUEST="true")

    assert unchanged.status_code == 204
    assert changed.status_code == 200
    html = changed.content.decode()
    assert "<html" not in html
    assert rows_of(html) == ["payment/1", "checkout/1"]


# ---------------------------------------------------------------- the run page


def test_an_unknown_run_is_a_404(as_alice):
    response = as_alice.get("/run-records/nobody/here")

    assert response.status_code == 404
    assert "nobody/here" in response.content.decode()


def test_a_run_id_longer_than_the_store_allows_is_a_400(as_alice):
    assert as_alice.get("/run-records/" + "x" * 300).status_code == 400


def test_a_corrupt_record_is_a_409_page_with_what_is_stored(as_alice):
    planted("broken/1", T0, data=b'{"Format": 2, "RunID": "broken/1", "Bogus": 1}', fmt=2)

    response = as_alice.get("/run-records/broken/1")

    html = response.content.decode()
    assert response.status_code == 409
    assert "Corrupt run record" in html
    assert "unknown fields" in html
    assert "Nothing is repaired or guessed" in html
    assert "2026-05-28" in html  # the stored update time


def test_a_record_of_a_newer_format_is_a_409_page_saying_so(as_alice):
    newer = format1_json("future/1", 1).replace(b'"Format": 1', b'"Format": 3')
    planted("future/1", T0, data=newer, fmt=3)

    response = as_alice.get("/run-records/future/1")

    assert response.status_code == 409
    assert "Run record newer than this console" in response.content.decode()


def test_a_format_1_record_says_it_upgrades_on_its_next_save(as_alice):
    planted("legacy/1", T0)

    html = as_alice.get("/run-records/legacy/1").content.decode()

    assert "format 1 — upgrades to 2 on next save" in html
    assert "No findings" in html


def test_the_tree_nests_a_child_scope_under_the_attempt_that_mounts_it(as_alice):
    record = rf.checkout("checkout/1")
    ship = next(i for i, a in record.attempts.items() if a.node_id == "ship")

    response = as_alice.get("/run-records/checkout/1")

    html = response.content.decode()
    assert response.status_code == 200
    # The scope's summary comes inside the attempt's item, before any item closes.
    inside = html[html.index(f'<li id="attempt-{ship}"') : html.index(f'id="scope-{ship}"')]
    assert "</li>" not in inside
    assert 'graph <span class="mono">demo.shipping</span> at <span class="mono">ship</span>' in html
    assert html.count('class="check-ok" title="SHA-256 of the Data matches"') == 6
    assert '<span class="badge badge-skipped">skipped</span>' in html
    assert "0 B" in html  # a ready value of zero bytes, its digest checked like any other
    assert "No findings" in html


def test_a_retry_group_shows_failed_attempts_then_the_confirmed_root(as_alice):
    record = rf.payment("payment/1", failures=2)
    root = next(i for i, a in record.attempts.items() if a.node_id == "charge" and not a.boundary)

    html = as_alice.get("/run-records/payment/1").content.decode()

    group = html[html.index('<div class="attempt-group retry-group">') :]
    group = group[: group.index("</ol>")]
    assert re.findall(r"#(\d)/3</span> <span class=\"badge badge-(\w+)\">", group) == [
        ("1", "failed"),
        ("2", "failed"),
        ("3", "active"),
    ]
    assert "used 3/3" in group
    assert f'· parent <span class="mono" title="{root}">' in group
    assert re.search(
        rf'id="attempt-{root}" class="attempt">\s*<span class="mono">#1/1</span> '
        r'<span class="badge badge-confirmed">',
        html,
    )


def test_an_exhausted_retry_says_its_budget_is_spent(as_alice):
    rf.payment("payment/2", failures=3)

    html = as_alice.get("/run-records/payment/2").content.decode()

    assert "budget spent" in html


def test_a_stream_shows_its_frontier_sparse_acks_messages_and_managed_state(as_alice):
    record = rf.sparse_feed("feed/1")
    (stream,) = record.streams.values()

    html = as_alice.get("/run-records/feed/1").content.decode()

    streams = html[html.index('id="run-streams"') : html.index('id="run-messages"')]
    assert f'<td class="num mono frontier">{stream.acked_through}</td>' in streams
    for p in stream.pending:
        cell = f"{p.sequence}✓" if p.acked else f"{p.sequence}<"
        assert f'title="{p.sequence}: {"acked" if p.acked else "pending"}">{cell}' in streams
    assert "acked above the frontier" in streams
    messages = html[html.index('id="run-messages"') : html.index('id="run-managed"')]
    # The poisoned message: a failed first attempt, confirmed on its second, budget 0.
    assert re.search(
        r"· 2</td>.*?1/2</span> <span class=\"badge badge-failed\">.*?2/2</span> "
        r"<span class=\"badge badge-confirmed\">.*?<td class=\"mono\">0</td>",
        messages,
        re.S,
    )
    managed = html[html.index('id="run-managed"') :]
    assert "snapshot" in managed
    assert "total" in managed


def test_a_wrong_digest_is_a_finding_linked_to_its_node(as_alice):
    record = rf.until("checkout/9", rf.Plan("checkout"))
    root = record.scopes[record.root_scope]
    node = root.nodes["validate"]
    bad = replace(node.outputs[0], data=b"tampered")
    nodes = {**root.nodes, "validate": replace(node, outputs=(bad, *node.outputs[1:]))}
    scopes = {**record.scopes, record.root_scope: replace(root, nodes=nodes)}
    rf.save(replace(record, scopes=scopes))

    html = as_alice.get("/run-records/checkout/9").content.decode()

    anchor = f"node-{record.root_scope}~validate"
    findings = html[html.index('id="findings"') : html.index('id="run-meta"')]
    assert "value-digest" in findings
    assert f'<a href="#{anchor}">$.Scopes[&quot;{record.root_scope}&quot;].Nodes' in findings
    assert f'id="{anchor}"' in html
    assert "✗ 1 finding" in html
    assert "the Digest is not the SHA-256 of the Data" in html
    # The list says so too, from the same validator.
    assert "✗ 1 finding" in as_alice.get("/run-records").content.decode()


def test_the_page_says_whether_a_session_owns_the_run_and_never_takes_it(as_alice):
    record = rf.checkout("checkout/1")

    with default_run_store().acquire("checkout/1") as session:
        held = as_alice.get("/run-records/checkout/1").content.decode()
        # Asking did not disturb the owner: its save still goes through.
        assert session.save(record, record.revision) == record.revision + 1
    free = as_alice.get("/run-records/checkout/1").content.decode()

    assert "yes, by a Session now" in held
    assert "<dt>Owned</dt><dd>no</dd>" in free


def test_a_chain_nested_too_deep_is_listed_flat_not_a_500(as_alice):
    root = "f" * 32
    ids = [f"{i:032x}" for i in range(1, 41)]
    scopes = {root: ScopeRecord("g", "", "in")}
    attempts = {}
    parent = root
    for depth, attempt_id in enumerate(ids):
        attempts[attempt_id] = NodeAttemptRecord(parent, f"n{depth}", "", 1, 1, AttemptState.ACTIVE)
        scopes[attempt_id] = ScopeRecord("g", f"n{depth}", "in")
        parent = attempt_id
    record = DurableRunRecord(
        run_id="deep/1",
        definition="d",
        inputs="in",
        root_scope=root,
        scopes=scopes,
        attempts=attempts,
    )
    rf.save(record)

    response = as_alice.get("/run-records/deep/1")

    html = response.content.decode()
    assert response.status_code == 200
    assert "nested too deep to draw" in html
    assert 'id="unattached"' in html
    for attempt_id in ids:  # every attempt is on the page once
        assert html.count(f'id="attempt-{attempt_id}"') == 1


def test_an_attempt_outside_every_parent_chain_is_shown_as_unattached(as_alice):
    record = rf.until("checkout/5", rf.Plan("checkout"))
    stray = NodeAttemptRecord("0" * 32, "ghost", "", 1, 1, AttemptState.FAILED)
    rf.save(replace(record, attempts={**record.attempts, "e" * 32: stray}))

    html = as_alice.get("/run-records/checkout/5").content.decode()

    unattached = html[html.index('id="unattached"') : html.index('id="run-streams"')]
    assert f'id="attempt-{"e" * 32}"' in unattached
    assert "parent-chain" in html


def test_the_run_page_is_one_view(
    as_alice, django_assert_num_queries, django_assert_max_num_queries
):
    rf.sparse_feed("feed/1")

    # BEGIN, snapshot (with the store version and latest sequence), record (1),
    # COMMIT; owned: see owned_queries.
    with (
        django_assert_num_queries(4 + owned_queries(), connection=connections["view"]),
        django_assert_max_num_queries(3, connection=connections["default"]),
    ):
        response = as_alice.get("/run-records/feed/1")

    assert response.status_code == 200


def test_a_run_page_poll_is_204_until_its_run_is_saved(as_alice):
    record = rf.checkout("checkout/1")
    url = poll_url_of(as_alice.get("/run-records/checkout/1").content.decode())

    unchanged = as_alice.get(url, HTTP_HX_REQUEST="true")
    rf.save(record)
    changed = as_alice.get(url, HTTP_HX_REQUEST="true")

    assert unchanged.status_code == 204
    assert changed.status_code == 200
    assert '<div id="run"' in changed.content.decode()
    assert "<html" not in changed.content.decode()


def test_a_node_without_its_record_yet_shows_its_running_attempt(as_alice):
    record = rf.save(
        rf.until(
            "payment/3",
            rf.Plan("payment", failures=1),
            lambda r: any(a.boundary for a in r.attempts.values()),
        )
    )
    assert "charge" not in record.scopes[record.root_scope].nodes

    html = as_alice.get("/run-records/payment/3").content.decode()

    charge = html[html.index("~charge") :]
    assert "no NodeRecord yet" in charge[:1500]
    assert '<span class="badge badge-active">active</span>' in charge[:1500]


# ---------------------------------------------------------------- the old /runs URLs


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/runs", "/run-records"),
        ("/runs?q=alpha&format=1", "/run-records?q=alpha&format=1"),
        ("/runs/checkout/1", "/run-records/checkout/1"),
        ("/runs/checkout/1?since=1h", "/run-records/checkout/1?since=1h"),
        ("/runs/a%25b/~../%C3%A9", "/run-records/a%25b/~../%C3%A9"),
    ],
)
def test_an_old_runs_url_moves_permanently_to_the_same_path_and_query(client, old, new):
    response = client.get(old)

    assert response.status_code == 301
    assert response["Location"] == new


def test_an_old_run_link_lands_on_the_record(as_alice):
    rf.checkout("checkout/1")

    response = as_alice.get("/runs/checkout/1", follow=True)

    assert response.redirect_chain == [("/run-records/checkout/1", 301)]
    assert response.status_code == 200
    assert "checkout/1" in response.content.decode()


def test_a_post_to_an_old_runs_url_keeps_its_method(client):
    response = client.post("/runs/checkout/1?x=1")

    assert response.status_code == 308
    assert response["Location"] == "/run-records/checkout/1?x=1"

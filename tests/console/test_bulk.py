"""Bulk cancel and retry: confirmation of what is eligible and why not, batches,
a summary, one Event per Work."""

import re
from html import unescape as html_unescape

import pytest
from django.db import connections

import storage
from console.actions import work as actions
from console.actions.common import new_token
from console.actions.work import do_bulk
from storage import WorkState, from_ns
from storage.default import default_store
from storage.ops.manual import MANUAL_SOURCE, Action
from storage.tx.fields import ID_MAX_BYTES
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.bulk import confirmed, eligible_rows, hidden

pytestmark = DB


def read(fn):
    return storage.view(default_store(), None, fn)


def manual_events():
    return [e for e in read(lambda tx: tx.events()) if e.event.source == MANUAL_SOURCE]


@pytest.fixture
def mixed():
    f.exhausted("r1")
    f.exhausted("r2")
    f.running("busy")
    f.completed("done")


def test_the_confirmation_of_selected_rows_carries_them_in_one_field(as_alice, mixed):
    response = as_alice.post(
        "/actions/bulk/review", {"do": "retry-selected", "work": ["r1", "busy", "done", "ghost"]}
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert "<strong>1</strong> eligible" in html
    assert "<strong>3</strong> excluded" in html
    assert "Work has a live attempt" in html
    assert "a terminal Work needs a successor" in html
    assert "no such Work" in html
    assert hidden(html, "works") == ["[&quot;r1&quot;]"]
    assert 'name="work"' not in html
    assert 'name="reason"' in html
    assert 'name="token"' in html


def test_review_of_everything_matching_goes_on_as_the_filters_own_url(as_alice, mixed):
    response = as_alice.post("/actions/bulk/review", {"do": "cancel-all", "state": "ready"})

    assert response.status_code == 302
    assert response["Location"] == "/actions/bulk?state=ready&do=cancel-all"


def test_the_confirmation_of_everything_matching_restates_the_filter(as_alice, mixed):
    html = as_alice.get("/actions/bulk", {"do": "cancel-all", "state": "ready"}).content.decode()

    assert "Every Work with state ready" in html
    assert '<span class="chip-name">state:</span> <span class="mono">ready</span>' in html
    assert "The filter matches <strong>2</strong> Work" in html
    assert f'By kind: <span class="mono">{f.KIND}</span> 2.' in html
    assert eligible_rows(html) == ["r1", "r2"]  # oldest first
    assert html.index('id="eligible"') < html.index('id="excluded"')
    assert 'name="work"' not in html
    assert 'name="works"' not in html
    assert hidden(html, "state") == ["ready"]
    assert hidden(html, "from") == [""]
    assert re.fullmatch(r"\d+\.r2", hidden(html, "through")[0])
    assert 'href="/?state=ready"' in html  # back to the same filtered list


def test_the_action_on_everything_matching_re_reads_the_confirmed_range(
    as_alice, mixed, monkeypatch
):
    monkeypatch.setattr(actions, "BULK_BATCH", 1)  # several batches
    f.exhausted("r3")
    html = as_alice.get("/actions/bulk", {"do": "retry-all"}).content.decode()
    assert eligible_rows(html) == ["r1", "r2", "r3"]
    f.start("r3")  # a live attempt since the confirmation
    f.exhausted("late")  # created after the confirmed range

    response = as_alice.post("/actions/bulk", {**confirmed(html), "reason": "outage over"})

    html = response.content.decode()
    assert response.status_code == 200
    assert "Retry: 2 done, 2 skipped, 1 left" in html  # "busy" and r3 have live attempts
    assert "Work has a live attempt" in html
    assert "1 finished Work left alone" in html  # "done" is completed
    rest = re.search(r'href="(/actions/bulk\?[^"]+)">Run again for the rest', html).group(1)
    attempts = read(lambda tx: {w: len(tx.executions(w)) for w in ("r1", "r2", "r3", "late")})
    assert attempts == {"r1": 2, "r2": 2, "r3": 2, "late": 1}
    events = manual_events()
    assert len(events) == 2  # one per Work, each with its own delivery ID
    assert all(e.event.actor == "operator:alice" for e in events)
    assert len({e.event.delivery_id for e in events}) == 2
    assert eligible_rows(as_alice.get(rest.replace("&amp;", "&")).content.decode()) == ["late"]


def test_the_confirmation_without_a_reason_is_shown_again_as_a_400(as_alice, mixed):
    html = as_alice.get("/actions/bulk", {"do": "cancel-all"}).content.decode()

    response = as_alice.post("/actions/bulk", confirmed(html))

    assert response.status_code == 400
    assert b"Give a reason" in response.content
    assert manual_events() == []


def test_a_double_submitted_bulk_form_has_one_effect(as_alice, mixed):
    works = '["r1", "r2"]'
    form = {"do": "cancel-selected", "works": works, "reason": "x", "token": new_token()}

    as_alice.post("/actions/bulk", form)
    second = as_alice.post("/actions/bulk", form)

    assert len(manual_events()) == 2
    assert b"already done by this form" in second.content
    assert read(lambda tx: tx.work("r1")).state is WorkState.CANCELLED


def test_a_bulk_post_without_a_reason_is_a_400(as_alice, mixed):
    response = as_alice.post(
        "/actions/bulk", {"do": "cancel-selected", "work": ["r1"], "token": new_token()}
    )

    assert response.status_code == 400
    assert b"Give a reason" in response.content
    assert manual_events() == []


@pytest.mark.parametrize(
    "params",
    [
        {"do": "retry-selected"},
        {"do": "explode-all"},
        {"do": ""},
        {"do": "retry-all", "since": "x"},
        {"do": "retry-all", "from": "nonsense"},
    ],
)
def test_bad_bulk_requests_are_400s(as_alice, params):
    assert as_alice.get("/actions/bulk", params).status_code == 400


@pytest.mark.parametrize(
    "data",
    [
        {"do": "retry-selected", "works": "not json"},
        {"do": "retry-selected", "works": '{"a": 1}'},
        {"do": "retry-selected", "works": "[1, 2]"},
        {"do": "retry-all", "reason": "x", "token": "a" * 20},  # no confirmed range
        {"do": "retry-all", "reason": "x", "token": "a" * 20, "through": "x"},
        {"do": "cancel-all", "state": "nope", "reason": "x", "token": "a" * 20},
    ],
)
def test_bad_bulk_posts_are_400s(as_alice, data):
    assert as_alice.post("/actions/bulk", data).status_code == 400
    assert manual_events() == []


def test_do_bulk_refuses_more_than_the_cap(alice):
    with pytest.raises(storage.Invalid, match="at most"):
        do_bulk(
            default_store(),
            username="alice",
            action=Action.CANCEL,
            work_ids=[f"w{i}" for i in range(actions.BULK_CAP + 1)],
            reason="x",
            token=new_token(),
        )


def test_do_bulk_skips_missing_works_with_the_reason(alice):
    f.work("w1")

    summary = do_bulk(
        default_store(),
        username="alice",
        action="cancel",
        work_ids=["w1", "ghost"],
        reason="x",
        token=new_token(),
    )

    assert [r.work_id for r in summary.done] == ["w1"]
    assert [(s.work_id, s.reason) for s in summary.skipped] == [("ghost", "no such Work")]


def test_do_bulk_reads_a_batchs_work_once_not_once_per_work(alice):
    """Each batch reads its Work (and, to apply, their attempts and Timers) in one
    statement each, so a batch costs no round trip per Work for them (on PostgreSQL
    each is one); an ID no Work can have is still reported, not an error."""
    ids = [f"r{i:02d}" for i in range(actions.BULK_BATCH)]
    f.exhausted_many(ids)
    too_long = "x" * (ID_MAX_BYTES + 1)
    sent: list[str] = []

    def watch(execute, sql, params, many, context):
        sent.append(" ".join(sql.split()))
        return execute(sql, params, many, context)

    with connections["default"].execute_wrapper(watch):
        summary = do_bulk(
            default_store(),
            username="alice",
            action="retry",
            work_ids=[*ids, too_long],
            reason="x",
            token=new_token(),
        )

    assert [r.work_id for r in summary.done] == ids
    assert [(s.work_id, s.reason) for s in summary.skipped] == [(too_long, "no such Work")]
    # Two batches (the 25 and the bad ID), each two transactions (the bad ID's second
    # has nothing to apply). Per batch one read of the Work, by the set; the bad ID's
    # batch cannot be read as a set and falls back to the per-Work read.
    work_reads = [sql for sql in sent if sql.startswith("SELECT id, data FROM conduit_work ")]
    assert len(work_reads) == 2, work_reads
    one_work = [sql for sql in sent if sql.startswith("SELECT data FROM conduit_work WHERE id")]
    assert len(one_work) == 1, one_work
    # Attempts and Timers: one read for the batch, none per Work.
    by_work = re.compile(r"SELECT .* FROM conduit_(execution|timer) WHERE work_id (IN|=)")
    assert [m.groups() for sql in sent if (m := by_work.match(sql))] == [
        ("execution", "IN"),
        ("timer", "IN"),
    ]


def test_it_answers_405_to_a_bulk_request_that_is_neither_get_nor_post(as_alice):
    response = as_alice.put("/actions/bulk?do=cancel-all")

    assert response.status_code == 405
    assert response["Allow"] == "GET, POST"


def test_retry_all_matching_over_a_thousand_takes_one_run(as_alice):
    """1,100 ready Work with running and completed Work interleaved in creation order:
    one run under the 10,000 cap retries them all, listing the first 500 (each with
    its last attempt) and counting the rest; nothing is retried twice. The cap itself
    is exercised at its real size in test_bulk_at_scale.py."""
    ready = [f"w{i:04d}" for i in range(1100)]
    for start in range(0, len(ready), 275):  # a few transactions, not one per Work
        f.works_at_once(*ready[start : start + 275])
        f.running(f"busy-{start}")  # refused: a live attempt
        f.completed(f"done-{start}")  # not in a state a retry applies to
    assert actions.BULK_CAP == 10_000

    first = as_alice.get("/actions/bulk", {"do": "retry-all"}).content.decode()
    assert "<h1>Retry 1,100 Work</h1>" in first
    assert "The filter matches <strong>1,108</strong> Work" in first
    assert eligible_rows(first) == ready[:500]
    assert "The first 500 (oldest first) of the 1,100 this run acts on" in first
    assert "more to look at after it" not in first
    form = {**confirmed(first), "reason": "provider back"}
    assert len(form) <= 6  # the filter and the range, not one field per Work
    done = as_alice.post("/actions/bulk", form).content.decode()
    assert "Retry: 1,100 done, 4 skipped, 0 left" in done  # the 4 busy ones
    assert "<strong>4</strong> Work has a live attempt" in done
    assert "Run again for the rest" not in done

    attempts = read(lambda tx: {w: len(tx.executions(w)) for w in ready})
    assert set(attempts.values()) == {1}  # each retried exactly once
    assert len(manual_events()) == 1100


def test_every_work_the_confirmation_promised_is_in_the_result(as_alice):
    """Issue 34: "Cancel 32 Work" ended "27 done · 0 skipped · 0 left" when 5 had been
    cancelled by someone else meanwhile. Here another operator cancels two, the runtime
    picks one up again, and one more becomes exhausted inside the range: the result
    accounts for the promised six and says what it left alone."""
    for n in range(6):
        f.exhausted(f"ex-{n}")
    busy = f.running("busy")  # in the range, not exhausted when confirmed
    f.exhausted("ex-6")
    html = as_alice.get("/actions/bulk", {"do": "cancel-all", "is": "exhausted"}).content.decode()
    assert eligible_rows(html) == [f"ex-{n}" for n in range(7)]
    assert "Cancel 7 Work" in html
    fields = {**confirmed(html), "is": "exhausted", "reason": "bad deploy"}
    fields["promised"] = html_unescape(hidden(html, "promised")[0])
    fields["seen"] = hidden(html, "seen")[0]

    for work_id in ("ex-1", "ex-4"):  # another operator, between confirm and apply
        actions.do_cancel_work(
            default_store(), username="bob", work_id=work_id, reason="mine", token=new_token()
        )
    f.pending("ex-5")  # the runtime retries it: no longer exhausted
    # Now exhausted, inside the range, but not confirmed.
    f.finish(busy.id, state=storage.ExecutionState.FAILED, work_state=WorkState.READY)

    response = as_alice.post("/actions/bulk", fields)

    result = response.content.decode()
    assert response.status_code == 200
    assert "Cancel: 4 done, 1 skipped, 3 no longer matching, 0 left" in result
    assert "The confirmation promised <strong>7</strong> Work" in result
    gone = result.split('id="gone"')[1].split("</section>")[0]
    rows = re.findall(r"<tr><td>.*?</tr>", gone, re.S)
    assert [re.search(r'href="/works/([^"]+)"', r).group(1) for r in rows] == [
        "ex-1",
        "ex-4",
        "ex-5",
    ]
    assert all("cancelled" in r and "operator:bob" in r for r in rows[:2])
    assert "ready" in rows[2]
    assert ">—<" in rows[2]  # no Event names who: the runtime
    assert "not in the confirmation" in result  # busy: left alone, said so
    states = read(lambda tx: {w.id: w.state for w in tx.works()})
    assert states["busy"] is WorkState.READY
    assert [w for w, s in states.items() if s is WorkState.CANCELLED] == [
        "ex-0",
        "ex-1",
        "ex-2",
        "ex-3",
        "ex-4",
        "ex-6",
    ]


@pytest.mark.parametrize(
    ("promised", "seen"),
    [("[1]", "1"), ("nope", "1"), ('["a"]', "x"), ('["a"]', str(2**64)), ('{"a": 1}', "1")],
)
def test_a_malformed_promise_is_a_400(as_alice, mixed, promised, seen):
    html = as_alice.get("/actions/bulk", {"do": "retry-all"}).content.decode()
    fields = {**confirmed(html), "reason": "r", "promised": promised, "seen": seen}
    assert as_alice.post("/actions/bulk", fields).status_code == 400


def test_bulk_text_says_cancelled_and_retried(as_alice, mixed):
    """Issue 34: the texts read "canceled" and "retryed"."""
    retry = as_alice.get("/actions/bulk", {"do": "retry-all"}).content.decode()
    assert "retried in batches" in retry
    cancel = as_alice.get("/actions/bulk", {"do": "cancel-all"}).content.decode()
    assert "cancelled in batches" in cancel
    fields = {**confirmed(retry), "reason": "outage over"}
    result = as_alice.post("/actions/bulk", fields).content.decode()
    assert "<td>retried</td>" in result or "attempt 2 pending" in result
    nothing = as_alice.get("/actions/bulk", {"do": "retry-all", "state": "completed"})
    text = nothing.content.decode()
    assert "Nothing here can be retried." in text
    assert "retryed" not in text + retry + result
    assert "canceled" not in cancel


def test_a_selection_accounts_for_work_changed_after_the_confirmation(as_alice):
    """Issue 34: a selection's Work that another operator cancelled between confirm and
    apply was only skipped with a reason; like "all matching", the result says it no
    longer qualifies, its state now, when it changed and who changed it."""
    for n in range(3):
        f.exhausted(f"sel-{n}")
    html = as_alice.post(
        "/actions/bulk/review", {"do": "cancel-selected", "work": ["sel-0", "sel-1", "sel-2"]}
    ).content.decode()
    assert "Cancel 3 Work" in html
    fields = {
        **confirmed(html),
        "works": html_unescape(hidden(html, "works")[0]),
        "seen": hidden(html, "seen")[0],
        "reason": "bad deploy",
    }
    actions.do_cancel_work(
        default_store(), username="bob", work_id="sel-1", reason="mine", token=new_token()
    )
    changed = read(lambda tx: tx.work("sel-1")).updated_at

    response = as_alice.post("/actions/bulk", fields)

    result = response.content.decode()
    assert response.status_code == 200
    assert "Cancel: 2 done, 0 skipped, 1 no longer eligible" in result
    assert "The confirmation promised <strong>3</strong> Work" in result
    gone = result.split('id="gone"')[1].split("</section>")[0]
    rows = re.findall(r"<tr><td>.*?</tr>", gone, re.S)
    assert len(rows) == 1
    assert 'href="/works/sel-1"' in rows[0]
    assert "cancelled" in rows[0]
    assert "operator:bob" in rows[0]
    assert f'<time datetime="{from_ns(changed).isoformat()}"' in rows[0]  # when
    states = read(lambda tx: {w.id: w.state for w in tx.works()})
    assert all(s is WorkState.CANCELLED for s in states.values())

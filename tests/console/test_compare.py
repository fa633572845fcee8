"""Two attempts of a Work side by side (``/compare/<id>``): the default pair, the
fields that differ marked in words, the logs and reports diffed, a big artifact left
undiffed, awkward IDs from their links, bad input as 4xx pages, and a query count that
does not grow with the history."""

from __future__ import annotations

import html as markup
import re

import pytest
from django.db import connections
from django.urls import reverse

from console.runtime.diffs import DIFF_LIMIT
from storage import Execution, ExecutionState, Tx, Work, seconds
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support import attempts as seed
from tests.console.support.markup import text_of
from tests.console.support.odd_ids import IDS

pytestmark = DB

LINK = re.compile(r'href="(/compare/[^"]+)"')


def row(html: str, name: str) -> str:
    """The compared field's row (its name, mark and both sides) as text."""
    found = re.search(rf'<div class="cmp-row[^"]*" id="cmp-{name}">(.*?)</div>', html, re.S)
    assert found, name
    return text_of(found.group(1))


def get(client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.content.decode()[:2000]
    return response.content.decode()


def test_the_default_is_the_latest_failed_against_the_latest_completed(as_bob):
    seed.failed_then_succeeded_then_failed()
    html = get(as_bob, "/compare/refund-7")

    assert 'id="cmp-a" name="a"' in html
    assert re.search(r'<option value="refund-7-x3" selected>attempt 3 · failed', html)
    assert re.search(r'<option value="refund-7-x1" selected>attempt 1 · completed', html)
    assert (
        "Chosen by default: the latest failed attempt (A) and the latest that completed (B)."
        in text_of(html)
    )


def test_without_a_failed_and_a_completed_one_the_default_is_the_two_latest(as_bob):
    f.work("w")
    for _ in range(3):
        x = f.start("w")
        f.finish(x.id, state=ExecutionState.FAILED, message="again")
    html = get(as_bob, "/compare/w")

    assert '<option value="w-x2" selected>' in html.split('id="cmp-b"')[0]  # A: the older
    assert '<option value="w-x3" selected>' in html.split('id="cmp-b"')[1]
    assert "the two latest attempts (A the older)" in html


def test_the_fields_that_differ_are_marked_in_words(as_bob):
    seed.failed_then_succeeded_then_failed()
    html = get(as_bob, "/compare/refund-7")

    for name in ("state", "executor", "binding", "outcome", "lease", "inputs-seen", "artifacts"):
        assert "≠ differs" in row(html, name), name
    assert "python-3.13" in row(html, "executor")
    assert "card declined" in row(html, "outcome")
    assert "claimed 2 times (epoch 2)" in row(html, "lease")
    assert "card.expired" in row(html, "inputs-seen")
    assert "card.updated" in row(html, "inputs-seen")
    assert "Differs: State, Executor, Binding, Inputs seen, Lease, Outcome" in text_of(html)
    assert "log (artifact), report (artifact)" in text_of(html)


def test_two_attempts_that_went_alike_are_marked_the_same(as_bob):
    seed.failed_then_succeeded_then_failed()
    html = get(as_bob, "/compare/refund-7?a=refund-7-x2&b=refund-7-x3")

    for name in ("state", "executor", "binding", "outcome"):
        assert "= same" in row(html, name), name
    # Attempt 2 saw no Event, attempt 3 one: what they could have seen differs.
    assert "≠ differs" in row(html, "inputs-seen")
    assert "the same SHA-256: not read" in html  # the same log and report bytes


def test_the_log_and_the_report_are_diffed_line_by_line(as_bob):
    seed.failed_then_succeeded_then_failed()
    html = get(as_bob, "/compare/refund-7")
    diffs = [text_of(d) for d in re.findall(r'<pre class="log diff"[^>]*>(.*?)</pre>', html, re.S)]

    log, report = diffs
    assert "--- A: attempt 3 log" in log
    assert "+++ B: attempt 1 log" in log
    assert "-FATAL: card declined" in log
    assert "+charged 12.00 EUR" in log
    assert "step 4: ok" in log  # context
    assert '- "status": "declined",' in report  # pretty-printed first: one key a line
    assert '+ "status": "charged",' in report
    assert ' "amount": "12.00",' in report  # unchanged: context, not a change
    assert 'class="d-del"' in html
    assert 'class="d-add"' in html


def test_an_artifact_over_the_limit_is_not_diffed_and_the_page_says_so(as_bob):
    f.work("big")
    for n in range(2):
        body = b"".join(b"line %06d of attempt %d\n" % (i, n) for i in range(DIFF_LIMIT // 20))
        assert len(body) > DIFF_LIMIT
        ref = f.publish(body)
        x = f.start("big")
        f.finish(x.id, state=ExecutionState.FAILED, message=f"try {n}", artifacts=[ref])
    html = get(as_bob, "/compare/big")

    assert f"not diffed: larger than {DIFF_LIMIT // 1024} KiB (download both)" in html
    assert "line 000001 of attempt" not in html
    assert 'class="log diff"' not in html
    assert 'href="/executions/big-x1/artifacts/' in html  # offered as downloads


def test_the_work_page_links_compare_once_it_has_two_attempts(as_bob):
    f.exhausted("one")
    assert "/compare" not in get(as_bob, "/works/one")
    x = f.start("one")
    f.finish(x.id, state=ExecutionState.FAILED, message="again")
    assert LINK.findall(get(as_bob, "/works/one")) == ["/compare/one"]


def test_a_work_with_one_attempt_says_a_comparison_needs_two(as_bob):
    f.exhausted("one")
    html = get(as_bob, "/compare/one")

    assert "This Work has 1 attempt: a comparison needs two." in html


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("a=nope", 404),  # no such attempt
        ("b=other-x1", 404),  # another Work's attempt
        ("a=%00", 400),  # NUL: the store refuses it
        ("a=" + "x" * 256, 400),  # over 255 bytes
        ("a=%ff%fe", 404),  # not UTF-8: decoded with replacement characters, found nowhere
        ("a=refund-7-x1&a=refund-7-x2&b=refund-7-x3", 200),  # the last one counts
    ],
)
def test_bad_or_foreign_attempt_ids_are_4xx_pages(as_bob, query, status):
    seed.failed_then_succeeded_then_failed()
    f.exhausted("other")
    html = get(as_bob, f"/compare/refund-7?{query}", status)

    if status != 200:
        assert '<p class="status mono">' in html  # the console's error page


def test_an_unknown_work_is_a_404_and_a_post_a_405(as_bob):
    get(as_bob, "/compare/nope", 404)
    # An ID over 255 bytes answers as the Work page does: no such Work.
    assert as_bob.get("/works/" + "x" * 256).status_code == 404
    get(as_bob, "/compare/" + "x" * 256, 404)
    assert as_bob.post("/compare/nope").status_code == 405


def test_one_side_named_takes_the_other_from_the_default(as_bob):
    seed.failed_then_succeeded_then_failed()
    html = get(as_bob, "/compare/refund-7?a=refund-7-x1")

    # The default's A is attempt 3; B, the completed attempt 1, is taken: B becomes 3.
    assert '<option value="refund-7-x1" selected>' in html.split('id="cmp-b"')[0]
    assert '<option value="refund-7-x3" selected>' in html.split('id="cmp-b"')[1]
    assert "B chosen by default, from the latest failed and the latest completed attempt." in html


def seed_odd(work_id: str, n: int) -> tuple[str, str]:
    """Work ``work_id`` with two failed attempts whose IDs are awkward too."""
    first, second = work_id, IDS["bidi"] if work_id != IDS["bidi"] else IDS["emoji"]

    f.transact(lambda tx: tx.put_work(Work(id=work_id, kind=f.KIND)))
    for attempt, execution_id in enumerate((first, second), start=1):

        def run(tx: Tx, attempt: int = attempt, execution_id: str = execution_id) -> None:
            x = tx.put_execution(Execution(id=execution_id, work_id=work_id, attempt=attempt))
            tx.claim(x.id, "worker-1", tx.now + seconds(30))

        f.transact(run)
        f.finish(execution_id, state=ExecutionState.FAILED, message=f"odd {n} try {attempt}")
    return first, second


@pytest.mark.parametrize("name", sorted(IDS))
def test_awkward_ids_work_from_the_work_pages_link_and_the_choosers(as_bob, name):
    work_id = IDS[name]
    first, second = seed_odd(work_id, 1)
    work_page = get(as_bob, reverse("work_detail", kwargs={"work_id": work_id}))
    [link] = LINK.findall(work_page)
    html = get(as_bob, markup.unescape(link))

    assert "odd 1 try 1" in html
    assert "odd 1 try 2" in html
    assert "= same" in row(html, "lease")  # one claim each
    # The choosers' values, sent back as a GET form would, in both orders.
    response = as_bob.get(markup.unescape(link), {"a": second, "b": first})
    assert response.status_code == 200
    swapped = response.content.decode()
    assert f'<option value="{markup.escape(second)}" selected>' in swapped.split('id="cmp-b"')[0]


def test_a_work_whose_id_ends_in_compare_keeps_its_page(as_bob):
    f.exhausted("team/compare")
    f.exhausted("team")
    page = get(as_bob, "/works/team/compare")
    assert "team/compare" in page
    x = f.start("team/compare")
    f.finish(x.id, state=ExecutionState.FAILED, message="again")

    assert LINK.findall(get(as_bob, "/works/team/compare")) == ["/compare/team/compare"]
    assert "This Work has 1 attempt" in get(as_bob, "/compare/team")  # Work "team"
    assert "attempt 2" in get(as_bob, "/compare/team/compare")


def test_the_page_costs_the_same_whatever_the_history(as_bob, django_assert_num_queries):
    seed.failed_then_succeeded_then_failed()
    counts = []
    for more in (0, 40):
        for n in range(more):
            f.event(f"more-{n}", work_id="refund-7")
        for _ in range(more // 10):
            x = f.start("refund-7")
            f.finish(x.id, state=ExecutionState.FAILED, message="again")
        # BEGIN, the View's clock, the Work, its attempts, its Waits, each side's
        # Events (at most 51 rows each), COMMIT: the same with 40 more Events and 4
        # more attempts; artifact content is read from files, not the database.
        with django_assert_num_queries(8, connection=connections["view"]) as ctx:
            get(as_bob, "/compare/refund-7")
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]


def test_artifacts_pair_by_derived_name_and_binary_ones_are_not_diffed(as_bob):
    f.work("mixed")
    sides = [
        [f.publish(b"a\n"), f.publish(b"\x89PNG\x00", "image/png")],
        [
            f.publish(b"b\n"),
            f.publish(b"\x89PNG\x01", "image/png"),
            f.publish(b"{}", "application/json"),
        ],
    ]
    for refs in sides:
        x = f.start("mixed")
        f.finish(x.id, state=ExecutionState.FAILED, message="again", artifacts=refs)
    html = get(as_bob, "/compare/mixed")
    names = re.findall(
        r'<div class="cmp-artifact[^"]*" id="cmp-artifact-\d+">\s*<h3>(.*?)</h3>', html, re.S
    )

    assert [text_of(n) for n in names] == ["log ≠ differs", "png ≠ differs", "report ≠ only B"]
    assert "not diffed: binary content (download both)" in html
    assert "-a" in text_of(html)
    assert "+b" in text_of(html)


def test_the_same_attempt_on_both_sides_is_said(as_bob):
    seed.failed_then_succeeded_then_failed()
    html = get(as_bob, "/compare/refund-7?a=refund-7-x2&b=refund-7-x2")

    assert "A and B are the same attempt" in html
    assert "Nothing compared here differs." in html
    assert "≠ differs" not in html

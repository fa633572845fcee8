"""The Executions page: kind and Scope columns, filters in the URL (state, kind,
Scope tree, Work ID prefix, expired leases), keyset pages, one read per page with its
query count pinned; and the Waits page's kind and Scope columns."""

from __future__ import annotations

import re

from django.db import connections
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from storage import Execution, Tx, seconds
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB


def running_at_once(*work_ids: str, scope_id: str = "") -> None:
    """Work each with one claimed attempt, in one transaction (a page's worth quickly)."""
    f.works_at_once(*work_ids, scope_id=scope_id)

    def claim(tx: Tx) -> None:
        for work_id in work_ids:
            x = tx.put_execution(Execution(id=f"{work_id}-x1", work_id=work_id, attempt=1))
            tx.claim(x.id, "worker-1", tx.now + seconds(600))

    f.transact(claim)


def rows(html: str) -> list[str]:
    return re.findall(r'href="/works/([^"#]+)#attempt', html)


def seed() -> None:
    f.scope("acme")
    f.scope("acme-eu", parent="acme")
    f.scope("globex")
    f.running("eu-charge", scope_id="acme-eu", lease=600)
    f.running("gx-refund", scope_id="globex", kind="billing.refund", lease=600)
    f.running("eu-stale", scope_id="acme-eu", lease=0.001)
    f.completed("eu-done", scope_id="acme-eu")


def test_each_filter_in_the_url_narrows_the_attempts(as_alice) -> None:
    seed()
    got = {
        q: rows(as_alice.get("/executions" + q).content.decode())
        for q in (
            "",
            "?kind=billing.refund",
            "?within=acme",
            "?work=eu-",
            "?expired=1",
            "?state=completed",
            "?state=any&within=acme-eu",
        )
    }
    assert got == {
        "": ["eu-stale", "gx-refund", "eu-charge"],
        "?kind=billing.refund": ["gx-refund"],
        "?within=acme": ["eu-stale", "eu-charge"],
        "?work=eu-": ["eu-stale", "eu-charge"],
        "?expired=1": ["eu-stale"],
        "?state=completed": ["eu-done"],
        "?state=any&within=acme-eu": ["eu-done", "eu-stale", "eu-charge"],
    }


def test_rows_show_the_works_kind_and_scope(as_alice) -> None:
    seed()
    html = as_alice.get("/executions?work=gx-").content.decode()
    assert '<td class="mono">billing.refund</td>' in html
    assert '<td class="mono">globex</td>' in html


def test_keyset_pages_walk_every_attempt_once(as_alice) -> None:
    running_at_once(*(f"w{i:02d}" for i in range(30)))
    seen: list[str] = []
    url = "/executions?size=25"
    while url:
        html = as_alice.get(url).content.decode()
        seen += rows(html)
        nxt = re.search(r'<a rel="next" href="([^"]+)"', html)
        url = "/executions" + nxt.group(1).replace("&amp;", "&") if nxt else ""
    assert sorted(seen) == [f"w{i:02d}" for i in range(30)]
    assert len(seen) == len(set(seen))


def test_a_page_costs_the_same_whatever_its_length(as_alice, django_assert_num_queries):
    """BEGIN, the View's clock (with the store version and latest sequence) (2),
    the Scopes for ``within`` (1), the page (1), its Work (1), COMMIT: 7 whatever the
    page holds."""
    f.scope("acme")
    running_at_once("few-0", "few-1", "few-2", scope_id="acme")
    with django_assert_num_queries(6, connection=connections["view"]):
        assert len(rows(as_alice.get("/executions?within=acme").content.decode())) == 3
    running_at_once(*(f"many-{i:02d}" for i in range(40)), scope_id="acme")
    with django_assert_num_queries(6, connection=connections["view"]):
        assert len(rows(as_alice.get("/executions?within=acme").content.decode())) == 43


def test_it_refuses_a_bad_filter_or_cursor_with_400(as_alice) -> None:
    for query in (
        "?state=sleeping",
        "?expired=yes",
        "?size=7",
        "?after=notakey",
        "?work=" + "x" * 300,
        "?work=a%00b",
        "?kind=a%00b",
    ):
        assert as_alice.get("/executions" + query).status_code == 400, query


def test_waits_show_their_works_kind_and_scope(as_alice) -> None:
    f.scope("acme")
    f.parked("w1", scope_id="acme", kind="billing.approve")
    html = as_alice.get("/waits").content.decode()
    assert '<td class="mono">billing.approve</td>' in html
    assert '<td class="mono">acme</td>' in html


# Times past 64 bits, signs, digits Python reads but a column does not, NUL and lone
# surrogates, dots in the ID: the cursors of the runtime pages.
_CURSOR_TIMES = st.one_of(
    st.integers(min_value=0, max_value=2**70).map(str),
    st.sampled_from(["", "-1", "²", "٣", "1e9", " 1", str(2**63 - 1), str(2**63)]),
)
_CURSOR_IDS = st.text(min_size=0, max_size=300)


@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    path=st.sampled_from(["/executions", "/waits", "/timers", "/timers/ahead"]),
    name=st.sampled_from(["after", "before"]),
    time=_CURSOR_TIMES,
    key_id=_CURSOR_IDS,
)
@example(path="/executions", name="after", time="99999999999999999999", key_id="x")
def test_no_cursor_gives_a_500(as_alice, path: str, name: str, time: str, key_id: str) -> None:
    raw = f"{time}.{key_id}"
    response = as_alice.get(path, {name: raw})

    assert response.status_code in (200, 400), (path, name, raw)
    read = name == "after" or path != "/executions"  # the Executions page pages forward only
    if read and time.isascii() and time.isdigit() and int(time) > 2**63 - 1 and key_id:
        assert response.status_code == 400, (path, name, raw)

"""The search box takes whatever an alert gave: any ID, a unique prefix of six
characters or more, a correlation key, or a word it suggests a filter for; unknown
qualifiers and values say so."""

import re
from urllib.parse import quote

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from tests.console import factories as f
from tests.console import run_record_factories as runs
from tests.console.conftest import DB

pytestmark = DB


@pytest.fixture
def seeded():
    f.scope("acme", name="Acme Corp")
    f.work("order-7f3a9c21", scope_id="acme", keys=[("stripe", "ch_1"), ("shop:eu", "42")])
    f.work("order-7f3a0000", kind="sync.crm")
    f.parked("parked-5e1d2b")  # an attempt, a Wait and its timeout Timer
    f.event("evt-c0ffee-1", work_id="order-7f3a9c21")
    f.event("evt-c0ffee-2")
    runs.checkout("checkout/run-91b7")


def search(client, q, **extra):
    return client.get("/", {"q": q, **extra})


@pytest.mark.parametrize(
    ("term", "location"),
    [
        ("order-7f3a9c21", "/works/order-7f3a9c21"),
        ("evt-c0ffee-2", "/events/evt-c0ffee-2"),
        ("parked-5e1d2b-x1", "/works/parked-5e1d2b#attempt-1"),
        ("parked-5e1d2b-wait", "/works/parked-5e1d2b#wait-parked-5e1d2b-wait"),
        ("parked-5e1d2b-timeout", "/works/parked-5e1d2b#timer-parked-5e1d2b-timeout"),
        ("acme", "/dashboard/acme"),
        ("checkout/run-91b7", "/run-records/checkout/run-91b7"),
    ],
)
def test_any_id_lands_on_its_page_or_its_works_row(as_alice, seeded, term, location):
    response = search(as_alice, term)

    assert response.status_code == 302
    assert response["Location"] == location


@pytest.mark.parametrize(
    ("term", "location"),
    [
        ("order-7f3a9", "/works/order-7f3a9c21"),  # unique: the other is order-7f3a0
        ("checkout/ru", "/run-records/checkout/run-91b7"),
        ("parked-5e1d2b-w", "/works/parked-5e1d2b#wait-parked-5e1d2b-wait"),
    ],
)
def test_a_unique_prefix_of_six_or_more_characters_lands_too(as_alice, seeded, term, location):
    response = search(as_alice, term)

    assert response["Location"] == location


def test_an_ambiguous_prefix_lists_the_candidates_with_their_kinds(as_alice, seeded):
    response = search(as_alice, "evt-c0ffee")
    html = response.content.decode()

    assert response.status_code == 200
    assert "2 records have an ID starting with <code>evt-c0ffee</code>" in html
    assert '<td>Event</td><td><a class="mono" href="/events/evt-c0ffee-1">' in html
    assert '<td class="mono small">order-7f3a9c21</td>' in html  # its Work
    mixed = search(as_alice, "parked-5e1d").content.decode()
    for kind in ("Work", "Execution", "Wait", "Timer"):
        assert f"<td>{kind}</td>" in mixed


def test_a_prefix_shorter_than_six_characters_says_why_it_was_not_tried(as_alice, seeded):
    html = search(as_alice, "order").content.decode()

    assert "an ID prefix needs at least 6 characters" in html
    assert "(<code>order</code> has 5)" in html


def test_more_candidates_than_the_limit_says_to_type_more(as_alice):
    for n in range(12):
        f.event(f"bulk-event-{n:02}")
    html = search(as_alice, "bulk-event").content.decode()

    assert "only the first 10 of each kind are listed" in html
    assert html.count("<td>Event</td>") == 10


@pytest.mark.parametrize(
    ("term", "location"),
    [
        ("stripe/ch_1", "/works/order-7f3a9c21"),
        ("stripe:ch_1", "/works/order-7f3a9c21"),
        ("shop:eu/42", "/works/order-7f3a9c21"),  # the source holds a ":"
        ("shop:eu:42", "/works/order-7f3a9c21"),
    ],
)
def test_a_correlation_key_lands_on_its_work_either_way_it_is_written(
    as_alice, seeded, term, location
):
    assert search(as_alice, term)["Location"] == location


@pytest.mark.parametrize(
    ("term", "link", "text"),
    [
        ("failed", "/?state=failed", "state:failed"),
        ("Ready", "/?state=ready", "state:ready"),
        ("exhausted", "/?is=exhausted", "is:exhausted"),
        ("sync.crm", "/?kind=sync.crm", "kind:sync.crm"),
        ("stripe", "/?source=stripe", "source:stripe"),
        ('"Acme Corp"', "/?scope=acme", "scope:acme"),
        ('"acme corp"', "/?within=acme", "within:acme"),
    ],
)
def test_a_bare_name_suggests_the_qualifier_as_a_link(as_alice, seeded, term, link, text):
    html = search(as_alice, term).content.decode()

    assert "Did you mean" in html
    assert f'<a class="mono" href="{link}">{text}</a>' in html


def test_a_suggestion_keeps_the_filter_already_applied(as_alice, seeded):
    html = search(as_alice, "failed", kind="sync.crm").content.decode()

    assert 'href="/?state=failed&amp;kind=sync.crm"' in html


def test_an_unknown_qualifier_says_it_is_none_and_suggests_the_near_one(as_alice, seeded):
    html = search(as_alice, "stat:failed").content.decode()

    assert "<code>stat</code> is not a search qualifier" in html
    assert 'href="/?q=state:failed"' in html
    assert "foo</code> is not a search qualifier" in search(as_alice, "foo:bar").content.decode()


@pytest.mark.parametrize(
    ("q", "said"),
    [
        ("kind:nope", "No Work has the kind &#x27;nope&#x27;."),
        ("source:nowhere", "No Work has the source &#x27;nowhere&#x27;."),
        ("scope:acmee", "There is no Scope &#x27;acmee&#x27;. Did you mean acme?"),
        ("within:nobody", "There is no Scope &#x27;nobody&#x27;."),
        ("executor:cobol", "No Work has the executor &#x27;cobol&#x27;."),
    ],
)
def test_an_unknown_qualifier_value_says_so_instead_of_matching_nothing(as_alice, seeded, q, said):
    response = search(as_alice, q)
    html = response.content.decode()

    assert response.status_code == 200
    assert "matches nothing" in html
    assert said in html


def test_a_known_value_still_becomes_the_canonical_filter(as_alice, seeded):
    response = search(as_alice, "kind:sync.crm")

    assert response["Location"] == "/?kind=sync.crm"


def test_an_unsearchable_term_is_a_form_error_not_a_500(as_alice, seeded):
    response = search(as_alice, "x" * 300)

    assert response.status_code == 400
    assert b"Cannot search" in response.content


@pytest.mark.parametrize("char", ["%", "_", "\\", "é", "\U0001f600"])
def test_prefixes_match_literally_whatever_the_characters(as_alice, char):
    f.work(f"lit{char}erally-1")
    f.work("litXerally-2")  # what a LIKE wildcard would also match
    response = search(as_alice, f"lit{char}er")

    assert response["Location"] == "/works/" + quote(f"lit{char}erally-1")


def test_the_lookup_costs_a_bounded_number_of_queries(as_alice, seeded):
    for n in range(30):
        f.work(f"many-{n:02}")
    with CaptureQueriesContext(connections["view"]) as queries:
        search(as_alice, "many-0")
    # Seven prefix reads (one per kind), the correlation key probes (the term has no
    # "/" or ":"), nothing per matching record.
    # (SQLite compares with >=, PostgreSQL with its byte-wise ~>=~.)
    prefix_reads = [q for q in queries.captured_queries if re.search(r"id (~>=~|>=) ", q["sql"])]
    assert len(prefix_reads) == 7
    assert len(queries.captured_queries) <= 12

"""The Work list (home): filters, search, facets, keyset paging, live polling."""

import re

import pytest
from django.db import connections

from console.works.filters import FACET_VALUES
from storage import from_ns
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

ROW = re.compile(r'<td class="id"><a class="mono" href="/works/([^"]+)"')


def rows(response) -> list[str]:
    return ROW.findall(response.content.decode())


@pytest.fixture
def seeded():
    f.scope("acme")
    f.scope("globex")
    f.work("a", scope_id="acme", keys=[("github", "1")])
    f.exhausted("b", kind="deploy.service", scope_id="globex", keys=[("stripe", "2")])
    f.work("c", scope_id="acme", parent="a")
    f.start("c", executor="rust")
    f.completed("d", kind="sync.crm")


def test_it_lists_work_newest_first_with_facet_counts(as_alice, seeded):
    response = as_alice.get("/")

    assert response.status_code == 200
    assert rows(response) == ["d", "c", "b", "a"]
    html = response.content.decode()
    assert "<strong>4</strong> Work" in html
    assert 'href="?kind=billing.charge"' in html  # a facet value is a link adding it


def test_it_says_what_would_appear_when_there_is_no_work(as_alice):
    response = as_alice.get("/")

    assert response.status_code == 200
    assert b"No Work yet." in response.content


@pytest.mark.parametrize(
    ("qs", "expected"),
    [
        ("state=running", ["c"]),
        ("state=running&state=completed", ["d", "c"]),
        ("scope=acme", ["c", "a"]),
        ("kind=billing.charge", ["c", "a"]),
        ("parent=a", ["c"]),
        ("source=github", ["a"]),
        ("source=github&source=stripe", ["b", "a"]),
        ("executor=rust", ["c"]),
        ("executor=python", ["d", "b"]),
        ("since=1d", ["d", "c", "b", "a"]),
        ("since=2999-01-01", []),
        ("sort=created", ["a", "b", "c", "d"]),
    ],
)
def test_each_filter_narrows_the_list(as_alice, seeded, qs, expected):
    response = as_alice.get(f"/?{qs}")

    assert response.status_code == 200
    assert rows(response) == expected


def test_a_narrowed_list_with_no_match_offers_to_clear_the_filter(as_alice, seeded):
    response = as_alice.get("/?kind=nothing.here")

    assert b"No Work matches this filter." in response.content


def test_facets_count_the_current_filter_and_link_to_narrow_it(as_alice, seeded):
    html = as_alice.get("/?scope=acme").content.decode()

    assert "<strong>2</strong> Work match the filter" in html
    assert 'href="?state=running&amp;scope=acme"' in html
    assert 'href="?scope=acme&amp;executor=rust"' in html
    assert 'aria-label="Remove filter scope acme"' in html


def test_search_qualifiers_become_filters_in_a_canonical_url(as_alice, seeded):
    response = as_alice.get("/", {"q": "state:running kind:billing.charge scope:acme"})

    assert response.status_code == 302
    assert response["Location"] == "/?state=running&scope=acme&kind=billing.charge"
    assert rows(as_alice.get(response["Location"])) == ["c"]


def test_search_qualifiers_add_to_the_filter_already_applied(as_alice, seeded):
    response = as_alice.get("/", {"q": "source:stripe", "source": "github"})

    assert response["Location"] == "/?source=github&source=stripe"


@pytest.mark.parametrize(("term", "work_id"), [("b", "b"), ("github/1", "a"), ("stripe/2", "b")])
def test_search_jumps_to_a_work_by_id_or_correlation_key(as_alice, seeded, term, work_id):
    response = as_alice.get("/", {"q": term})

    assert response.status_code == 302
    assert response["Location"] == f"/works/{work_id}"


def test_search_for_an_unknown_id_says_so(as_alice, seeded):
    response = as_alice.get("/", {"q": "github/404"})

    assert response.status_code == 200
    assert b"Nothing has the ID or correlation key <code>github/404</code>" in response.content


@pytest.mark.parametrize(
    "qs",
    [
        "since=yesterday",
        "state=exploded",
        "size=7",
        "sort=sideways",
        "after=garbage",
        "q=state:bogus",
    ],
)
def test_bad_input_is_a_400_with_the_form_error_not_a_500(as_alice, seeded, qs):
    response = as_alice.get(f"/?{qs}")

    assert response.status_code == 400
    assert b"field-error" in response.content or b"form-errors" in response.content
    assert b"Fix the filter above" in response.content


def test_keyset_paging_goes_forward_and_back_over_a_tie_in_time(as_alice):
    # 30 Works share one created_at; 5 more come later. Ties are broken by ID.
    tied = [f"w{i:02d}" for i in range(30)]
    f.works_at_once(*tied)
    f.works_at_once(*[f"z{i}" for i in range(5)])
    expected = [f"z{i}" for i in reversed(range(5))] + list(reversed(tied))

    first = as_alice.get("/?size=25")
    page1 = rows(first)
    next_url = re.search(r'rel="next" href="([^"]+)"', first.content.decode()).group(1)
    second = as_alice.get("/" + next_url.replace("&amp;", "&"))
    page2 = rows(second)
    prev_url = re.search(r'rel="prev" href="([^"]+)"', second.content.decode()).group(1)
    back = as_alice.get("/" + prev_url.replace("&amp;", "&"))

    assert page1 + page2 == expected
    assert "after=" in next_url
    assert "before=" in prev_url
    assert rows(back) == page1
    assert 'rel="next"' not in second.content.decode()
    assert 'rel="prev"' not in back.content.decode()


def test_paging_back_to_a_short_start_shows_a_full_first_page(as_alice):
    f.works_at_once(*[f"w{i:02d}" for i in range(30)])
    # "before" the 3rd newest Work: only two rows precede it, so page 1 is shown whole.
    listing = as_alice.get("/?size=25")
    third = rows(listing)[2]
    time_ns = re.search(r"after=(\d+)\.", listing.content.decode()).group(1)

    response = as_alice.get(f"/?size=25&before={time_ns}.{third}")

    assert rows(response) == rows(listing)


def test_page_size_is_a_choice(as_alice):
    f.works_at_once(*[f"w{i:02d}" for i in range(30)])

    assert len(rows(as_alice.get("/"))) == 30
    assert len(rows(as_alice.get("/?size=25"))) == 25


def test_a_facet_link_swaps_the_workspace_and_the_filter_form_out_of_band(as_alice, seeded):
    response = as_alice.get("/?state=ready", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="workspace")

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert html.lstrip().startswith('<div id="workspace"')
    assert '<form id="filters"' in html
    assert 'hx-swap-oob="true"' in html
    assert "HX-Request" in response["Vary"]


def test_within_selects_a_scope_and_its_descendants(as_alice, seeded):
    f.scope("acme-eu", parent="acme")
    f.scope("acme-eu-1", parent="acme-eu")
    f.work("e", scope_id="acme-eu")
    f.work("e1", scope_id="acme-eu-1")

    assert rows(as_alice.get("/?within=acme")) == ["e1", "e", "c", "a"]
    assert rows(as_alice.get("/?within=acme-eu")) == ["e1", "e"]
    assert rows(as_alice.get("/?within=acme&scope=acme-eu")) == ["e"]
    assert rows(as_alice.get("/?within=nowhere")) == []


def test_since_and_until_select_an_updated_window(as_alice, seeded):
    updated = sorted(f.transact(lambda tx: tx.works()), key=lambda w: w.updated_at)
    # Instants to the microsecond (what an ISO time carries), floored: the window
    # [second Work, fourth Work) holds the second and the third.
    since, until = (from_ns(w.updated_at // 1000 * 1000).isoformat() for w in updated[1::2])

    response = as_alice.get("/", {"since": since, "until": until, "sort": "updated"})

    assert rows(response) == [updated[1].id, updated[2].id]
    assert b"until:</span>" in response.content  # shown as a removable chip


def test_search_qualifiers_within_since_until_become_the_canonical_url(as_alice, seeded):
    response = as_alice.get("/", {"q": "within:acme since:1h until:5m"})

    assert response.status_code == 302
    assert response["Location"] == "/?within=acme&since=1h&until=5m"


def test_an_until_before_since_is_a_400_naming_the_field(as_alice, seeded):
    response = as_alice.get("/?since=1h&until=2h")

    assert response.status_code == 400
    assert b"Updated before must be later than updated since." in response.content


def test_within_costs_one_more_query_for_the_scopes(as_alice, seeded, django_assert_num_queries):
    # BEGIN, snapshot (with the store version and latest sequence), Scopes (1), page
    # (1), facets (1), last tries (3), COMMIT.
    with django_assert_num_queries(9, connection=connections["view"]):
        assert as_alice.get("/?within=acme").status_code == 200


def test_the_list_reads_everything_in_one_view_with_a_pinned_query_count(
    as_alice, seeded, django_assert_num_queries, django_assert_max_num_queries
):
    # BEGIN, snapshot (with the store version and latest sequence), page (1), facets (1:
    # one GROUP BY), the rows' last tries (latest attempts, Timers, Waits: 3, whatever
    # the page size), COMMIT. On the
    # default alias: session, user, operator check, and the console's own tables (the
    # chosen columns, the saved views, the team-views permission: console/saved/).
    with (
        django_assert_num_queries(8, connection=connections["view"]),
        django_assert_max_num_queries(6, connection=connections["default"]),
    ):
        response = as_alice.get("/?state=ready")

    assert response.status_code == 200


def test_an_operator_gets_row_selection_and_bulk_buttons(as_alice, seeded):
    html = as_alice.get("/").content.decode()

    assert 'name="work" value="a"' in html
    assert 'value="retry-all"' in html


def test_a_long_tail_of_kinds_lists_the_most_frequent_and_names_the_rest(as_alice):
    from storage import Work

    kinds = [f"tail.k{n:03}" for n in range(FACET_VALUES + 12)]
    f.transact(lambda tx: [tx.put_work(Work(id=f"w-{k}", kind=k)) for k in kinds])
    html = as_alice.get("/").content.decode()

    assert html.count('href="?kind=tail.k') == FACET_VALUES
    assert "and 12 less frequent, not listed" in html
    assert 'href="#f-kind">filter form</a>' in html
    # A value beyond the list is still one the form takes.
    assert rows(as_alice.get(f"/?kind={kinds[-1]}")) == [f"w-{kinds[-1]}"]

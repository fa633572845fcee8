"""The Work list's URL parsing: filters, search qualifiers and keyset cursors."""

from datetime import UTC, datetime

import pytest
from django.http import QueryDict

from console.events.filters import parse_event_filter
from console.urlstate import FilterError, format_key, parse_key
from console.works.filters import (
    Cursor,
    WorkFilter,
    apply_search,
    parse_cursor,
    parse_search,
    parse_work_filter,
)
from storage import WorkKey, WorkOrder, WorkState, to_ns

NOW = 1_767_225_600 * 10**9


def parse(qs: str) -> WorkFilter:
    return parse_work_filter(QueryDict(qs), now_ns=NOW)


def test_it_reads_every_filter_from_the_query_string():
    f = parse(
        "state=running&state=ready&scope=acme&kind=billing.charge&parent=p1"
        "&source=github&source=stripe&executor=python&sort=updated&size=25"
    )

    assert f.states == (WorkState.READY, WorkState.RUNNING)
    assert (f.scope, f.kind, f.parent, f.executor) == ("acme", "billing.charge", "p1", "python")
    assert f.sources == ("github", "stripe")
    assert (f.sort, f.size) == (WorkOrder.UPDATED_ASC, 25)
    query = f.query()
    assert query.states == frozenset({WorkState.READY, WorkState.RUNNING})
    assert query.sources == frozenset({"github", "stripe"})


def test_it_writes_back_a_canonical_query_string_without_defaults():
    f = parse("kind=a.b&state=failed&size=50&sort=-created&source=")

    assert f.querystring() == "?state=failed&kind=a.b"


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        ("15m", NOW - 15 * 60 * 10**9),
        ("2h", NOW - 2 * 3600 * 10**9),
        ("2026-01-01 00:00", to_ns(datetime(2026, 1, 1, tzinfo=UTC))),
        ("2026-01-01T01:00:00%2B01:00", 1_767_225_600 * 10**9),
        ("2026-01-01T01:00:00+01:00", 1_767_225_600 * 10**9),  # "+" decoded as a space
        ("2026-01-01T00:00:00Z", 1_767_225_600 * 10**9),
    ],
)
def test_it_reads_updated_since_as_a_utc_time_an_instant_or_a_duration(since, expected):
    assert parse(f"since={since}").since_ns == expected


@pytest.mark.parametrize(
    ("qs", "field"),
    [
        ("since=yesterday", "since"),
        ("state=exploded", "state"),
        ("size=7", "size"),
        ("sort=sideways", "sort"),
        ("kind=" + "x" * 300, "kind"),
    ],
)
def test_it_names_the_field_of_bad_input(qs, field):
    with pytest.raises(FilterError) as caught:
        parse(qs)

    assert field in caught.value.errors


def test_search_splits_qualifiers_from_bare_terms():
    search = parse_search('state:running kind:billing.charge w-17 source:"github acme" foo:bar')

    assert search.qualifiers == {
        "state": ["running"],
        "kind": ["billing.charge"],
        "source": ["github acme"],
    }
    assert search.terms == ("w-17", "foo:bar")


def test_search_survives_an_unbalanced_quote():
    assert parse_search('kind:"x').qualifiers == {"kind": ['"x']}


def test_search_qualifiers_add_states_and_sources_and_set_the_rest():
    base = parse("state=ready&source=github&kind=old.kind")
    search = parse_search("state:running,waiting source:stripe kind:new.kind scope:acme")

    f = apply_search(base, search)

    assert f.states == (WorkState.READY, WorkState.RUNNING, WorkState.WAITING)
    assert f.sources == ("github", "stripe")
    assert (f.kind, f.scope) == ("new.kind", "acme")


def test_search_refuses_an_unknown_state():
    with pytest.raises(FilterError) as caught:
        apply_search(WorkFilter(), parse_search("state:sleepy"))

    assert "sleepy" in caught.value.errors["q"]


def test_a_cursor_round_trips_ids_that_contain_dots():
    key = WorkKey(123, "a.b.c")

    assert parse_key(format_key(key)) == key
    assert parse_cursor(QueryDict("before=123.a.b.c")) == Cursor(key, backward=True)


@pytest.mark.parametrize("qs", ["after=abc", "after=12", "after=.x", "after=1.a&before=1.a"])
def test_it_refuses_a_malformed_cursor(qs):
    with pytest.raises(FilterError):
        parse_cursor(QueryDict(qs))


def test_event_filter_reads_its_fields_and_cursor():
    f, cursor = parse_event_filter(QueryDict("source=github&type=a.b&unrouted=1&before=40"))

    assert (f.source, f.type, f.unrouted) == ("github", "a.b", True)
    assert cursor.before == 40
    with pytest.raises(FilterError):
        parse_event_filter(QueryDict("before=x"))


def test_it_reads_within_and_an_updated_window():
    f = parse("within=acme&since=2026-01-01T00:00:00Z&until=2026-01-01T01:00:00Z")

    assert f.within == "acme"
    assert (f.since_ns, f.until_ns) == (NOW, NOW + 3600 * 10**9)
    query = f.query(scope_ids=frozenset({"acme", "acme-eu"}))
    assert query.scope_ids == frozenset({"acme", "acme-eu"})
    assert (query.updated_since, query.updated_before) == (NOW, NOW + 3600 * 10**9)
    assert f.querystring() == (
        "?within=acme&since=2026-01-01T00%3A00%3A00Z&until=2026-01-01T01%3A00%3A00Z"
    )
    assert f.narrowed
    assert [name for name, _, _ in f.chips()] == ["within", "since", "until"]
    assert f.without("until").until_ns is None


def test_until_is_relative_like_since_and_must_come_after_it():
    assert parse("until=15m").until_ns == NOW - 15 * 60 * 10**9
    with pytest.raises(FilterError) as caught:
        parse("since=1h&until=2h")
    assert caught.value.errors == {"until": "Updated before must be later than updated since."}
    with pytest.raises(FilterError) as caught:
        parse("until=tomorrow")
    assert "until" in caught.value.errors


def test_search_qualifiers_set_within_and_the_updated_window():
    search = parse_search('within:acme since:"2025-12-31 23:00" until:30m')

    f = apply_search(parse("scope=acme-eu"), search, now_ns=NOW)

    assert (f.within, f.scope) == ("acme", "acme-eu")
    assert (f.since, f.since_ns) == ("2025-12-31 23:00", NOW - 3600 * 10**9)
    assert (f.until, f.until_ns) == ("30m", NOW - 30 * 60 * 10**9)
    with pytest.raises(FilterError) as caught:
        apply_search(WorkFilter(), parse_search("until:someday"), now_ns=NOW)
    assert "UTC time" in caught.value.errors["q"]

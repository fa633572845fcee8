"""WorkQuery, CountWorks, WorkFacets and executor (checklist §15, Q)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import storage
from storage import (
    Binding,
    Conflict,
    Invalid,
    NotFound,
    Store,
    Tx,
    WorkKey,
    WorkOrder,
    WorkQuery,
    seconds,
    to_ns,
)

from ..support import (
    FakeClock,
    fails,
    get_work,
    ids,
    key,
    make_execution,
    make_scope,
    make_work,
    park,
    put_works,
    start_attempt,
    tx,
    update_work,
)
from ._helpers import COMPLETED, FAILED, READY, RUNNING, WAITING, X_CANCELLED, X_FAILED, terminate

# ---------------------------------------------------------------------------------
# 15. WorkQuery, CountWorks, WorkFacets and executor (Q)
# ---------------------------------------------------------------------------------

PLUS_TWO = timezone(timedelta(hours=2))
# Creation instants, some written in UTC and some in +02:00. B and B_LOCAL are the
# same instant: Work created then ties on time and is ordered by ID.
AT_A = to_ns(datetime(2026, 1, 2, 10, 30, tzinfo=PLUS_TWO))  # 08:30Z
AT_B = to_ns(datetime(2026, 1, 2, 9, 0, tzinfo=UTC))  # 09:00Z
AT_B_LOCAL = to_ns(datetime(2026, 1, 2, 11, 0, tzinfo=PLUS_TWO))  # 09:00Z
AT_C = to_ns(datetime(2026, 1, 2, 12, 0, tzinfo=PLUS_TWO))  # 10:00Z
AT_D = to_ns(datetime(2026, 1, 2, 11, 0, tzinfo=UTC))  # updates start here
AT_E = AT_D + seconds(3)  # wc's last update; updated_since boundary

CREATED_ASC = ["wa", "wb", "wd", "wc", "we"]
UPDATED_ASC = ["wa", "wb", "wc", "wd", "we"]

# (what, query, expected IDs in creation order) for each filter alone and combined.
QUERY_FILTERS: list[tuple[str, WorkQuery, list[str]]] = [
    ("no filter", WorkQuery(), CREATED_ASC),
    ("state ready", WorkQuery(states=frozenset({READY})), ["wa"]),
    ("states running|waiting", WorkQuery(states=frozenset({RUNNING, WAITING})), ["wb", "wc"]),
    ("states completed|failed", WorkQuery(states=frozenset({COMPLETED, FAILED})), ["wd", "we"]),
    ("scope s1", WorkQuery(scope_id="s1"), ["wa", "wd"]),
    ("scope s2", WorkQuery(scope_id="s2"), ["wb", "we"]),
    ("kind", WorkQuery(kind="conduit.beta"), ["wd", "wc"]),
    ("parent", WorkQuery(parent_id="wa"), ["wd", "wc"]),
    ("source of first key", WorkQuery(sources=frozenset({"github.acme"})), ["wa", "we"]),
    ("source from kind", WorkQuery(sources=frozenset({"conduit.alpha"})), ["wb"]),
    ("any of sources", WorkQuery(sources=frozenset({"gitlab.corp", "conduit.beta"})), ["wd", "wc"]),
    ("executor docker", WorkQuery(executor="docker"), ["wa"]),
    ("executor shell", WorkQuery(executor="shell"), ["wb"]),
    ("updated since (inclusive)", WorkQuery(updated_since=AT_E), ["wd", "wc", "we"]),
    ("updated since E+1ns", WorkQuery(updated_since=AT_E + 1), ["wd", "we"]),
    (
        "states and scope",
        WorkQuery(states=frozenset({READY, RUNNING}), scope_id="s1"),
        ["wa"],
    ),
    (
        "kind and source",
        WorkQuery(kind="conduit.alpha", sources=frozenset({"conduit.alpha"})),
        ["wb"],
    ),
]


def _query_fixture(store: Store, clock: FakeClock) -> None:
    """Five Works of mixed state, scope, kind, parent, source and executor:

    - wa conduit.alpha, s1, key github.acme: attempt 1 (no executor) failed, attempt 2
      pending on docker; ready.
    - wb conduit.alpha, s2, no key (source = kind): attempt on shell running.
    - wc conduit.beta, parent wa, keys gitlab.corp then github.acme: attempt (no
      executor) ended in terminal waiting; waiting.
    - wd conduit.beta, s1, parent wa: completed. we conduit.gamma, s2: failed.
    """
    assert AT_B == AT_B_LOCAL, "work queries: to_ns gives two instants for 09:00Z and 11:00+02"
    tx(store, lambda t: [t.put_scope(make_scope("s1")), t.put_scope(make_scope("s2"))])
    github, gitlab = key("1"), key("9", source="gitlab.corp")
    for when, work in [
        (AT_A, make_work("wa", kind="conduit.alpha", scope_id="s1", keys=[github])),
        (AT_B, make_work("wd", kind="conduit.beta", scope_id="s1", parent_id="wa")),
        (AT_B_LOCAL, make_work("wb", kind="conduit.alpha", scope_id="s2")),
        (AT_B + 1, make_work("wc", kind="conduit.beta", parent_id="wa", keys=[gitlab, key("2")])),
        (AT_C, make_work("we", kind="conduit.gamma", scope_id="s2", keys=[key("3")])),
    ]:
        clock.set(when)
        put_works(store, work)

    clock.set(AT_D)
    start_attempt(store, work_id="wa", execution_id="x-a1", create_work=False)
    clock.set(AT_D + seconds(1))

    def second_attempt(t: Tx) -> None:
        terminate(t, "x-a1", X_FAILED, READY)
        binding = Binding(name="docker", executor="docker")
        t.put_execution(make_execution("x-a2", "wa", 2, executor="docker", binding=binding))

    tx(store, second_attempt)
    clock.set(AT_D + seconds(2))
    start_attempt(store, work_id="wb", execution_id="x-b1", executor="shell", create_work=False)
    clock.set(AT_E)
    start_attempt(store, work_id="wc", execution_id="x-c1", create_work=False)
    tx(store, lambda t: park(t, "x-c1", terminal=True))
    clock.set(AT_E + seconds(1))
    update_work(store, "wd", state=RUNNING)

    def finish(t: Tx) -> None:  # one tx: wd and we tie on updated_at
        t.put_work(replace(t.work("wd"), state=COMPLETED))
        t.put_work(replace(t.work("we"), state=FAILED))

    clock.set(AT_E + seconds(2))
    tx(store, finish)


def _query(store: Store, query: WorkQuery) -> list[str]:
    return ids(tx(store, lambda t: t.query_works(query)))


def _check_query_filters(store: Store) -> None:
    for what, query, expected in QUERY_FILTERS:
        got = _query(store, replace(query, order=WorkOrder.CREATED_ASC))
        assert got == expected, f"work queries: filter {what} selected {got}, expected {expected}"


def _check_query_orders(store: Store) -> None:
    created = {w.id: w.created_at for w in tx(store, lambda t: t.works())}
    assert created["wb"] == created["wd"] == AT_B, (
        "work queries: Work created at 09:00Z and 11:00+02:00 have different created_at"
    )
    assert created["wc"] == AT_B + 1, "work queries: created_at lost nanoseconds"
    for order, expected in [
        (WorkOrder.CREATED_ASC, CREATED_ASC),
        (WorkOrder.CREATED_DESC, CREATED_ASC[::-1]),
        (WorkOrder.UPDATED_ASC, UPDATED_ASC),
        (WorkOrder.UPDATED_DESC, UPDATED_ASC[::-1]),
    ]:
        got = _query(store, WorkQuery(order=order))
        assert got == expected, f"work queries: order {order} gave {got}, expected {expected}"


def _walk_pages(store: Store, query: WorkQuery) -> list[str]:
    seen: list[str] = []
    page_query = query
    for _ in range(20):
        page = tx(store, lambda t, q=page_query: t.query_works(q))
        if not page:
            return seen
        assert len(page) <= query.limit, f"work queries: a page exceeded limit {query.limit}"
        seen += ids(page)
        page_query = replace(page_query, after=page_query.key_of(page[-1]))
    raise AssertionError(f"work queries: keyset paging never ended: {seen}")


def _check_query_paging(store: Store) -> None:
    for order in WorkOrder:
        full = _query(store, WorkQuery(order=order))
        for limit in (1, 2, 3):
            walked = _walk_pages(store, WorkQuery(order=order, limit=limit))
            assert walked == full, (
                f"work queries: paging {order} by {limit} walked {walked}, expected {full}"
            )
    inside_tie = [
        (WorkOrder.CREATED_ASC, WorkKey(AT_B, "wb"), ["wd", "wc", "we"]),
        (WorkOrder.CREATED_DESC, WorkKey(AT_B, "wd"), ["wb", "wa"]),
        (WorkOrder.UPDATED_DESC, WorkKey(AT_E + seconds(2), "we"), ["wd", "wc", "wb", "wa"]),
    ]
    for order, after, expected in inside_tie:
        got = _query(store, WorkQuery(order=order, after=after))
        assert got == expected, f"work queries: page {order} after {after} gave {got}"


def _nonzero(counts: Any) -> dict[str, int]:
    return {str(k): v for k, v in dict(counts).items() if v}


def _check_counts_and_facets(store: Store) -> None:
    for what, query, expected in QUERY_FILTERS:
        for paged in (
            query,
            replace(query, limit=1),
            replace(query, limit=1, after=WorkKey(0, "")),
        ):
            count = tx(store, lambda t, q=paged: t.count_works(q))
            assert count == len(expected), (
                f"work queries: count_works({what}) is {count}, expected {len(expected)}"
            )
        facets = tx(store, lambda t, q=query: t.work_facets(q))
        for dimension in ("state", "kind", "source", "scope", "executor"):
            total = sum(dict(getattr(facets, dimension)).values())
            assert total == len(expected), (
                f"work queries: {dimension} facets of {what} sum to {total}, "
                f"expected {len(expected)}"
            )
    facets = tx(store, lambda t: t.work_facets(WorkQuery()))
    actual = {
        "state": _nonzero(facets.state),
        "kind": _nonzero(facets.kind),
        "source": _nonzero(facets.source),
        "scope": _nonzero(facets.scope),
        "executor": _nonzero(facets.executor),
    }
    assert actual == {
        "state": {"ready": 1, "running": 1, "waiting": 1, "completed": 1, "failed": 1},
        "kind": {"conduit.alpha": 2, "conduit.beta": 2, "conduit.gamma": 1},
        "source": {"github.acme": 2, "conduit.alpha": 1, "gitlab.corp": 1, "conduit.beta": 1},
        "scope": {"s1": 2, "s2": 2, "": 1},
        "executor": {"docker": 1, "shell": 1, "": 3},
    }, f"work queries: facets of all Work are {actual}"


def _check_latest_executor_kept_by_storage(store: Store) -> None:
    executors = {w.id: w.latest_executor for w in tx(store, lambda t: t.works())}
    assert executors == {"wa": "docker", "wb": "shell", "wc": "", "wd": "", "we": ""}, (
        f"work queries: latest executors are {executors}"
    )
    forged = tx(store, lambda t: t.put_work(replace(t.work("wa"), latest_executor="forged")))
    assert forged.latest_executor == "docker", "work queries: a writer's latest_executor was kept"
    forged_x = tx(store, lambda t: t.put_execution(replace(t.execution("x-a2"), executor="")))
    assert forged_x.executor == "docker", "work queries: an update leaving executor empty lost it"
    assert get_work(store, "wa").latest_executor == "docker", (
        "work queries: an attempt update emptied the Work's latest executor"
    )
    assert _query(store, WorkQuery(executor="forged")) == [], "work queries: forged executor"


def _check_set_execution_executor(store: Store) -> None:
    latest = tx(store, lambda t: t.set_execution_executor("x-c1", "k8s"))
    assert latest.executor == "k8s", "work queries: set_execution_executor did not set it"
    assert get_work(store, "wc").latest_executor == "k8s", (
        "work queries: set_execution_executor on the latest attempt left Work.latest_executor"
    )
    again = tx(store, lambda t: t.set_execution_executor("x-c1", "k8s"))
    assert again.executor == "k8s", "work queries: a same-value set_execution_executor failed"
    fails(
        store,
        Conflict,
        lambda t: t.set_execution_executor("x-c1", "shell"),
        "work queries: set_execution_executor rewrite",
    )
    fails(
        store,
        Invalid,
        lambda t: t.set_execution_executor("x-a1", ""),
        "work queries: empty set_execution_executor",
    )
    fails(
        store,
        NotFound,
        lambda t: t.set_execution_executor("ghost", "shell"),
        "work queries: set_execution_executor of an unknown attempt",
    )
    older = tx(store, lambda t: t.set_execution_executor("x-a1", "shell"))
    assert older.executor == "shell", "work queries: backfill of an older attempt failed"
    assert get_work(store, "wa").latest_executor == "docker", (
        "work queries: set_execution_executor on an older attempt changed Work.latest_executor"
    )
    assert _query(store, WorkQuery(executor="k8s")) == ["wc"], "work queries: executor k8s"
    assert _query(store, WorkQuery(executor="shell")) == ["wb"], "work queries: executor shell"


def test_work_queries_select_order_page_and_count(store: Store, clock: FakeClock) -> None:
    """Named case work_queries_select_order_page_and_count (Q-01..Q-11): each filter
    alone and combined on a mixed fixture, both orders by creation and update time
    with ties across time zones broken by ID, keyset paging in both directions,
    count_works and work_facets summing to the count, the latest attempt's executor
    kept by storage and the write-once set_execution_executor."""
    _query_fixture(store, clock)
    _check_query_filters(store)
    _check_query_orders(store)
    _check_query_paging(store)
    _check_counts_and_facets(store)
    _check_latest_executor_kept_by_storage(store)
    _check_set_execution_executor(store)


def test_query_filters(store: Store, clock: FakeClock) -> None:
    """Q-01, Q-02: each WorkQuery filter alone, and combined with AND."""
    _query_fixture(store, clock)
    _check_query_filters(store)


def test_query_orders_across_time_zones(store: Store, clock: FakeClock) -> None:
    """Q-03, Q-04: creation/update order to the nanosecond, ties by ID, both
    directions; UTC and +02:00 inputs denote the same instant."""
    _query_fixture(store, clock)
    _check_query_orders(store)


def test_query_keyset_paging(store: Store, clock: FakeClock) -> None:
    """Q-05: keyset pages after a WorkKey walk every match once, in every order,
    including across time ties."""
    _query_fixture(store, clock)
    _check_query_paging(store)


def test_query_counts_and_facets(store: Store, clock: FakeClock) -> None:
    """Q-06, Q-07 (resolution 12): count_works ignores paging; each facet dimension
    sums to the count."""
    _query_fixture(store, clock)
    _check_counts_and_facets(store)


def test_latest_executor_kept_by_storage(store: Store, clock: FakeClock) -> None:
    """Q-08, Q-11: storage keeps Work.latest_executor from the newest attempt,
    ignores a writer's value, and an update leaving executor empty keeps it."""
    _query_fixture(store, clock)
    _check_latest_executor_kept_by_storage(store)


def test_set_execution_executor_write_once(store: Store, clock: FakeClock) -> None:
    """Q-09, Q-10: set_execution_executor sets an empty executor once (same value
    no-op, other Conflict, empty Invalid) and updates Work.latest_executor only for
    the latest attempt."""
    _query_fixture(store, clock)
    _check_set_execution_executor(store)


def test_new_attempt_sets_latest_executor(store: Store, clock: FakeClock) -> None:
    """Q-08 (lead rule): registering an attempt sets its Work's latest_executor
    without bumping the Work's revision."""
    (w,) = put_works(store, make_work("w1"))
    tx(store, lambda t: t.put_execution(make_execution("x1", executor="shell")))
    after = get_work(store, "w1")
    assert after.latest_executor == "shell", "Q-08: a new attempt did not set latest_executor"
    assert after.revision == w.revision, "Q-08: registering an attempt bumped the Work revision"
    tx(store, lambda t: terminate(t, "x1", X_CANCELLED, None))
    tx(store, lambda t: t.put_execution(make_execution("x2", "w1", 2)))
    assert get_work(store, "w1").latest_executor == "", (
        "Q-08: latest_executor is not the newest attempt's"
    )


def test_query_matches_select_works(store: Store, clock: FakeClock) -> None:
    """Q-13: the backend's query_works, count_works and work_facets agree with the
    reference storage.select_works/select_facets over works()."""
    _query_fixture(store, clock)
    works = tx(store, lambda t: t.works())
    queries = [replace(q, order=order) for _, q, _ in QUERY_FILTERS for order in WorkOrder]
    queries += [WorkQuery(order=o, limit=2, after=WorkKey(AT_B, "wb")) for o in WorkOrder]
    for query in queries:
        reference = ids(storage.select_works(query, works))
        got = _query(store, query)
        assert got == reference, f"Q-13: query_works({query}) = {got}, reference {reference}"
        facets = tx(store, lambda t, q=query: t.work_facets(q))
        assert facets == storage.select_facets(query, works), f"Q-13: work_facets({query})"

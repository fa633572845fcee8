"""The reads a Work's causation page walks with (EV-06's links, EN-04's Work Events):
``find_events(ids=...)``, ``find_events(causes=...)`` and ``count_events``. Each is a
bounded index read, so the page can follow causation a level per query."""

from __future__ import annotations

from storage import Invalid, Store, Tx, view
from storage.meaning.events import IDS_MAX

from ..support import FakeClock, ids, make_event, make_work, put_works, raises, tx


def _forest(store: Store) -> None:
    """Two causation trees touching Work w1 (seq in brackets):

    root[1] -> a[2] (w1) -> a1[4] (w2) -> a11[6]
                        -> a2[5] (routed to w1)
    other[3] -> b[7] (w1)
    """
    put_works(store, make_work("w1"), make_work("w2"))

    def accept(t: Tx) -> None:
        t.accept_event(make_event("root"))
        t.accept_event(make_event("a", work_id="w1", causation_id="root"))
        t.accept_event(make_event("other"))
        t.accept_event(make_event("a1", work_id="w2", causation_id="a"))
        t.accept_event(make_event("a2", causation_id="a"))
        t.mark_routed("a2", "w1", "routed")
        t.accept_event(make_event("a11", causation_id="a1"))
        t.accept_event(make_event("b", work_id="w1", causation_id="other"))

    tx(store, accept)


def test_find_events_by_ids_and_by_causes(store: Store, clock: FakeClock) -> None:
    """``ids`` selects the listed Events that exist (once each, unknown absent);
    ``causes`` the Events any listed Event caused; both in acceptance order, with the
    other filters, cursors, order and limit of any scan."""
    _forest(store)

    def read(t: Tx) -> dict[str, list[str]]:
        root, a1 = t.event("root").sequence, t.event("a1").sequence
        return {
            "ids": ids(t.find_events(ids=["b", "ghost", "root", "b"])),
            "ids newest": ids(t.find_events(ids=["b", "root", "a"], newest_first=True)),
            "ids after": ids(t.find_events(ids=["b", "root", "a"], after=root, limit=1)),
            "no ids": ids(t.find_events(ids=[])),
            "causes": ids(t.find_events(causes=["a", "other"])),
            "causes of w1": ids(t.find_events(causes=["a", "other"], work_id="w1")),
            "causes after": ids(t.find_events(causes=["a", "other"], after=a1, limit=1)),
            "causes and ids": ids(t.find_events(causes=["a"], ids=["a1", "b"])),
            "nothing caused": ids(t.find_events(causes=["a11", "ghost"])),
        }

    want = {
        "ids": ["root", "b"],
        "ids newest": ["b", "a", "root"],
        "ids after": ["a"],
        "no ids": [],
        "causes": ["a1", "a2", "b"],
        "causes of w1": ["a2", "b"],
        "causes after": ["a2"],
        "causes and ids": ["a1"],
        "nothing caused": [],
    }
    assert tx(store, read) == want
    assert view(store, None, read) == want


def test_count_events_counts_what_find_events_selects(store: Store, clock: FakeClock) -> None:
    """``count_events`` is the length of the unlimited ``find_events`` with the same
    filters: a Work's Events (named or routed) after a cursor, the Events some caused."""
    _forest(store)

    def read(t: Tx) -> dict[str, tuple[int, int]]:
        a, b = t.event("a").sequence, t.event("b").sequence  # engines number apart
        asks: dict[str, dict[str, object]] = {
            "w1": {"work_id": "w1"},
            "w1 after a": {"work_id": "w1", "after": a},
            "w1 before b": {"work_id": "w1", "before": b},
            "caused by a": {"causes": ["a"]},
            "caused by a in w1": {"causes": ["a"], "work_id": "w1"},
            "all": {},
        }
        return {
            name: (t.count_events(**ask), len(t.find_events(**ask)))  # type: ignore[arg-type]
            for name, ask in asks.items()
        }

    counted = tx(store, read)
    assert counted == {
        "w1": (3, 3),
        "w1 after a": (2, 2),
        "w1 before b": (2, 2),
        "caused by a": (2, 2),
        "caused by a in w1": (1, 1),
        "all": (7, 7),
    }


def test_a_transaction_reads_its_own_events_by_id_and_cause(store: Store, clock: FakeClock) -> None:
    """Events accepted earlier in the same transaction are selected and counted."""

    def accept_and_read(t: Tx) -> tuple[list[str], list[str], int]:
        t.accept_event(make_event("r"))
        t.accept_event(make_event("c", causation_id="r"))
        return (
            ids(t.find_events(ids=["r"])),
            ids(t.find_events(causes=["r"])),
            t.count_events(causes=["r"]),
        )

    assert tx(store, accept_and_read) == (["r"], ["c"], 1)


def test_id_lists_are_refused_when_malformed(store: Store, clock: FakeClock) -> None:
    """A bare string, an empty ID, more than IDS_MAX IDs or a negative cursor is
    Invalid; exactly IDS_MAX is fine."""
    _forest(store)
    many = [f"e{n}" for n in range(IDS_MAX)]

    def read(t: Tx) -> None:
        raises(Invalid, lambda: t.find_events(ids="root"), "a bare string of ids")
        raises(Invalid, lambda: t.find_events(causes="root"), "a bare string of causes")
        raises(Invalid, lambda: t.find_events(causes=[""]), "an empty cause")
        raises(Invalid, lambda: t.find_events(ids=[*many, "one more"]), "too many ids")
        raises(Invalid, lambda: t.count_events(causes=[*many, "x"]), "too many causes")
        raises(Invalid, lambda: t.count_events(after=-1), "a negative cursor")
        assert t.find_events(ids=many) == []
        assert t.count_events(causes=many) == 0

    tx(store, read)

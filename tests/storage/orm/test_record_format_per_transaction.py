"""The record format is checked in every write transaction, not only at open (issue
20): a long-running older process must stop writing (it would drop the fields it does
not know) as soon as a newer binary raises ``record_format``. Both engines."""

from __future__ import annotations

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from storage import RECORD_FORMAT, Guard, RecordsNewer, view
from storage.orm import OrmStore

from ..support import FakeClock, make_work

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])


def raise_record_format(to: int) -> None:
    """What a newer binary's open does, from another connection."""
    with connections["default"].cursor() as cursor:
        cursor.execute("UPDATE conduit_meta SET value = %s WHERE key = 'record_format'", [str(to)])


def test_an_open_store_stops_writing_once_a_newer_format_is_recorded() -> None:
    store = OrmStore(clock=FakeClock())
    store.transact(Guard(), lambda t: t.put_work(make_work("w1")))

    raise_record_format(RECORD_FORMAT + 1)

    with pytest.raises(RecordsNewer, match=f"record format {RECORD_FORMAT + 1}") as caught:
        store.transact(Guard(), lambda t: t.put_work(make_work("w2")))
    assert caught.value.state_check == "records_newer"
    # Nothing was written, and reading stays possible.
    assert view(store, None, lambda t: [w.id for w in t.works()]) == ["w1"]
    store.close()


def test_the_check_costs_no_extra_statement() -> None:
    store = OrmStore(clock=FakeClock())
    store.transact(Guard(), lambda t: t.put_work(make_work("w1")))
    with CaptureQueriesContext(connections["default"]) as captured:
        store.transact(Guard(), lambda t: None)  # a transaction that writes nothing
    reads = [q["sql"] for q in captured.captured_queries if "conduit_meta" in q["sql"]]
    # One read of the metadata, as before: the clock row, with the format beside it.
    assert len(reads) == 1, reads
    assert "record_format" in reads[0]
    assert "clock" in reads[0]
    store.close()

"""A stored run record at revision 0 is corrupt (issue 20): revisions start at 1 and
are never zero, so loading it is ``Corrupt`` rather than a record whose every save
then meets a misleading ``Conflict``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from storage import Corrupt, Store, view
from storage.ops.run_record_sessions import RunStore
from storage.run_records import RunQuery

from ..support.run_records import format1_json, open_run_store, ordinary_record, plant, row


@pytest.fixture
def runs(request: pytest.FixtureRequest, store: Store, tmp_path: Path) -> Iterator[RunStore]:
    opened = open_run_store(request.node.callspec.params["store"], store)
    yield opened
    opened.close()


def test_a_row_at_revision_zero_is_refused_on_load_and_save_as_corrupt(
    runs: RunStore, store: Store
) -> None:
    plant(store, row("zero", format1_json("zero", 0), revision=0))

    with runs.acquire("zero") as session:
        with pytest.raises(Corrupt, match="revision 0"):
            session.load()
        with pytest.raises(Corrupt, match="revision 0"):
            session.save(ordinary_record("zero"), 0)
    with pytest.raises(Corrupt, match="revision 0"):
        view(store, None, lambda tx: tx.run_record("zero"))
    listed = view(store, None, lambda tx: tx.run_records(RunQuery()))
    assert [(s.record.run_id, "revision 0" in s.error) for s in listed] == [("zero", True)]

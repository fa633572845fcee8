"""Active Waits in bulk for the runtime-page cases and their plans."""

from __future__ import annotations

from storage import (
    Tx,
    seconds,
)
from tests.storage.support import (
    make_execution,
    make_wait,
    make_work,
    park,
)


def add_waits(t: Tx, wait_ids: list[str]) -> None:
    """One Work, running attempt and active Wait per ID, all created at ``t.now``."""
    for wait_id in wait_ids:
        work_id, x_id = f"w-{wait_id}", f"x-{wait_id}"
        t.put_work(make_work(work_id))
        t.put_execution(make_execution(x_id, work_id))
        t.claim(x_id, "runner", t.now + seconds(3600))
        park(t, x_id, make_wait(wait_id, work_id, x_id))

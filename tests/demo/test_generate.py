import io

import pytest
from django.core.management import call_command

from console.stores import get_artifacts, get_store
from storage import WorkQuery, view
from tests.demo.invariants import problems
from tests.demo.support import census

db = pytest.mark.django_db(transaction=True, databases=["default", "view"])


@pytest.mark.slow
@db
def test_generate_writes_the_requested_work_in_every_state():
    out = io.StringIO()
    call_command("generate", works=2000, seed=5, batch=500, no_progress=True, stdout=out)

    store = get_store()
    assert view(store, None, lambda tx: tx.count_works(WorkQuery())) == 2000
    assert "generate: 2000 Work" in out.getvalue()
    assert "Work/s" in out.getvalue()
    seen = census(store)
    assert set(seen.works) == {"ready", "running", "waiting", "completed", "failed", "cancelled"}
    assert set(seen.attempts) == {
        "pending",
        "running",
        "parked",
        "waiting",
        "completed",
        "failed",
        "handoff",
        "cancelled",
    }
    assert set(seen.waits) == {"active", "woken"}
    assert set(seen.timers) == {"retry", "timeout"}
    assert set(seen.dispositions) == {"routed", "dropped", "unmatched"}
    assert seen.children > 100
    assert seen.derived > 100
    assert seen.unscoped == 0
    assert problems(store) == []


@db
def test_generated_history_is_spread_over_past_days_oldest_first():
    call_command(
        "generate", works=300, seed=2, batch=50, days=10, no_progress=True, stdout=io.StringIO()
    )

    def times(tx):
        return sorted({w.created_at for w in tx.works()})

    created = view(get_store(), None, times)
    assert len(created) >= 6  # one instant per transaction
    day = 86_400 * 10**9
    assert created[-1] - created[0] > 7 * day


@db
def test_generated_artifacts_open():
    call_command("generate", works=200, seed=4, batch=100, no_progress=True, stdout=io.StringIO())

    refs = view(get_store(), None, lambda tx: [r for x in tx.executions() for r in x.artifacts])
    assert refs
    with get_artifacts().open(refs[0]) as f:
        assert len(f.read()) == refs[0].size

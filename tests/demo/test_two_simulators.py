import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from storage import Conflict, Guard, Invalid, view
from storage.default import default_store
from storage.ops.control import cancel_work
from tests.demo.invariants import problems
from tests.demo.support import census

BASE_DIR = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.multiprocess
@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_two_simulators_and_an_operator_cancelling_leave_a_consistent_store(tmp_path):
    # The children inherit CONDUIT_TESTING and the test database's name (exported by
    # conduit.settings: CONDUIT_TEST_SQLITE_PATH, or CONDUIT_TEST_DATABASE with
    # DATABASE_URL on PostgreSQL), so they open this test's database, created by now.
    env = os.environ | {
        "CONDUIT_ARTIFACT_DIR": str(tmp_path / "artifacts"),
        "CONDUIT_ROUTED_STATE_DIR": str(tmp_path / "routed"),
    }
    simulators = [
        subprocess.Popen(
            [sys.executable, "manage.py", "simulate", "--once", "60", "--seed", str(seed)],
            cwd=BASE_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (11, 12)
    ]
    store = default_store()
    rng = random.Random(5)  # noqa: S311 - picks a Work to cancel
    cancelled = 0
    deadline = time.monotonic() + 300
    # The operator: cancel live Work, at random, for as long as the simulators run.
    while any(p.poll() is None for p in simulators) and time.monotonic() < deadline:
        live = view(store, None, lambda tx: [w.id for w in tx.live_works()])
        if live:
            target = rng.choice(live)
            try:
                store.transact(Guard(), lambda tx, w=target: cancel_work(tx, w))
                cancelled += 1
            except (Invalid, Conflict):
                pass  # it finished meanwhile: the refusal is the right answer
        time.sleep(0.15)

    outputs = [p.communicate(timeout=60) for p in simulators]
    for p, (out, err) in zip(simulators, outputs, strict=True):
        assert p.returncode == 0, err[-3000:]
        assert "simulate: 60 ticks" in out
    owners = {line.split(" as ")[1].split(":")[0] for line, _ in outputs}
    assert len(owners) == 2
    assert cancelled >= 3
    seen = census(store)
    assert seen.works["cancelled"] >= 3
    assert seen.works["completed"] > 0
    assert problems(store) == []

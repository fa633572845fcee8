"""Two OS processes admitting the same keys at once on the real database: every key
yields one receipt, accepted once and replayed to the other process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage.orm import OrmStore
from storage.routed.codec import marshal_canonical
from storage.routed.store import RoutedStore

from ..support.proc import finish, release, spawn
from .support import request, setup_deployment

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", "view"]),
    pytest.mark.multiprocess,
]

ADMITTER = """
from storage.routed.codec import unmarshal_strict
from storage.routed.records import InvocationRequest
from storage.routed.store import RoutedStore
ready, go, generation = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
requests = [unmarshal_strict(InvocationRequest, text) for text in json.loads(sys.argv[4])]
routed = RoutedStore(OrmStore())
start_line(ready, go)
out = []
for req in requests:
    admission = routed.transact(lambda r, q=req: r.admit_invocation(q, generation))
    out.append([req.idempotency_key, admission.outcome.name, admission.receipt.invocation_id])
print(json.dumps(out))
"""


def test_two_processes_admitting_one_key_get_one_receipt(tmp_path: Path) -> None:
    routed = RoutedStore(OrmStore())
    dep = setup_deployment(routed)
    keys = [f"k{i}" for i in range(25)]
    texts = json.dumps(
        [marshal_canonical(request(dep.record.deployment_id, k)).decode() for k in keys]
    )
    go = tmp_path / "go"
    ready = [tmp_path / "ready-a", tmp_path / "ready-b"]
    children = [spawn(ADMITTER, str(r), str(go), str(dep.generation), texts) for r in ready]
    release(ready, go)
    results = [json.loads(finish(c)) for c in children]

    by_key: dict[str, list[tuple[str, str]]] = {}
    for result in results:
        for key, outcome, invocation in result:
            by_key.setdefault(key, []).append((outcome, invocation))
    for key in keys:
        outcomes = sorted(o for o, _ in by_key[key])
        assert outcomes == ["ACCEPTED", "IDEMPOTENT_REPLAY"], key
        assert len({inv for _, inv in by_key[key]}) == 1, key
    receipts = routed.view(lambda r: r.list_invocations())
    assert len(receipts) == len(keys)
    assert len(routed.view(lambda r: r.list_workflows())) == len(keys)

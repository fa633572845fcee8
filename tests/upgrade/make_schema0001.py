"""Write the history of ``schema0001_factories.json.gz`` with the OLD checkout's code.

Run from a checkout whose only storage migration is 0001 (it has no simulator yet),
with that checkout's own console factories, which write through its storage API:
``python <this file>`` there, after ``manage.py migrate``, with CONDUIT_DATA_DIR set.
Kept beside the fixture so that how it was made can be read; the fixture is history.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conduit.settings")

import django

django.setup()

from storage import ExecutionState, WorkState  # noqa: E402
from tests.console import factories as f  # noqa: E402  (the old checkout's)

KINDS = ["billing.charge", "sync.crm", "mail.send", "report.build"]
MESSAGES = [
    "card declined for customer 4242",
    "timeout after 30s talking to 10.0.0.7",
    "HTTP 503 from upstream",
    "",
]
for name in ("acme", "globex"):
    f.scope(name, name=name.title())
    f.scope(f"{name}/eu", parent=name, name="EU")
for n in range(160):
    work_id = f"w-{n:04d}"
    kw = {
        "kind": KINDS[n % 4],
        "scope_id": ["acme", "acme/eu", "globex", "globex/eu", ""][n % 5],
        "keys": [("order", f"o-{n}")] if n % 3 else [],
    }
    shape = n % 8
    if shape == 0:
        f.completed(work_id, **kw)
    elif shape == 3:
        f.running(work_id, **kw)
    elif shape == 4:
        f.parked(work_id, **kw)
    else:
        f.work(work_id, **kw)
    if shape in (1, 2, 5):  # failed attempts, the Work ready again: exhausted, or in backoff
        for _ in range(2 if shape == 2 else 1):
            x = f.start(work_id)
            message = MESSAGES[(n // 8) % 4]
            f.finish(x.id, state=ExecutionState.FAILED, work_state=WorkState.READY, message=message)
    if shape == 5:
        f.timer(f"t-{n:04d}", work_id=work_id, fire_in=600)
    elif shape == 6:
        f.pending(work_id)
    f.event(f"e-{n:04d}", source="shop", type="order.placed", work_id=work_id)
for n in range(20):
    f.event(f"u-{n:04d}", source="github", type="push.received")

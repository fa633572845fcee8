"""Seed the deploy topology's database: ``python -m tests.deploy.seed KIND N``.

Run as a child process with the hosts' production environment (``conduit.settings``,
the topology's PostgreSQL), so the Work is written through the storage API exactly as
a runtime would commit it. Creates ``N`` ready Work of ``KIND`` (IDs ``KIND-00000``...)
in batches of 500 per transaction; the simulated runtime never claims them (they have
no attempt), so they stay until an operator acts on them.
"""

from __future__ import annotations

import os
import sys


def main(kind: str, count: int) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conduit.settings")
    import django

    django.setup()
    from storage import Guard, Work
    from storage.default import default_store

    ids = [f"{kind}-{n:05d}" for n in range(count)]
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        default_store().transact(
            Guard(), lambda tx, b=batch: [tx.put_work(Work(id=i, kind=kind)) for i in b]
        )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

"""Fencing a restored database, and recording retention expiry before a backup.

A restored database holds the leases that were running when the bundle was taken; the
runtimes that held them belong to the original. ``fence_leases`` ends every one in one
control-plane transaction before anything can start on the restored copy, so a later
claim recovers each attempt with a higher epoch (BK-06).

The restore runs that transaction in a child process, ``manage.py backup fence-leases
<database>`` (``fence_in_child``): Django's aliases in the restoring process name its
own configured database, and the child opens exactly the restored one through the
ordinary ``OrmStore`` (version checks included) without touching this process's
connections. The child learns the database through storage's one variable,
``storage.pg_url.DATABASE_OVERRIDE``, which the project's settings read; the variable
travels in the environment, never on the command line, because a PostgreSQL URL
carries a password. ``fence_here`` is the child's side: it refuses unless its settings
name exactly the database it was asked to fence.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

from ..api import Tx
from ..pg_url import DATABASE_OVERRIDE
from ..records import ExecutionState, Guard
from .bundle import EXPIRED_PREFIX, RETENTION_NAMESPACE, BackupError
from .children import child_environment

_FENCE_TIMEOUT = 300  # seconds; one transaction over the live attempts


def mark_retention_expired(tx: Tx, execution_id: str) -> None:
    """Record that the retention of ``execution_id``'s artifacts expired, before their
    content is deleted, so backups omit them (and list the omission) instead of
    failing. Idempotent; the value is Guard.now in nanoseconds."""
    tx.execution(execution_id)  # NotFound for an unknown attempt
    tx.kv_put(RETENTION_NAMESPACE, EXPIRED_PREFIX + execution_id, str(tx.now).encode())


def fence_leases(tx: Tx) -> list[str]:
    """End every running lease now (``revoke_lease``): the old holders are fenced, a
    later claim recovers each attempt with a higher epoch. Run on a restored database
    before any executor can commit (BK-06). Returns the attempts fenced."""
    fenced = []
    for x in tx.live_executions():
        if x.state is ExecutionState.RUNNING and x.owner:
            tx.revoke_lease(x.id)
            fenced.append(x.id)
    return fenced


def fence_in_child(override: str, database: str) -> list[str]:
    """Fence every lease of the restored ``database`` (a file path or a database name,
    for the child's own check) from a child ``manage.py`` whose settings name it
    through ``DATABASE_OVERRIDE=override``; returns the fenced attempts."""
    from django.conf import settings

    env = child_environment({DATABASE_OVERRIDE: override})
    argv = [sys.executable, str(settings.STORAGE_MANAGE_PY), "backup", "--skip-checks"]
    # Fixed argv of our own interpreter and manage.py: no shell, no user input as code.
    done = subprocess.run(  # noqa: S603
        [*argv, "fence-leases", database],
        env=env,
        capture_output=True,
        text=True,
        timeout=_FENCE_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise BackupError(
            f"fencing the restored leases failed (exit {done.returncode}): "
            f"{done.stderr.strip() or done.stdout.strip()}"
        )
    fenced: list[str] = json.loads(done.stdout.strip().splitlines()[-1])["fenced"]
    return fenced


def fence_here(database: str, own: str, same: Callable[[str, str], bool]) -> str:
    """The child's side: fence every lease of this process's database ``own`` in one
    transaction, refused unless ``same(database, own)``. Returns the JSON line
    ``fence_in_child`` reads."""
    from ..orm import OrmStore

    if not same(database, own):
        raise BackupError(
            f"fence-leases fences {database}, but this process's database is "
            f"{own}; it is run by `backup restore`"
        )
    store = OrmStore()
    try:
        fenced = store.transact(Guard(), fence_leases)
    finally:
        store.close()
    return json.dumps({"fenced": fenced})

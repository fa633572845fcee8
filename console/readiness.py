"""/readyz: can this console host serve operators now? For a load balancer or an
orchestrator deciding where to send requests; /healthz (console.misc) stays liveness
and never touches the database.

Each check names what it proves and, when it fails, why:

- ``database reachable``: a read on the "view" alias (a connection opened and a
  statement answered: the server is up, the file can be opened).
- ``database writable``: on the "default" alias, a transaction holding one write
  statement that matches no row, always rolled back. SQLite refuses it on a read-only
  file, folder or mount; PostgreSQL in a read-only transaction or on a standby. It
  changes nothing, so a probe every second costs a lock taken and let go. On SQLite
  that lock is the writers' lock: behind a long write the probe waits, as any write
  would, up to the 30 s busy timeout (give the probe a timeout of its own).
- ``disk space`` (SQLite only): the filesystem holding the database has at least
  ``READY_MIN_FREE_MB``. A full disk refuses writes only once a page must be added,
  which a rolled-back statement never needs; the space is the honest check. A
  PostgreSQL server's disk is not visible from here (its refusals are 503 pages).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.contrib.sessions.models import Session
from django.db import DatabaseError, connections, transaction
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

MiB = 1024 * 1024


def _reachable() -> str:
    with connections["view"].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return "ok"


def _writable() -> str:
    table = connections["default"].ops.quote_name(Session._meta.db_table)
    with transaction.atomic(using="default"):
        with connections["default"].cursor() as cursor:
            # No row has a NULL key: the statement writes nothing, but asks for writing.
            # The table name is Django's own model's, quoted (S608: no user input).
            sql = f"UPDATE {table} SET expire_date = expire_date WHERE session_key IS NULL"  # noqa: S608
            cursor.execute(sql)
        transaction.set_rollback(True, using="default")
    return "ok"


def _disk_space() -> str:
    folder = Path(connections["default"].settings_dict["NAME"]).parent
    free = shutil.disk_usage(folder).free
    needed = settings.READY_MIN_FREE_MB * MiB
    if free < needed:
        raise OSError(
            f"{free / MiB:.1f} MiB free under {folder}, below READY_MIN_FREE_MB "
            f"({settings.READY_MIN_FREE_MB} MiB)"
        )
    return f"ok ({free / MiB:,.0f} MiB free)"


def checks() -> list[tuple[str, Callable[[], str]]]:
    found = [("database reachable", _reachable), ("database writable", _writable)]
    if connections["default"].vendor == "sqlite":
        found.append(("disk space", _disk_space))
    return found


@never_cache
@require_GET
def readyz(request: HttpRequest) -> HttpResponse:
    """200 "ready" with every check's line, or 503 naming the checks that failed."""
    lines, ready = [], True
    for name, check in checks():
        try:
            lines.append(f"{name}: {check()}")
        except (DatabaseError, OSError) as exc:
            ready = False
            lines.append(f"{name}: FAILED: {exc}")
    head = "ready" if ready else "not ready"
    return HttpResponse(
        "\n".join([head, *lines]) + "\n",
        content_type="text/plain; charset=utf-8",
        status=200 if ready else 503,
    )

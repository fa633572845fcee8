"""PostgreSQL tools outside the transaction path: a dump in one snapshot, and its restore.

``backup create`` on PostgreSQL calls ``pg_dump_with`` (or ``pg_dump_snapshot``) where
it snapshots the SQLite file, reading the artifact references in the same snapshot;
``restore`` calls ``pg_restore_dump``. The artifact manifest flow and the lease fencing
after a restore are the backup module's, the same on both engines.

The password reaches ``pg_dump`` through its environment (``PGPASSWORD``), never its
command line, which any local user can read in the process table.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import connections, transaction

from .api import Tx
from .clock import wall_clock
from .core import TxScope
from .errors import Unavailable

# libpq connection options a DATABASE_URL may carry, as the environment variables the
# command-line tools read.
_ENV_FOR_OPTION = {
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY",
    "connect_timeout": "PGCONNECT_TIMEOUT",
    "application_name": "PGAPPNAME",
    "target_session_attrs": "PGTARGETSESSIONATTRS",
}

# A dump of a large database may take a while; a stuck server should not hang a backup
# forever.
TIMEOUT_SECONDS = 6 * 3600


def pg_tool(name: str) -> str:
    """The path of a PostgreSQL client tool (pg_dump, pg_restore).

    The newest Debian versioned directory first: pg_dump refuses a server newer than
    itself, and Debian's /usr/bin wrapper may pick an older installed version.
    ``CONDUIT_PG_BINDIR`` overrides both.
    """
    override = os.environ.get("CONDUIT_PG_BINDIR")
    if override:
        candidates = [Path(override) / name]
    else:
        versioned = Path("/usr/lib/postgresql").glob(f"*/bin/{name}")
        candidates = sorted(versioned, key=lambda p: _major(p.parent.parent.name), reverse=True)
        on_path = shutil.which(name)
        candidates += [Path(on_path)] if on_path else []
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return str(candidate)
    where = f"in CONDUIT_PG_BINDIR={override}" if override else "(install postgresql-client)"
    raise Unavailable(f"{name} not found {where}")


def _major(version: str) -> int:
    return int(version) if version.isdigit() else -1


def _libpq_env(using: str, dbname: str | None = None) -> dict[str, str]:
    """The environment that points libpq tools at the database behind ``using``."""
    conn = connections[using]
    if conn.vendor != "postgresql":
        raise Unavailable(f"database alias {using!r} is {conn.vendor}, not PostgreSQL")
    s: dict[str, Any] = conn.settings_dict
    env = dict(os.environ)
    # Start from a clean slate: a stray PGSERVICE or PGHOST must not redirect the dump.
    for key in [k for k in env if k.startswith("PG")]:
        del env[key]
    fields = {
        "PGDATABASE": dbname or s["NAME"],
        "PGUSER": s["USER"],
        "PGPASSWORD": s["PASSWORD"],
        "PGHOST": s["HOST"],
        "PGPORT": str(s["PORT"] or ""),
    }
    options = s.get("OPTIONS", {})
    fields |= {var: str(options[opt]) for opt, var in _ENV_FOR_OPTION.items() if opt in options}
    env |= {k: v for k, v in fields.items() if v}
    return env


def _run(argv: list[str], env: dict[str, str], what: str) -> None:
    try:
        result = subprocess.run(  # noqa: S603 - fixed argv, no shell
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"{what} failed: {exc}") from exc
    if result.returncode != 0:
        raise Unavailable(f"{what} failed (exit {result.returncode}): {result.stderr.strip()}")


def pg_dump_snapshot(dest: Path, *, using: str = "view") -> None:
    """Dump the whole database behind ``using`` to ``dest`` (pg_dump custom format),
    taken in one snapshot; see ``pg_dump_with``."""
    pg_dump_with(dest, lambda tx: None, using=using)


def pg_dump_with[T](dest: Path, read: Callable[[Tx], T], *, using: str = "view") -> T:
    """Dump the database to ``dest`` and run ``read`` in the very snapshot dumped.

    One snapshot: a REPEATABLE READ READ ONLY transaction on ``using`` (the View alias)
    exports its snapshot (``pg_export_snapshot``), ``read`` runs on a read-only Tx in
    it (a backup reads the artifact references there), and ``pg_dump --snapshot``
    dumps exactly that state while the transaction stays open. The dump is the state
    after some commit and before the next, even while writers go on: storage commits
    are atomic, so it holds whole transactions only. No writers' lock is taken, so a
    backup never stalls the runtime (only schema changes wait for it).

    ``dest`` appears complete or not at all: the dump goes to a temporary file beside
    it, is fsynced, then renamed into place. Raises ``Unavailable`` when pg_dump is
    missing or fails, and whatever ``read`` raises (then nothing is written).
    """
    # Imported here: the ORM backend needs Django's apps loaded.
    from .orm import OrmTx, translate_errors

    dest = Path(dest)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    env = _libpq_env(using)
    try:
        with translate_errors(), transaction.atomic(using=using):
            with connections[using].cursor() as cursor:
                # The first statement: it takes the transaction's snapshot and names it.
                cursor.execute("SELECT pg_export_snapshot()")
                snapshot = str(cursor.fetchone()[0])
            tx = OrmTx(wall_clock(), alias=using, read_only=True)
            try:
                with TxScope():
                    result = read(tx)
            finally:
                tx.close()
            argv = [pg_tool("pg_dump"), "--format=custom", "--no-password"]
            _run([*argv, f"--snapshot={snapshot}", f"--file={tmp}"], env, "pg_dump")
        _fsync(tmp)
        os.replace(tmp, dest)
        _fsync(dest.parent)
        return result
    finally:
        tmp.unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pg_restore_dump(src: Path, *, using: str = "default", dbname: str | None = None) -> None:
    """Restore a ``pg_dump_snapshot`` file into the database behind ``using`` (or the
    database ``dbname`` on the same server), replacing the objects it contains.

    One transaction (``--single-transaction``): a failed restore leaves the database
    as it was. Ownership is not restored (``--no-owner``): the objects belong to the
    connecting role, which may differ from the one that took the dump. The caller
    fences leases afterwards, as on SQLite.
    """
    argv = [
        pg_tool("pg_restore"),
        "--clean",
        "--if-exists",
        "--no-owner",
        "--no-privileges",
        "--single-transaction",
        "--exit-on-error",
        "--no-password",
        f"--dbname={dbname or connections[using].settings_dict['NAME']}",
        str(src),
    ]
    _run(argv, _libpq_env(using, dbname), "pg_restore")

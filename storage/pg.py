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
from typing import TYPE_CHECKING, Any

from django.db import connections, transaction

from conduit.env import PostgresUrl

from .api import Tx
from .clock import wall_clock
from .core import TxScope
from .errors import Unavailable

if TYPE_CHECKING:  # psycopg is the optional [postgres] dependency: imported when used
    import psycopg

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


def settings_target(using: str, dbname: str | None = None) -> PostgresUrl:
    """The database behind the Django alias ``using``, with its libpq options."""
    conn = connections[using]
    if conn.vendor != "postgresql":
        raise Unavailable(f"database alias {using!r} is {conn.vendor}, not PostgreSQL")
    s: dict[str, Any] = conn.settings_dict
    return PostgresUrl(
        name=dbname or s["NAME"],
        user=s["USER"] or "",
        password=s["PASSWORD"] or "",
        host=s["HOST"] or "",
        port=str(s["PORT"] or ""),
        options={k: str(v) for k, v in s.get("OPTIONS", {}).items() if k in _ENV_FOR_OPTION},
    )


def _libpq_env(using: str, dbname: str | None = None) -> dict[str, str]:
    """The environment that points libpq tools at the database behind ``using``."""
    return _env_for(settings_target(using, dbname))


def _clean_env() -> dict[str, str]:
    # Start from a clean slate: a stray PGSERVICE or PGHOST must not redirect a tool.
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def _env_for(target: PostgresUrl) -> dict[str, str]:
    """The environment that points libpq tools at ``target``."""
    fields = {
        "PGDATABASE": target.name,
        "PGUSER": target.user,
        "PGPASSWORD": target.password,
        "PGHOST": target.host,
        "PGPORT": target.port,
    }
    options = target.options
    fields |= {var: str(options[opt]) for opt, var in _ENV_FOR_OPTION.items() if opt in options}
    return _clean_env() | {k: v for k, v in fields.items() if v}


def pg_connect(target: PostgresUrl, **overrides: Any) -> psycopg.Connection[Any]:
    """An autocommit psycopg connection to ``target`` (outside Django's aliases);
    ``overrides`` are libpq parameters that replace the target's (connect_timeout)."""
    import psycopg

    params: dict[str, Any] = {
        "dbname": target.name,
        "user": target.user,
        "password": target.password,
        "host": target.host,
        "port": target.port,
        **target.options,
        **overrides,
    }
    try:
        return psycopg.connect(**{k: v for k, v in params.items() if v}, autocommit=True)
    except psycopg.Error as exc:
        raise Unavailable(f"cannot connect to database {target.name!r}: {exc}") from exc


def pg_tables_with_rows(target: PostgresUrl, prefix: str = "conduit_") -> list[str]:
    """The tables named ``prefix*`` of ``target`` (any schema but the system ones)
    holding at least one row, as ``schema.table``."""
    from psycopg import sql

    with pg_connect(target) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_type = 'BASE TABLE' AND starts_with(table_name, %s)"
            " AND table_schema NOT IN ('pg_catalog', 'information_schema')"
            " ORDER BY 1, 2",
            [prefix],
        ).fetchall()
        found = []
        for schema, table in tables:
            query = sql.SQL("SELECT EXISTS (SELECT 1 FROM {}.{})").format(
                sql.Identifier(schema), sql.Identifier(table)
            )
            row = conn.execute(query).fetchone()
            if row is not None and row[0]:
                found.append(f"{schema}.{table}")
    return found


def pg_dump_contents(src: Path) -> str:
    """The table of contents of a ``pg_dump`` custom-format file (``pg_restore
    --list``): reading it checks the file is a readable dump. Needs no server."""
    return _run([pg_tool("pg_restore"), "--list", str(src)], _clean_env(), "pg_restore --list")


def _run(argv: list[str], env: dict[str, str], what: str) -> str:
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
    return result.stdout


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


def pg_restore_dump(
    src: Path,
    *,
    using: str = "default",
    dbname: str | None = None,
    target: PostgresUrl | None = None,
) -> None:
    """Restore a ``pg_dump_snapshot`` file into the database behind ``using`` (or the
    database ``dbname`` on the same server, or ``target``, any database a URL names),
    replacing the objects it contains.

    One transaction (``--single-transaction``): a failed restore leaves the database
    as it was. Ownership is not restored (``--no-owner``): the objects belong to the
    connecting role, which may differ from the one that took the dump. The caller
    fences leases afterwards, as on SQLite.
    """
    name = target.name if target else dbname or connections[using].settings_dict["NAME"]
    argv = [
        pg_tool("pg_restore"),
        "--clean",
        "--if-exists",
        "--no-owner",
        "--no-privileges",
        "--single-transaction",
        "--exit-on-error",
        "--no-password",
        f"--dbname={name}",
        str(src),
    ]
    env = _env_for(target) if target is not None else _libpq_env(using, dbname)
    _run(argv, env, "pg_restore")

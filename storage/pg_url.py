"""PostgreSQL addresses: ``PostgresUrl``, its parser, and the Django alias's own.

Pure and import-safe before Django is set up: the project's settings parse their
``DATABASE_URL`` with ``parse_postgres_url``, and the backup command parses its
``--database-url`` with the same function, so both accept exactly the same URLs.

``settings_target`` reads the address back from a configured Django alias, and
``pg_connect`` opens a psycopg connection outside Django's aliases (run ownership's
advisory locks, a restore's emptiness check). The password never appears in an error
or a ``repr``.

``DATABASE_OVERRIDE`` names the one environment variable storage owns: a restore sets
it for its fencing child to the restored database (``sqlite:///<absolute path>`` or a
PostgreSQL URL), and the project's settings, which alone read the environment, point
every alias at that database (``parse_database_override``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from .errors import Invalid, Unavailable

if TYPE_CHECKING:  # psycopg is the optional [postgres] dependency: imported when used
    import psycopg

__all__ = [
    "DATABASE_OVERRIDE",
    "LIBPQ_ENV",
    "PostgresUrl",
    "parse_database_override",
    "parse_postgres_url",
    "pg_connect",
    "settings_target",
    "sqlite_override",
]

DATABASE_OVERRIDE = "STORAGE_DATABASE_OVERRIDE"
_SQLITE_SCHEME = "sqlite://"

# libpq connection options a URL may carry in its query string (``?sslmode=require``),
# as the environment variables the command-line tools read. Anything else is a typo or
# an unsupported feature: fail loudly rather than ignore it.
LIBPQ_ENV = {
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY",
    "connect_timeout": "PGCONNECT_TIMEOUT",
    "application_name": "PGAPPNAME",
    "target_session_attrs": "PGTARGETSESSIONATTRS",
}
_URL_PARAMS = frozenset({"host", "port", *LIBPQ_ENV})


@dataclass(frozen=True)
class PostgresUrl:
    """The parts of a PostgreSQL URL, as Django's DATABASES entry names them."""

    name: str
    user: str = ""
    password: str = field(default="", repr=False)
    host: str = ""  # a hostname, an IP address, or a unix-socket directory
    port: str = ""
    options: dict[str, str] = field(default_factory=dict)


def parse_postgres_url(raw: str, name: str = "the database URL") -> PostgresUrl:
    """``raw`` parsed; ``name`` says where it came from in the ``Invalid`` raised
    (which never echoes the URL: it may hold a password).

    Accepted forms: ``postgres://user:pass@host:5432/dbname``, ``postgresql://...``
    (user, password and names are percent-decoded), and a unix socket as
    ``postgres:///dbname?host=/run/postgresql`` (or ``%2Frun%2Fpostgresql`` as the
    host). The query string may carry ``host``, ``port`` and the libpq options of
    ``LIBPQ_ENV``.
    """

    def bad(why: str) -> Invalid:
        return Invalid(f"{name} {why} (expected postgres://user:pass@host:port/db)")

    url = urlsplit(raw)
    if url.scheme not in ("postgres", "postgresql"):
        raise bad(f"must be a postgres:// or postgresql:// URL, not {url.scheme or 'no'} scheme")
    if url.fragment:
        raise bad("must not have a #fragment")
    dbname = unquote(url.path.removeprefix("/"))
    if not dbname or "/" in dbname:
        raise bad("must name one database as its path")
    try:
        port = url.port
    except ValueError:
        raise bad("has a malformed port") from None
    try:
        query = parse_qs(url.query, keep_blank_values=True, strict_parsing=bool(url.query))
    except ValueError:
        raise bad("has a malformed query string") from None
    options: dict[str, str] = {}
    for key, values in query.items():
        if key not in _URL_PARAMS:
            raise bad(f"has an unsupported parameter {key!r}")
        if len(values) != 1:
            raise bad(f"repeats the parameter {key!r}")
        options[key] = values[0]
    # Not url.hostname for names: it lowercases, which would corrupt a percent-encoded
    # socket directory such as %2Fhome%2FAlice.
    hostport = url.netloc.rpartition("@")[2]
    bracketed = hostport.startswith("[")  # an IPv6 address
    host = (url.hostname or "") if bracketed else unquote(hostport.partition(":")[0])
    host = options.pop("host", host)
    port_text = options.pop("port", str(port) if port is not None else "")
    if port_text and not port_text.isdigit():
        raise bad("has a malformed port")
    return PostgresUrl(
        name=dbname,
        user=unquote(url.username or ""),
        password=unquote(url.password or ""),
        host=host,
        port=port_text,
        options=options,
    )


def sqlite_override(path: Path) -> str:
    """The ``DATABASE_OVERRIDE`` value naming the SQLite file ``path``."""
    return _SQLITE_SCHEME + str(path.resolve())


def parse_database_override(raw: str) -> Path | PostgresUrl | None:
    """The database a ``DATABASE_OVERRIDE`` value names: a SQLite file's absolute path,
    a PostgreSQL address, or None for an empty value."""
    raw = raw.strip()
    if not raw:
        return None
    if raw.startswith(_SQLITE_SCHEME):
        path = Path(raw.removeprefix(_SQLITE_SCHEME))
        if not path.is_absolute():
            raise Invalid(f"{DATABASE_OVERRIDE} must name an absolute SQLite path")
        return path
    return parse_postgres_url(raw, DATABASE_OVERRIDE)


def settings_target(using: str, dbname: str | None = None) -> PostgresUrl:
    """The database behind the Django alias ``using``, with its libpq options."""
    from django.db import connections

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
        options={k: str(v) for k, v in s.get("OPTIONS", {}).items() if k in LIBPQ_ENV},
    )


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

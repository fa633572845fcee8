"""Typed readers for settings that come from environment variables.

Each reader returns the default when the variable is unset and raises
ImproperlyConfigured naming the variable and the bad value otherwise, so a typo in a
deployment stops the process at startup instead of changing behaviour quietly.
"""

import contextlib
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def env_str(name: str, default: str) -> str:
    """The variable's value as is, or `default` when unset."""
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    """1/true/yes/on or 0/false/no/off, case-insensitive; anything else is an error."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name} must be a boolean (1/true/yes/on or 0/false/no/off), got {raw!r}"
    )


def env_int(name: str, default: int) -> int:
    """A base-10 integer; anything else is an error."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(raw.strip(), 10)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def env_path(name: str, default: Path, *, base: Path) -> Path:
    """A filesystem path; `~` is expanded and relative paths are taken from `base`."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    if not raw.strip():
        raise ImproperlyConfigured(f"{name} must be a path, got {raw!r}")
    path = Path(raw).expanduser()
    return path if path.is_absolute() else base / path


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list; blank items are dropped, an all-blank value is an error."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    items = [item.strip() for item in raw.split(",") if item.strip()]
    if not items:
        raise ImproperlyConfigured(f"{name} must be a comma-separated list, got {raw!r}")
    return items


def read_or_create_secret(path: Path, nbytes: int = 50) -> str:
    """The secret stored in `path`, created once (mode 0600) if absent.

    Several processes may start together (gunicorn workers, `make run` steps), so the
    new secret is written to a private temporary file and published with link(2), which
    fails if another process published first; the loser reads the winner's secret. A
    reader therefore never sees a half-written file.
    """
    try:
        return _read_secret(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(nbytes) + "\n")
        # Another process published first: keep its secret, drop ours.
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return _read_secret(path)


def _read_secret(path: Path) -> str:
    value = path.read_text().strip()
    if not value:
        raise ImproperlyConfigured(f"{path} is empty; delete it to generate a new secret")
    return value


# libpq parameters a DATABASE_URL may carry in its query string (`?sslmode=require`).
# Anything else is a typo or an unsupported feature: fail loudly rather than ignore it.
_PG_URL_PARAMS = frozenset(
    {
        "host",
        "port",
        "sslmode",
        "sslrootcert",
        "sslcert",
        "sslkey",
        "connect_timeout",
        "application_name",
        "target_session_attrs",
    }
)


@dataclass(frozen=True)
class PostgresUrl:
    """The parts of a PostgreSQL URL, as Django's DATABASES entry names them."""

    name: str
    user: str = ""
    password: str = field(default="", repr=False)
    host: str = ""  # a hostname, an IP address, or a unix-socket directory
    port: str = ""
    options: dict[str, str] = field(default_factory=dict)


def env_database_url(name: str) -> PostgresUrl | None:
    """A PostgreSQL URL, or None when the variable is unset or empty.

    Accepted forms: ``postgres://user:pass@host:5432/dbname``, ``postgresql://...``
    (user, password and names are percent-decoded), and a unix socket as
    ``postgres:///dbname?host=/run/postgresql`` (or ``%2Frun%2Fpostgresql`` as the
    host). The query string may carry the libpq parameters in ``_PG_URL_PARAMS``.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    return parse_postgres_url(raw, name)


def parse_postgres_url(raw: str, name: str = "the database URL") -> PostgresUrl:
    """``raw`` parsed as ``env_database_url`` does; ``name`` says where it came from
    in the error (which never echoes the URL: it may hold a password)."""

    def bad(why: str) -> ImproperlyConfigured:
        # Never echo the URL itself: it may hold a password.
        return ImproperlyConfigured(f"{name} {why} (expected postgres://user:pass@host:port/db)")

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
        if key not in _PG_URL_PARAMS:
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

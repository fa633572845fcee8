"""Typed readers for settings that come from environment variables.

Each reader returns the default when the variable is unset and raises
ImproperlyConfigured naming the variable and the bad value otherwise, so a typo in a
deployment stops the process at startup instead of changing behaviour quietly.
"""

import os
from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from storage.errors import Invalid
from storage.pg_url import PostgresUrl, parse_postgres_url

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


def env_seconds(name: str, default: int) -> int:
    """A whole number of seconds, zero or more; anything else is an error."""
    value = env_int(name, default)
    if value < 0:
        raise ImproperlyConfigured(f"{name} must be 0 or more seconds, got {value}")
    return value


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


def env_networks(name: str) -> list[IPv4Network | IPv6Network]:
    """A comma-separated list of addresses and networks (``10.0.0.5``, ``10.0.0.0/24``,
    ``::1``); unset or empty means none. Host bits set under a prefix
    (``10.0.0.5/24``) are refused: they would trust a wider network than written."""
    raw = os.environ.get(name, "")
    networks = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        try:
            networks.append(ip_network(item))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} must list IP addresses or networks (such as 10.0.0.0/24), got {item!r}"
            ) from None
    return networks


def env_database_url(name: str) -> PostgresUrl | None:
    """A PostgreSQL URL (the forms ``storage.pg_url.parse_postgres_url`` accepts), or
    None when the variable is unset or empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return parse_postgres_url(raw, name)
    except Invalid as exc:
        raise ImproperlyConfigured(str(exc)) from None


def env_group_map(name: str) -> dict[str, tuple[str, ...]]:
    """``provider-group=console-group`` pairs, comma-separated, as a mapping from each
    provider group to the console groups it grants (a provider group may be named
    twice to grant two). Split at the last ``=``, so a provider group name may hold
    one; it may not hold a comma. Unset or empty: no group is mapped, everyone who
    signs in through the provider is read-only."""
    raw = os.environ.get(name, "")
    mapping: dict[str, tuple[str, ...]] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        provider, sep, console = item.rpartition("=")
        provider, console = provider.strip(), console.strip()
        if not sep or not provider or not console:
            raise ImproperlyConfigured(
                f"{name} must list provider-group=console-group pairs, got {item!r}"
            )
        if console not in mapping.get(provider, ()):
            mapping[provider] = (*mapping.get(provider, ()), console)
    return mapping

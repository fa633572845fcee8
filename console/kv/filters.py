"""The KV inspector's URL state (``/kv``): ``namespace`` (none: the list of
namespaces), ``prefix`` (of that namespace's keys), ``as_of`` (a moment as every page
of the past names one: ``v<store version>``, ``#<Event sequence>``, or a time as the
console's other time fields take it), ``after`` (the keyset cursor: the
last namespace or key of the page before) and ``size``.

Namespaces and keys travel in the query string, never the path: both may hold "/",
"?", "%", spaces at either end and any other character the storage rules accept, and
``querystring`` percent-encodes each. They are taken as given, not stripped. What no
name could be (NUL, past a name's bytes) is a 400 naming the parameter; so is a
prefix without a namespace, a bad ``as_of`` or ``size``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from django.http import QueryDict

from console.history.moments import Moment, parse_moment
from console.urlstate import (
    DEFAULT_PAGE_SIZE,
    FilterError,
    parse_size,
    querystring,
    storable,
)

NAMESPACE_BYTES = 255  # a KV namespace is an ID (storage.tx.fields.ID_MAX_BYTES)
KEY_BYTES = 1024  # ... and a key at most this (fields.KV_KEY_MAX_BYTES)


@dataclass(frozen=True, slots=True)
class AsOf:
    """``as_of`` as typed (kept in links, so "2h" stays relative in a bookmark), and
    the moment it names, spelt as on every page of the past (``console.history``):
    a store version ``v<n>``, an Event ``#<sequence>``, or a time."""

    raw: str
    moment: Moment

    @property
    def version(self) -> int | None:
        return self.moment.version

    @property
    def at(self) -> int | None:
        return self.moment.at


@dataclass(frozen=True, slots=True)
class KvFilter:
    namespace: str = ""
    prefix: str = ""
    as_of: AsOf | None = None
    size: int = DEFAULT_PAGE_SIZE

    def params(self) -> list[tuple[str, str]]:
        out = [(n, getattr(self, n)) for n in ("namespace", "prefix") if getattr(self, n)]
        out += [("as_of", self.as_of.raw)] if self.as_of else []
        return out + ([("size", str(self.size))] if self.size != DEFAULT_PAGE_SIZE else [])

    def querystring(self, extra: Iterable[tuple[str, str]] = ()) -> str:
        return querystring([*self.params(), *extra])

    def opened(self, namespace: str) -> str:
        """A namespace's keys from its first, as of the same moment."""
        return replace(self, namespace=namespace, prefix="").querystring()

    def at_version(self, version: int, after: str = "") -> str:
        """These keys as of ``version``, from the same place."""
        moved = replace(self, as_of=AsOf(f"v{version}", Moment(f"v{version}", version=version)))
        return moved.querystring([("after", after)] if after else [])

    def now(self, after: str = "") -> str:
        """These keys as they are now, from the same place."""
        return replace(self, as_of=None).querystring([("after", after)] if after else [])


def parse_as_of(raw: str, now_ns: int | None, errors: dict[str, str]) -> AsOf | None:
    """The moment ``as_of`` names (``console.history.moments``); None when empty."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        now = time.time_ns() if now_ns is None else now_ns
        return AsOf(raw, parse_moment(raw, "as_of", now))
    except FilterError as exc:
        errors |= exc.errors
        return None


def parse_kv_filter(data: QueryDict, now_ns: int | None = None) -> tuple[KvFilter, str]:
    """The page's URL state and its cursor; FilterError naming every bad parameter."""
    errors: dict[str, str] = {}
    namespace = storable("namespace", data.get("namespace", ""), errors, NAMESPACE_BYTES)
    prefix = storable("prefix", data.get("prefix", ""), errors, KEY_BYTES)
    if prefix and not namespace and "namespace" not in errors:
        errors["prefix"] = "prefix narrows one namespace's keys: give the namespace too."
    # The cursor is the last key of a namespace's page, or the last namespace listed.
    most = KEY_BYTES if namespace else NAMESPACE_BYTES
    after = storable("after", data.get("after", ""), errors, most)
    as_of = parse_as_of(data.get("as_of", ""), now_ns, errors)
    size = parse_size(data, errors)
    if errors:
        raise FilterError(errors)
    return KvFilter(namespace, prefix, as_of, size), after

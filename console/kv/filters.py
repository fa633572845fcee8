"""The KV inspector's URL state (``/kv``): ``namespace`` (none: the list of
namespaces), ``prefix`` (of that namespace's keys), ``as_of`` (a store version, or a
time as the console's other time fields take it), ``after`` (the keyset cursor: the
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

from console.urlstate import (
    DEFAULT_PAGE_SIZE,
    SINCE_HELP,
    FilterError,
    parse_since,
    parse_size,
    querystring,
    storable,
)

NAMESPACE_BYTES = 255  # a KV namespace is an ID (storage.tx.fields.ID_MAX_BYTES)
KEY_BYTES = 1024  # ... and a key at most this (fields.KV_KEY_MAX_BYTES)
VERSION_MAX = 2**63 - 1  # a store version is a 64-bit counter on both engines
AS_OF_HELP = "as_of is a store version (a whole number, 0 to 2^63-1) or a time. " + SINCE_HELP


@dataclass(frozen=True, slots=True)
class AsOf:
    """``as_of`` as typed (kept in links, so "2h" stays relative in a bookmark), and
    what it names: a store version, or an instant whose version the View looks up."""

    raw: str
    version: int | None = None
    at: int | None = None


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
        moved = replace(self, as_of=AsOf(str(version), version))
        return moved.querystring([("after", after)] if after else [])

    def now(self, after: str = "") -> str:
        """These keys as they are now, from the same place."""
        return replace(self, as_of=None).querystring([("after", after)] if after else [])


def parse_as_of(raw: str, now_ns: int | None, errors: dict[str, str]) -> AsOf | None:
    """A store version (digits) or a time; None when empty."""
    raw = raw.strip()
    if not raw:
        return None
    # isascii: "²".isdigit() is True, but int("²") raises. The length first: int()
    # of thousands of digits raises too.
    if raw.isascii() and raw.isdigit():
        if len(raw) > 19 or int(raw) > VERSION_MAX:
            errors["as_of"] = f"as_of {raw[:40]} is past the largest store version. {AS_OF_HELP}"
            return None
        return AsOf(raw, version=int(raw))
    try:
        return AsOf(raw, at=parse_since(raw, time.time_ns() if now_ns is None else now_ns))
    except FilterError:
        errors["as_of"] = AS_OF_HELP
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

"""KV: small coordination values by namespace and key, capped at ``KV_VALUE_LIMIT``."""

from __future__ import annotations

from ..api import KV_VALUE_LIMIT
from ..errors import Invalid, NotFound
from . import fields
from .base import TxBase

# The most rows a listing can be asked for: a LIMIT both engines hold (64-bit signed).
LIMIT_MAX = (1 << 63) - 1


def page_limit(limit: int) -> int:
    """A listing's ``limit``: 0 (all) or a positive integer, capped at ``LIMIT_MAX``."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise Invalid(f"limit is an integer, not {type(limit).__name__}")
    fields.require_limit(limit)
    return min(limit, LIMIT_MAX)


def listing_text(value: str, what: str, max_bytes: int) -> None:
    """A listing's prefix or cursor: "" or text a name could start with (no NUL, valid
    Unicode, at most a name's bytes); anything else matches no name."""
    if not isinstance(value, str):
        raise Invalid(f"{what} must be a string, not {type(value).__name__}")
    fields.require_text(value, what, max_bytes)


def key_listing(namespace: str, prefix: str, after: str, limit: int) -> int:
    """Check a listing of a namespace's keys (``kv_list``, ``kv_list_as_of``); its
    limit, capped."""
    fields.require_id(namespace, "KV namespace")
    listing_text(prefix, "KV key prefix", fields.KV_KEY_MAX_BYTES)
    listing_text(after, "KV key cursor", fields.KV_KEY_MAX_BYTES)
    return page_limit(limit)


class KvRules(TxBase):
    """The KV operations of ``Tx``."""

    @staticmethod
    def _kv_names(namespace: str, key: str | None) -> None:
        fields.require_id(namespace, "KV namespace")
        if key is not None:
            fields.require_id(key, "KV key", fields.KV_KEY_MAX_BYTES)

    def kv_get(self, namespace: str, key: str) -> bytes:
        self._check()
        self._kv_names(namespace, key)
        value = self._kv_get(namespace, key)
        if value is None:
            raise NotFound(f"no KV entry {namespace}/{key}")
        return value

    def kv_put(self, namespace: str, key: str, value: bytes) -> None:
        self._writable()
        self._kv_names(namespace, key)
        if not isinstance(value, bytes):
            raise Invalid("a KV value must be bytes")
        if len(value) > KV_VALUE_LIMIT:
            raise Invalid(
                f"KV value of {len(value)} bytes exceeds the {KV_VALUE_LIMIT}-byte cap; "
                "KV holds small coordination state, use the artifact store for content"
            )
        self._kv_put(namespace, key, value)

    def kv_delete(self, namespace: str, key: str) -> None:
        self._writable()
        self._kv_names(namespace, key)
        self._kv_delete(namespace, key)

    def kv_list(
        self, namespace: str, prefix: str = "", after: str = "", limit: int = 0
    ) -> list[tuple[str, bytes]]:
        """(key, value) pairs of ``namespace`` whose key starts with ``prefix``, by key
        in binary order, only keys after ``after`` (a keyset cursor: "" from the
        start), at most ``limit`` (0: all)."""
        self._check()
        limit = key_listing(namespace, prefix, after, limit)
        return self._kv_list(namespace, prefix, after, limit)

    def kv_namespaces(self, after: str = "", limit: int = 0) -> list[str]:
        """The namespaces holding at least one key, in binary order, only those after
        ``after`` ("" from the start), at most ``limit`` (0: all)."""
        self._check()
        listing_text(after, "KV namespace cursor", fields.ID_MAX_BYTES)
        return self._kv_namespaces(after, page_limit(limit))

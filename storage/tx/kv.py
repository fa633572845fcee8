"""KV: small coordination values by namespace and key, capped at ``KV_VALUE_LIMIT``."""

from __future__ import annotations

from ..api import KV_VALUE_LIMIT
from ..errors import Invalid, NotFound
from . import fields
from .base import TxBase


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

    def kv_list(self, namespace: str, prefix: str = "") -> list[tuple[str, bytes]]:
        self._check()
        self._kv_names(namespace, None)
        return self._kv_list(namespace, prefix)

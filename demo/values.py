"""The business values the simulated graphs produce, and their value codecs.

Every ready output of ``demo.graphs`` is one of these types, encoded through
``CODECS`` (so its ValueRecord names the codec's ID and version), which is what lets the
console's run page decode it (``demo.graphs.run_values`` is the setting
``CONSOLE_RUN_VALUES``'s default).

- ``Output`` (the generic node output), ``Order`` (with ``Line`` s and an optional
  coupon) and ``Total`` are JSON dataclasses (``Codecs.register_json``).
- ``Warnings`` has a custom codec that writes no bytes at all for no warnings: the spec's
  "A custom Codec may return zero bytes", still ready and still checksummed.
- ``LedgerEvent`` is the element type of the feed's stream (its descriptor's
  TypeID/Version; the elements themselves are not in the record).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from storage import Corrupt, Invalid
from storage.run_records import Codecs, new_codecs


@dataclass(frozen=True, slots=True)
class Output:
    """The generic output of a demo node: who made it and a number."""

    node: str
    output: str
    n: int


@dataclass(frozen=True, slots=True)
class Line:
    sku: str
    quantity: int
    price_cents: int


@dataclass(frozen=True, slots=True)
class Order:
    order_id: str
    lines: tuple[Line, ...]
    coupon: str | None
    note: str


@dataclass(frozen=True, slots=True)
class Total:
    processed: int


@dataclass(frozen=True, slots=True)
class LedgerEvent:
    sequence: int
    amount_cents: int


@dataclass(frozen=True, slots=True)
class Warnings:
    items: tuple[str, ...] = ()


class WarningsCodec:
    """No warnings are no bytes; otherwise a JSON list of strings."""

    type = Warnings
    id = "demo.warnings"
    version = "1"

    def encode(self, value: Any) -> bytes:
        if type(value) is not Warnings or not all(type(w) is str for w in value.items):
            raise Invalid(f"expected Warnings of strings, got {value!r}")
        if not value.items:
            return b""
        return json.dumps(list(value.items), ensure_ascii=False, separators=(",", ":")).encode()

    def decode(self, data: bytes) -> Any:
        if data == b"":
            return Warnings()
        try:
            items = json.loads(data.decode("utf-8"))
        except ValueError as exc:
            raise Corrupt(f"warnings are not a JSON list: {exc}") from None
        if not isinstance(items, list) or not all(isinstance(w, str) for w in items):
            raise Corrupt("warnings are not a JSON list of strings")
        return Warnings(tuple(items))


def build_codecs() -> Codecs:
    """The built-in codecs plus the demo's own (IDs and versions are stored in every
    record these wrote: never change one in place)."""
    codecs = new_codecs()
    codecs.register_json(Output, id="demo.output", version="1")
    codecs.register_json(Order, id="demo.order", version="1")
    codecs.register_json(Total, id="demo.total", version="1")
    codecs.register_json(LedgerEvent, id="demo.ledger_event", version="1")
    codecs.register(WarningsCodec())
    return codecs


CODECS = build_codecs()

# An output's type by its name (names are unique across the demo's graphs); any other
# output is an ``Output``.
TYPES: dict[str, type] = {
    "order": Order,
    "warnings": Warnings,
    "total": Total,
    "events": LedgerEvent,
}
_SKUS = ("tea-green", "tea-black", "mug", "kettle", "filter<paper>")


def output_value(node_id: str, name: str, rng: random.Random) -> object:
    """A value for output ``name`` of node ``node_id``. It takes exactly one draw from
    ``rng`` (none for warnings), as the simulator always has, so a seed's runs take the
    same steps whatever the values look like."""
    kind = TYPES.get(name, Output)
    if kind is Warnings:
        return Warnings()  # validated without complaint: zero encoded bytes
    n = rng.randint(1, 10_000)
    if kind is Order:
        # The order's details come from its number, not from the run's stream.
        local = random.Random(f"order/{node_id}/{n}")  # noqa: S311 - demo data
        lines = tuple(
            Line(local.choice(_SKUS), local.randint(1, 4), local.randint(150, 9_000))
            for _ in range(local.randint(1, 4))
        )
        coupon = local.choice((None, None, "WELCOME10"))
        return Order(f"o-{n:05d}", lines, coupon, "leave at the door")
    return Output(node_id, name, n)

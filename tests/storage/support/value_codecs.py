"""An order codec of nested values, shared by the value-codec cases and their round
trips."""

from __future__ import annotations

from dataclasses import dataclass, field

from storage.run_records import JsonCodec


@dataclass(frozen=True)
class Line:
    sku: str
    quantity: int
    price: float


@dataclass(frozen=True)
class Order:
    order_id: str
    lines: tuple[Line, ...]
    tags: dict[str, int]
    coupon: str | None
    blob: bytes
    pair: tuple[int, str]
    notes: list[str] = field(default_factory=list)


def order_codec() -> JsonCodec:
    return JsonCodec(Order, id="test.order", version="1")

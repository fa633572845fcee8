"""Live updates: the interval picker's cookie and the cheap "unchanged" answer.

A polling region sends the stamp (``<latest sequence>.<store version>``) it was
rendered from; when the store has not changed since, the view answers 204 after
reading only the stamp, and htmx leaves the region alone. ``polled_view`` is that
prologue, written once for every page that polls.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

import storage
from storage import Tx
from storage.default import default_store

COOKIE = "console_poll"
CHOICES = (0, 2, 5, 15, 60)  # seconds; 0 is "off"
DEFAULT = 5


def poll_seconds(request: HttpRequest) -> int:
    raw = request.COOKIES.get(COOKIE, "")
    # isascii: "²".isdigit() is True, but int("²") raises.
    return int(raw) if raw.isascii() and raw.isdigit() and int(raw) in CHOICES else DEFAULT


def seen_stamp(request: HttpRequest) -> str:
    """The stamp a poll carries; "" for any other request (which always renders)."""
    if not request.headers.get("HX-Request"):
        return ""
    return request.GET.get("stamp", "")


def unchanged() -> HttpResponse:
    """htmx does not swap a 204; HX-Reswap says the same for any other client."""
    response = HttpResponse(status=204)
    response["HX-Reswap"] = "none"
    return response


def stamp_of(tx: Tx) -> str:
    """What a poll compares: the latest acceptance sequence and the store-wide change
    counter (two single-row reads)."""
    return f"{tx.latest_sequence()}.{tx.store_version()}"


def read[T](fn: Callable[[Tx], T], now: int | None = None) -> T:
    """One page's read: ``fn`` in ONE ``storage.view`` of the console's store, so the
    page sees one consistent snapshot. ``now`` fixes the View's time (tests)."""
    return storage.view(default_store(), now, fn)


def polled_view[T](
    seen: str,
    build: Callable[[Tx, str], T],
    *,
    now: int | None = None,
    period: int = 0,
) -> T | None:
    """``build(tx, stamp)`` in one View, or None ("unchanged") when the stamp equals
    ``seen`` (after reading only the stamp). ``period`` (ns) adds the View's time
    divided by it to the stamp, so a page whose figures move with time alone (leases
    expiring, buckets rolling over) re-renders at least once a period."""

    def read_page(tx: Tx) -> T | None:
        stamp = stamp_of(tx)
        if period:
            stamp = f"{stamp}.{tx.now // period}"
        if stamp == seen:
            return None
        return build(tx, stamp)

    return read(read_page, now)

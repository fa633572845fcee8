"""Live updates: the interval picker's cookie and the cheap "unchanged" answer.

A polling region sends the stamp it was rendered from, ``<store part>-<digest>``:

- the store part (latest acceptance sequence and store-wide change counter, plus the
  time period for pages whose figures move with time alone) says whether anything at
  all committed since; when nothing did, the view answers 204 after its first
  statement alone (the View reads both with its snapshot, ``OrmStore.view``), as an
  idle console's tabs do all night;
- the digest is a hash of what the region reads (its rows, facets, attempts, Timers,
  Waits: the built page minus its clock), so when the runtime commits elsewhere the
  region answers 204 after its reads but without rendering, sending or swapping
  anything. A cheaper stamp (a selection's count and newest ``updated_at``, a Work's
  revision) would miss what the page shows but the Work's row does not carry: a
  lease renewed, a Timer or Wait changed, triage marks and ``latest_executor``,
  which storage keeps without a revision or ``updated_at`` bump; a region whose
  content changed must never answer 204, so the digest covers everything it reads.

- the mark (optional, a third part): what a region can learn from indexes alone about
  whether its content changed (``storage.Tx.work_mark`` for a Work's page); when it
  is as the poll saw it, the view answers 204 after reading only it, so a region the
  runtime's commits elsewhere never touch costs a few index reads, not the page. A
  region passes ``mark`` to ``polled_view``; a mark of "" means "cannot tell" (the
  page is built and hashed as above). A mark may share its reads with the page's
  build: the two run in the same View, the mark first.

A 204 carries the stamp as it is now (the ``X-Console-Stamp`` header); console.js keeps it on the
region and sends it back in the same header, so the next poll can take the cheap path
again. Without that script the stamp in the poll URL is used, which is only slower.
``polled_view`` is that prologue, written once for every page that polls.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, cast

from django.http import HttpRequest, HttpResponse

import storage
from storage import Tx
from storage.default import default_store

COOKIE = "console_poll"
CHOICES = (0, 2, 5, 15, 60)  # seconds; 0 is "off"
DEFAULT = 5
HEADER = "X-Console-Stamp"
# The fields of a built page that are not its content: when it was read, and the stamp.
UNSTAMPED = frozenset({"now", "stamp"})


def poll_seconds(request: HttpRequest) -> int:
    raw = request.COOKIES.get(COOKIE, "")
    # isascii: "²".isdigit() is True, but int("²") raises.
    return int(raw) if raw.isascii() and raw.isdigit() and int(raw) in CHOICES else DEFAULT


def seen_stamp(request: HttpRequest) -> str:
    """The stamp a poll carries; "" for any other request (which always renders).
    The header (kept fresh by console.js across 204s) wins over the URL's."""
    if not request.headers.get("HX-Request"):
        return ""
    return request.headers.get(HEADER) or request.GET.get("stamp", "")


# The stamp of the region a ``polled_view`` in this request found unchanged, for the
# 204 to carry. A context variable rather than a return value so each view keeps its
# one-line ``if page is None: return unchanged()``; ``polled_view`` sets it on every
# call, so a value never outlives the request that read it.
_current: ContextVar[str] = ContextVar("console_poll_stamp", default="")


def unchanged() -> HttpResponse:
    """htmx does not swap a 204; HX-Reswap says the same for any other client. The
    header gives the region's current stamp (console.js keeps it for the next poll)."""
    response = HttpResponse(status=204)
    response["HX-Reswap"] = "none"
    stamp = _current.get()
    if stamp:
        response[HEADER] = stamp
    return response


def stamp_of(tx: Tx) -> str:
    """The store part: the latest acceptance sequence and the store-wide change
    counter (both read with the View's snapshot: no statement of their own)."""
    return f"{tx.latest_sequence()}.{tx.store_version()}"


@lru_cache(maxsize=256)  # one entry per record or page class: a few dozen in all
def _field_names(cls: Any) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


# Exact types whose repr is stable and which hold nothing to canonicalise.
_LEAVES = frozenset({str, int, float, bool, bytes, type(None)})


def _canonical(value: Any) -> Any:
    """``value`` as nested tuples whose ``repr`` is the same in every process: sets
    are sorted (their order follows per-process string hashing); dicts keep their
    order (a changed order is shown, so it rightly changes the digest)."""
    if type(value) in _LEAVES:
        # Most of a page's values: answered before the dataclass check, which cost
        # a tenth of the Work list's request when it came first.
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        return (cls.__name__, *(_canonical(getattr(value, n)) for n in _field_names(cls)))
    if isinstance(value, dict):
        return ("{", *((_canonical(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        return ("set", *sorted(repr(_canonical(v)) for v in value))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    return value  # str, bytes, numbers, enums, None: their repr is stable


def digest_of(page: Any) -> str:
    """A hash of a built page's content: every field but its clock and its stamp. A
    region's mark (see the module) is the hash of its mark's reads, taken the same way."""
    if dataclasses.is_dataclass(page) and not isinstance(page, type):
        names = [n for n in _field_names(type(page)) if n not in UNSTAMPED]
        content: Any = tuple(_canonical(getattr(page, n)) for n in names)
    else:
        content = _canonical(page)
    return hashlib.blake2b(repr(content).encode(), digest_size=10).hexdigest()


def read[T](fn: Callable[[Tx], T], now: int | None = None) -> T:
    """One page's read: ``fn`` in ONE ``storage.view`` of the console's store, so the
    page sees one consistent snapshot. ``now`` fixes the View's time (tests)."""
    return storage.view(default_store(), now, fn)


def region_stamp[T](
    tx: Tx,
    seen: str,
    build: Callable[[Tx, str], T],
    period: int = 0,
    mark: Callable[[Tx], str] | None = None,
) -> T | None:
    """The prologue inside a View (see ``polled_view``): the page, or None with
    ``_current`` set to the stamp the 204 carries."""
    store = stamp_of(tx)
    if period:
        store = f"{store}.{tx.now // period}"
    seen_store, _, rest = seen.partition("-")
    seen_digest, _, seen_mark = rest.partition("-")
    if seen and seen_store == store:
        _current.set(seen)
        return None
    # Only a poll reads the mark: a page's first render does not pay for it, and its
    # first poll after a commit carries the mark back in its 204's stamp.
    marked = mark(tx) if mark is not None and seen else ""
    if marked and seen_mark == marked:
        _current.set(f"{store}-{seen_digest}-{marked}")
        return None
    page = build(tx, "")
    digest = digest_of(page)
    stamp = f"{store}-{digest}-{marked}" if marked else f"{store}-{digest}"
    if seen and seen_digest == digest:
        _current.set(stamp)
        return None
    if dataclasses.is_dataclass(page) and "stamp" in _field_names(cast(Any, type(page))):
        # Every page class is a frozen dataclass with a ``stamp`` field.
        return cast(T, dataclasses.replace(cast(Any, page), stamp=stamp))
    return page


def polled_view[T](
    seen: str,
    build: Callable[[Tx, str], T],
    *,
    now: int | None = None,
    period: int = 0,
    mark: Callable[[Tx], str] | None = None,
) -> T | None:
    """``build(tx, stamp)`` in one View, or None ("unchanged") when the region is as
    ``seen`` showed it: at once when nothing committed since (the store part), or
    when ``mark(tx)`` (cheap reads) is as it was (the mark), else after ``build`` when
    its content hashes the same (the digest). ``build`` is called with "" and the
    page's ``stamp`` field is filled in after. ``period`` (ns) adds the View's time
    divided by it to the store part, so a page whose figures move with time alone
    (leases expiring, buckets rolling over) is rebuilt at least once a period; a
    mark could not say when that is due, so a region has one or the other."""
    if period and mark is not None:
        raise ValueError("a polled region takes a period or a mark, not both")
    _current.set("")
    return read(lambda tx: region_stamp(tx, seen, build, period, mark), now)

"""Run IDs, the rows the backends keep for run records, and the meaning of a ``RunQuery``.

The reference double answers ``run_records`` with ``select_run_rows`` over its rows; the
SQL backend must agree with it for every query (``tests/storage/run_records/test_queries.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import Invalid
from .codec import _require_utf8 as require_utf8
from .records import RUN_ID_MAX, RunQuery


@dataclass(frozen=True, slots=True)
class RunRow:
    """One stored run record as a backend keeps it: the JSON bytes exactly as stored,
    beside the columns the CAS and the list read without decoding them."""

    run_id: str
    revision: int
    format: int
    created_ns: int
    updated_ns: int
    data: bytes


def _clean_text(value: object, what: str) -> str:
    """A string the database can store and compare: valid UTF-8 (no unpaired
    surrogate) and no NUL, which PostgreSQL text cannot hold."""
    if not isinstance(value, str):
        raise Invalid(f"{what} must be a string, not {type(value).__name__}")
    require_utf8(value, what)
    if "\x00" in value:
        raise Invalid(f"{what} {value!r} contains NUL")
    return value


def check_run_id(run_id: object) -> str:
    """``Invalid`` unless ``run_id`` is a nonempty valid-UTF-8 string without NUL of at
    most ``RUN_ID_MAX`` bytes of UTF-8 (the identifier rule of ``storage.tx.fields``)."""
    text = _clean_text(run_id, "run ID")
    if not text:
        raise Invalid("run ID must be nonempty")
    size = len(text.encode("utf-8"))
    if size > RUN_ID_MAX:
        raise Invalid(f"run ID of {size} bytes of UTF-8 exceeds {RUN_ID_MAX}")
    return text


def _check_time(value: object, what: str) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise Invalid(f"{what} must be integer nanoseconds or None, not {value!r}")


def check_run_query(query: RunQuery) -> None:
    """``Invalid`` for a query no backend could answer the same way."""
    if not isinstance(query, RunQuery):
        raise Invalid(f"expected a RunQuery, not {type(query).__name__}")
    _clean_text(query.search, "run search")
    _clean_text(query.run_id_prefix, "run ID prefix")
    if query.format is not None and (
        not isinstance(query.format, int) or isinstance(query.format, bool)
    ):
        raise Invalid(f"run format filter must be an integer or None, not {query.format!r}")
    _check_time(query.updated_since, "updated_since")
    _check_time(query.updated_before, "updated_before")
    if query.after is not None:
        if not (isinstance(query.after, tuple) and len(query.after) == 2):
            raise Invalid("run cursor must be (updated_ns, run_id)")
        _check_time(query.after[0], "run cursor time")
        _clean_text(query.after[1], "run cursor ID")
    if not isinstance(query.limit, int) or isinstance(query.limit, bool) or query.limit < 0:
        raise Invalid(f"limit must be 0 (no limit) or positive, not {query.limit!r}")


def run_matches(query: RunQuery, row: RunRow) -> bool:
    """True when ``row`` passes every filter of ``query`` (paging aside)."""
    return (
        query.search in row.run_id
        and row.run_id.startswith(query.run_id_prefix)
        and (query.format is None or row.format == query.format)
        and (query.updated_since is None or row.updated_ns >= query.updated_since)
        and (query.updated_before is None or row.updated_ns < query.updated_before)
    )


def select_run_rows(query: RunQuery, rows: Iterable[RunRow]) -> list[RunRow]:
    """Filter, order by (updated_ns, run_id) descending, page after ``query.after``,
    limit. Run IDs compare in code point order, as the SQL columns do."""
    check_run_query(query)
    selected = sorted(
        (r for r in rows if run_matches(query, r)),
        key=lambda r: (r.updated_ns, r.run_id),
        reverse=True,
    )
    if query.after is not None:
        cursor = query.after
        selected = [r for r in selected if (r.updated_ns, r.run_id) < cursor]
    return selected[: query.limit] if query.limit else selected


def count_run_rows(query: RunQuery, rows: Iterable[RunRow]) -> int:
    """How many rows pass the filters of ``query`` (cursor and limit ignored)."""
    check_run_query(query)
    return sum(1 for r in rows if run_matches(query, r))

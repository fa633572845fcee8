"""What ``manage.py work`` and ``manage.py workflow`` share: the page's filter read from
a query string, the reads, and the API's serialisations (``--json`` prints exactly
what the API answers, less its ``next_url``), or a few columns as text."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.http import QueryDict

from console.urlstate import FilterError
from storage import StorageError

FILTER_HELP = "the page's URL filters as a query string, e.g. 'state=failed&kind=mail.send'"


def add_read_commands(parser: CommandParser, noun: str) -> None:
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help=f"a page of the {noun} list")
    listing.add_argument("filter", nargs="?", default="", help=FILTER_HELP)
    listing.add_argument("--after", default="", help="the previous page's next cursor")
    listing.add_argument("--size", default="", help="page size: 25, 50, 100 or 200")
    listing.add_argument("--json", action="store_true", help="the API's JSON")
    show = sub.add_parser("show", help=f"one {noun}")
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="the API's JSON")


def query(options: dict[str, Any]) -> QueryDict:
    """The list's query: the filter string, with ``--after`` and ``--size`` set."""
    data = QueryDict(options["filter"].lstrip("?"), mutable=True)
    for name in ("after", "size"):
        if options[name]:
            data[name] = options[name]
    return data


def as_command_error(exc: Exception) -> CommandError:
    if isinstance(exc, FilterError):
        return CommandError("; ".join(f"{k}: {v}" for k, v in exc.errors.items()))
    if isinstance(exc, StorageError):
        return CommandError(str(exc))
    raise exc


def dump(body: dict[str, Any]) -> str:
    return json.dumps(body, indent=2, ensure_ascii=False)


def when(ns: int | None) -> str:
    if not ns:
        return "-"
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S")


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Left-aligned columns, as wide as their widest cell."""
    rows = [list(map(str, r)) for r in rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    lines = [header, *rows]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )

"""The field and expression classes the storage migrations name, frozen (issue 30).

A migration must not import live project code: what it does would change when that
code does. These two classes are named in migrations (``BinaryCharField`` columns,
``JsonNanos`` expression indexes) and by the live models, which import them from here,
so model and migration state are one class and ``makemigrations`` sees no change.
This module is never edited: a change to either (another collation, another JSON
spelling) is a ``_frozen_v2`` beside it, the models switching to it, and the migration
that moves the schema. Its name starts with ``_``: Django's migration loader skips it.
It imports nothing but Django.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Func

# The record times that have an expression index (``JsonNanos``).
JSON_TIMES = frozenset({"received_at", "started_at", "created_at"})


class BinaryCharField(models.CharField):  # type: ignore[type-arg]
    """A CharField compared and sorted in binary (code point) order on every engine.

    Records list by ID, keyset pages break time ties by ID and ``kv_list`` range-scans
    keys: all assume binary order, as SQLite (BINARY) and the reference double (Python
    ``str``) compare. A PostgreSQL database's default collation is usually linguistic
    (en_US sorts "a" before "B"; glibc's also skips punctuation at first), so there
    the column gets COLLATE "C",
    which compares UTF-8 bytes: code point order. SQLite has no collation named "C",
    hence a field rather than ``db_collation``; the migration is the same on both.
    """

    def db_parameters(self, connection: BaseDatabaseWrapper) -> dict[str, Any]:
        params = super().db_parameters(connection)
        if connection.vendor == "postgresql":
            params["collation"] = "C"
        return params


class JsonNanos(Func):
    """A record time (nanoseconds) read from ``data``'s JSON, for expression indexes
    and the reads against them, which must spell it the same for the planner to use
    the index (``storage.orm.dialect.Dialect.json_nanos`` spells it so too; a test
    holds the two together)."""

    output_field = models.BigIntegerField()

    def __init__(self, name: str) -> None:
        super().__init__(F("data"))
        self.name = name

    def as_sql(  # type: ignore[override]
        self, compiler: Any, connection: BaseDatabaseWrapper, **extra: Any
    ) -> tuple[str, Any]:
        if self.name not in JSON_TIMES:
            raise ValueError(f"no JSON time index for {self.name!r}")
        column, params = compiler.compile(self.source_expressions[0])
        if connection.vendor == "postgresql":
            return f"(({column})::jsonb ->> '{self.name}')::bigint", params
        return f"json_extract({column}, '$.{self.name}')", params

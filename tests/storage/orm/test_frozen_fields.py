"""The frozen ``JsonNanos`` (storage/migrations/_frozen_v1.py, named by migrations and
the models) spells every JSON time as the dialect does: the reads that use the dialect
and the indexes the migrations made must stay the same SQL, or the planner drops the
index. On the engine of the run."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import F
from django.db.models.sql import Query

from storage.migrations._frozen_v1 import JSON_TIMES, JsonNanos
from storage.models import EventRow
from storage.orm.dialect import JSON_TIMES as DIALECT_TIMES
from storage.orm.dialect import dialect


@pytest.mark.parametrize("name", sorted(JSON_TIMES))
def test_the_frozen_json_time_is_the_dialects_spelling(name):
    query = Query(EventRow)
    compiler = query.get_compiler(connection=connection)
    column, _ = compiler.compile(F("data").resolve_expression(query))
    sql, params = JsonNanos(name).resolve_expression(query).as_sql(compiler, connection)
    assert sql == dialect(connection).json_nanos(column, name)
    assert list(params) == []


def test_the_frozen_times_are_the_dialects():
    assert JSON_TIMES == DIALECT_TIMES


def test_a_time_without_an_index_is_refused():
    query = Query(EventRow)
    compiler = query.get_compiler(connection=connection)
    with pytest.raises(ValueError, match="no JSON time index"):
        JsonNanos("updated_at").resolve_expression(query).as_sql(compiler, connection)

"""Every varchar column of the ORM backend has a rule in the shared rules (issue 20):
``storage.tx.fields.COLUMN_RULES`` for the contract's tables and
``storage.routed.rows.COLUMN_LIMITS`` for the routed ones, each limit in UTF-8 bytes at
most the column's width (PostgreSQL counts characters, each at least a byte). A column
added without a rule fails here, before PostgreSQL can refuse a value at commit as
``Unavailable``; the contract tests (``tests/storage/contract/test_reference_limits.py``)
prove each rule is enforced."""

from __future__ import annotations

from django.apps import apps
from django.db import models

from storage.records import ExecutionState, WaitState, WorkState
from storage.routed.enums import ALL_ENUMS
from storage.routed.rows import COLUMN_LIMITS
from storage.tx.fields import COLUMN_RULES


def char_columns() -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for model in apps.get_app_config("storage").get_models():
        for field in model._meta.get_fields():
            if isinstance(field, models.CharField):
                assert field.max_length is not None, f"{model.__name__}.{field.name}"
                found.setdefault(model._meta.db_table, {})[field.column] = field.max_length
    return found


def rule_of(table: str, column: str) -> int | None:
    if table.startswith("conduit_routed_"):
        return COLUMN_LIMITS.get(column)
    return COLUMN_RULES.get(table, {}).get(column)


def test_every_varchar_column_has_a_rule_its_column_can_hold() -> None:
    columns = char_columns()
    assert "conduit_work" in columns
    assert "conduit_routed_run" in columns

    missing = [f"{t}.{c}" for t, cs in columns.items() for c in cs if rule_of(t, c) is None]
    too_wide = [
        f"{t}.{c}: rule {rule_of(t, c)} bytes, column {width}"
        for t, cs in columns.items()
        for c, width in cs.items()
        if (rule_of(t, c) or 0) > width
    ]

    assert missing == []
    assert too_wide == []


def test_every_rule_names_a_column_that_exists() -> None:
    columns = char_columns()
    stale = [
        f"{t}.{c}" for t, cs in COLUMN_RULES.items() for c in cs if c not in columns.get(t, ())
    ]
    assert stale == []


def test_the_state_columns_hold_every_state_name() -> None:
    # The enum-backed columns' rules are the longest value the enums can write.
    states = max(len(s.value) for e in (WorkState, ExecutionState, WaitState) for s in e)
    assert states <= COLUMN_RULES["conduit_work"]["state"]
    routed = max(len(member.name) for enum in ALL_ENUMS for member in enum)
    assert routed <= COLUMN_LIMITS["status"]

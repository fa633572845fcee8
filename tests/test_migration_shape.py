"""Schema changes and data backfills in separate migrations (issue 30), from 0022 on:
a migration that runs Python (a backfill, or DDL spelled per engine) holds no other
operation, so a long backfill never sits in the same transaction as the schema change
it fills, each can be timed and retried alone, and a squash can keep the schema steps
and leave a backfill out. The migrations that shipped mixed are pinned here and are
not rewritten (storage/README.md, "Schema upgrades and record formats").

Engine-neutral: it reads source files, no database."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
APPS = ("storage", "console", "demo", "conduit")
# Shipped before the rule, applied on databases in use: left as they are.
MIXED_BEFORE_THE_RULE = {
    "storage/migrations/0001_initial.py",
    "storage/migrations/0008_triage_marks.py",
    "storage/migrations/0009_work_tally.py",
    "storage/migrations/0010_routed_workflow_facets.py",
    "storage/migrations/0011_execution_scope.py",
    "storage/migrations/0014_series_tally.py",
    "storage/migrations/0016_routed_workflow_tally.py",
    "storage/migrations/0021_event_keys.py",
    "console/migrations/0002_routed_authority.py",
    "console/migrations/0004_action_permissions.py",
}
# A squash runs on new databases only, where no backfill has anything to fill: it keeps
# the schema steps of what it replaces and the two Python steps that create something
# (the schema version row, the Events-by-actor index spelled per engine), no backfill
# (tests/storage/orm/test_squash.py checks it builds what its migrations build).
SQUASHES = {"storage/migrations/0001_squashed_0022_execution_live_started.py"}
CODE = {"RunPython"}


def operations(source: str) -> list[str]:
    """The operation names of a migration's ``operations`` list, in order."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "operations" for t in targets):
            assert isinstance(node, ast.Assign)
            assert isinstance(node.value, ast.List | ast.Tuple)
            for item in node.value.elts:
                assert isinstance(item, ast.Call)
                func = item.func
                names.append(func.attr if isinstance(func, ast.Attribute) else ast.unparse(func))
    return names


def mixed(source: str) -> bool:
    ops = set(operations(source))
    return bool(ops & CODE) and bool(ops - CODE)


def _migrations() -> dict[str, str]:
    found = {}
    for app in APPS:
        folder = REPO / app / "migrations"
        for path in sorted(folder.glob("[0-9]*.py")) if folder.is_dir() else []:
            found[str(path.relative_to(REPO))] = path.read_text()
    return found


def test_no_migration_since_the_rule_mixes_schema_and_backfill() -> None:
    migrations = _migrations()
    assert len(migrations) > 20
    assert all(operations(source) for source in migrations.values())
    now_mixed = {name for name, source in migrations.items() if mixed(source)}
    assert now_mixed - MIXED_BEFORE_THE_RULE - SQUASHES == set()
    # A pinned one that is gone or split was squashed or rewritten: look at it.
    assert MIXED_BEFORE_THE_RULE - now_mixed == set()


def test_the_check_tells_mixed_from_separate() -> None:
    head = "from django.db import migrations, models\nclass Migration(migrations.Migration):\n"
    both = head + (
        "    operations = [migrations.AddField('workrow', 'x', models.IntegerField(default=0)),"
        " migrations.RunPython(fill, migrations.RunPython.noop)]\n"
    )
    schema = head + "    operations = [migrations.AddIndex('workrow', index)]\n"
    backfill = head + "    operations = [migrations.RunPython(fill, elidable=False)]\n"
    assert mixed(both)
    assert not mixed(schema)
    assert not mixed(backfill)


def test_a_squash_creates_and_never_backfills() -> None:
    for name in SQUASHES:
        tree = ast.parse((REPO / name).read_text())
        python = {
            ast.unparse(node.args[0])
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "RunPython"
        }
        assert python == {"record_schema", "create_event_actor"}, name

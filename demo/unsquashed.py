"""Django's migration graph with the squashes set aside, for the tools that rebuild an
older schema (the upgrade tests, ``bench.migrate_time``).

``storage/migrations/0001_squashed_0022_execution_live_started.py`` replaces the 22
storage migrations before it. Django uses a squash whenever a database has applied all
of what it replaces or none of it, and then drops the replaced migrations from its
graph: on a new database, or on one the squash made, ``migrate storage 0020_...`` finds
no such migration. Inside ``unsquashed()`` every squash is treated as Django treats a
partly applied one: it leaves the graph and the migrations it replaces stay, so a
database can be taken back to any of them, or built through them one by one. What
that leaves in ``django_migrations`` is what plain ``migrate`` expects of a database
an older release made: it runs the rest one by one, and records the squash once all
of them are applied.

A deployment never needs this: it upgrades with ``migrate`` (docs/deploy.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db.migrations.loader import MigrationLoader


def _set_aside(loader: Any, key: tuple[str, str]) -> None:
    # What Django's MigrationLoader.replace_migration does for a partly applied squash.
    loader.replacements_progress[key] = True
    loader.applied_migrations.pop(key, None)
    loader.graph.remove_replacement_node(key, loader.replacements[key].replaces)


@contextmanager
def unsquashed() -> Iterator[None]:
    """Every ``MigrationLoader`` built inside (``migrate``, ``MigrationExecutor``) sees
    the replaced migrations, never a squash. Not thread-safe: it patches the class."""
    original = MigrationLoader.replace_migration
    MigrationLoader.replace_migration = _set_aside  # type: ignore[method-assign]
    try:
        yield
    finally:
        MigrationLoader.replace_migration = original  # type: ignore[method-assign]

"""Migrations never import live project code (issue 30): what a migration does to a
database that meets it late must not change when the code it would import does.

Every module of every project app's ``migrations`` package (the migrations and the
frozen modules kept for them, such as ``storage/migrations/_frozen_v1.py``) is parsed,
and every import in it, at any depth, must be the standard library, Django, or that
same ``migrations`` package.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
APPS = ("storage", "console", "demo", "conduit")


def _migration_modules() -> list[tuple[str, Path]]:
    return [
        (app, path)
        for app in APPS
        for path in sorted((REPO / app / "migrations").glob("*.py"))
        if (REPO / app / "migrations").is_dir()
    ]


def _imports(app: str, path: Path) -> list[tuple[int, str]]:
    package = f"{app}.migrations"
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            found.append((node.lineno, module))
    return found


def _allowed(app: str, module: str) -> bool:
    top = module.split(".")[0]
    own = f"{app}.migrations"
    return (
        top in sys.stdlib_module_names
        or top in ("__future__", "django")
        or module == own
        or module.startswith(own + ".")
    )


def test_migrations_import_only_django_the_standard_library_and_their_own_package():
    modules = _migration_modules()
    assert len(modules) > 20  # every app's migrations were found
    offenders = [
        f"{path.relative_to(REPO)}:{line}: imports {module}"
        for app, path in modules
        for line, module in _imports(app, path)
        if not _allowed(app, module)
    ]
    assert offenders == []


def test_the_check_catches_a_live_import(tmp_path):
    # The test's own negative control: the imports 0008 had before it was frozen.
    path = tmp_path / "0099_live.py"
    path.write_text(
        "import storage.models\n"
        "from storage import codec\n"
        "def backfill(apps, schema_editor):\n"
        "    from storage.meaning.triage import error_key\n"
        "from . import _frozen_v1\n"
    )
    refused = [m for _, m in _imports("storage", path) if not _allowed("storage", m)]
    assert refused == ["storage.models", "storage", "storage.meaning.triage"]

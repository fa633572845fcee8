"""Which tests touch no database engine: they run once (on SQLite's run), and `make
test` deselects them on PostgreSQL's (``-m "not engine_neutral"``).

A test is engine-neutral when nothing it runs can reach the configured database:

- no ``django_db`` mark and none of pytest-django's database fixtures (pytest-django
  refuses every in-process query of a test without one, so such a test cannot have
  used the engine unnoticed); the in-memory half of a contract case parametrised over
  backends qualifies, its ORM half (marked ``django_db``) does not;
- no mark of an engine's or another process's (sqlite_only, postgres_only, multiprocess,
  browser, deploy);
- and no other way in: none of the words below in the source of its module, of the
  modules that define its fixtures, or of the test-support modules those import (a
  child process on the configured database, a raw driver connection, Django's
  connections, the settings' engine choice). A word in a comment is enough to keep a
  test on both engines: a false "touches" costs one more run, a false "neutral" would
  drop a PostgreSQL run, so the test errs on the safe side.

A hand mark ``@pytest.mark.engine_neutral`` is allowed only where the same test would
pass this check; ``check`` refuses it elsewhere.
"""

from __future__ import annotations

import ast
import inspect
import io
import sys
import tokenize
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

MARK = "engine_neutral"
TESTS = Path(__file__).resolve().parents[1]

DB_MARKS = ("django_db", "sqlite_only", "postgres_only", "multiprocess", "browser", "deploy")
DB_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "django_db_setup",
        "live_server",
    }
)
# Ways to a database engine that pytest-django's guard does not see (it refuses every
# in-process connection of a test without the mark, in any thread): another process,
# a driver of its own, or a branch on the configured engine. Read in the code, not in
# comments or docstrings.
REACHES = (
    "subprocess",
    "Popen",
    "multiprocessing",
    "os.fork",
    "sys.executable",
    "manage.py",
    "pg-throwaway",
    "psycopg",
    "sqlite3",
    "DATABASE_URL",
    "DATABASES",
    "POSTGRES",
    "TEST_SQLITE_PATH",
    "TEST_DATABASE",
    "vendor",
    # The project's own code that starts processes (backups' pg_dump and fencing child,
    # the benchmarks' clients): a test that imports it is not neutral.
    "storage.durability",
    "from bench",
    "import bench",
)
# Read and found harmless: tests/storage/conftest.py names the ORM half's ID after the
# engine (settings.POSTGRES); the memory half never reads it.
HARMLESS = frozenset({("tests.storage.conftest", "POSTGRES")})


def touches_engine(item: pytest.Item) -> str | None:
    """Why ``item`` may touch a database engine, or None when it cannot."""
    for mark in DB_MARKS:
        if item.get_closest_marker(mark):
            return f"marked {mark}"
    names = set(getattr(item, "fixturenames", ()))
    if used := names & DB_FIXTURES:
        return f"uses {sorted(used)[0]}"
    modules = {getattr(item, "module", None)}
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info else ():
        for fixturedef in defs:
            modules.add(inspect.getmodule(fixturedef.func))
    for module in modules:
        if module is not None and (word := _reaches(module.__name__)):
            return word
    return None


@cache
def _reaches(name: str) -> str | None:
    """A REACHES word in the module ``name`` (if it is one of the suite's) or in a
    suite module it uses, or None."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        module = sys.modules.get(todo.pop())
        if module is None or module.__name__ in seen or not _ours(module.__name__):
            continue
        seen.add(module.__name__)
        if word := _word(module.__name__):
            return f"{word!r} in {module.__name__}"
        todo += _imports(module)
    return None


@cache  # each suite module is read once, not once per test module that reaches it
def _word(name: str) -> str | None:
    """The first REACHES word in the code of the suite module ``name``, or None."""
    source = Path(sys.modules[name].__file__ or "").read_text(encoding="utf-8")
    if not any(word in source for word in REACHES):
        return None  # not even in a comment: no need to tell code from comments
    code = _code(source)
    return next((w for w in REACHES if w in code and (name, w) not in HARMLESS), None)


@cache
def _ours(name: str) -> bool:
    file = getattr(sys.modules[name], "__file__", None)
    return file is not None and Path(file).resolve().is_relative_to(TESTS)


def mark(items: list[pytest.Item]) -> None:
    """Marks the engine-neutral tests and refuses a hand mark on one that is not."""
    for item in items:
        reason = touches_engine(item)
        if item.get_closest_marker(MARK):
            if reason:
                raise pytest.UsageError(f"{item.nodeid} is marked {MARK} but {reason}")
        elif reason is None:
            item.add_marker(MARK)


def _code(source: str) -> str:
    """A module's ``source`` less its comments and docstrings."""
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add((body[0].lineno, body[0].col_offset))
    kept = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            continue
        if token.type == tokenize.STRING and token.start in docstrings:
            continue
        kept.append(token.string)
    return " ".join(kept)


@cache
def _imports(module: ModuleType) -> list[str]:
    """The modules ``module`` imports (a name imported from a package may be a module)."""
    package = module.__name__ if hasattr(module, "__path__") else module.__package__ or ""
    names = []
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names

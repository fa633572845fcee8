"""Storage knows nothing of the project: no import of the project package or the apps
above it, no project variable name, no read of the environment. Settings decide and
storage reads settings or arguments (storage/README.md, "Settings")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

STORAGE = Path(__file__).resolve().parents[2] / "storage"
# The packages above storage: the project, and the apps built on storage.
ABOVE = ("conduit", "console", "demo", "bench")
# The one module allowed to hand the process environment to a child (its docstring
# says why), and only by copying it.
CHILD_ENVIRONMENT = STORAGE / "durability" / "children.py"


def sources() -> list[Path]:
    found = sorted(STORAGE.rglob("*.py"))
    assert len(found) > 20, "the storage package was not found"
    return found


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_storage_imports_nothing_above_it() -> None:
    upward = {
        f"{path.relative_to(STORAGE.parent)}: {name}"
        for path in sources()
        for name in imported(path)
        if name.split(".")[0] in ABOVE
    }
    assert upward == set()


def test_storage_names_no_project_variable() -> None:
    named = [
        f"{path.relative_to(STORAGE.parent)}:{number}"
        for path in sources()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "CONDUIT_" in line
    ]
    assert named == []


def test_storage_reads_no_environment_variable() -> None:
    reads = re.compile(r"\bos\.environ\b|\bgetenv\b|\benviron\.get\b|\bos\.environb\b")
    found = [
        f"{path.relative_to(STORAGE.parent)}:{number}"
        for path in sources()
        if path != CHILD_ENVIRONMENT
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if reads.search(line)
    ]
    assert found == []


def test_the_child_environment_is_only_copied_never_read_for_a_value() -> None:
    code = CHILD_ENVIRONMENT.read_text()
    uses = re.findall(r"os\.environ\S*", code)
    # The docstring names it once; the code copies it with .items() and nothing else.
    assert uses == ["os.environ``", "os.environ.items()"]

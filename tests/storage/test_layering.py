"""Storage's layering, checked from the source (``ast``) rather than ``sys.modules``, so
an import inside a function or under ``TYPE_CHECKING`` counts as an arrow too (the
cycle check leaves type-only imports out: they never run).

- Storage knows nothing of the project: no import of the project package or the apps
  above it, no project variable name, no read of the environment. Settings decide and
  storage reads settings or arguments (storage/README.md, "Settings").
- Storage reads bottom to top by floor: a module imports only from its own floor or
  below, and the floored modules form no import cycle (a lazy import back up a floor
  is still an arrow back up). Extend ``FLOORS`` when a folder gets its floor.
"""

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


# (module or package prefix, floor), first match wins: the floors of storage/README.md's
# map. The contract at the bottom, then what a selection means, the rules, the backends,
# the operations, durability and the composition root; the package face on top.
FLOORS: tuple[tuple[str, int], ...] = (
    ("storage.errors", 0),
    ("storage.records", 0),
    ("storage.clock", 0),
    ("storage.codec", 0),
    ("storage.api", 0),
    ("storage.pg_url", 0),
    ("storage.files", 0),
    ("storage.beneath", 0),
    # Each table's record class and live values: contract knowledge both backends use.
    ("storage.tables", 0),
    # The version log's records (storage.versions): contract, as records.py.
    ("storage.versions", 0),
    # Run records are records: their codec and query meaning sit with the contract.
    ("storage.run_records.records", 0),
    ("storage.run_records.codec", 0),
    ("storage.run_records.query", 0),
    ("storage.meaning", 1),
    ("storage.tx", 2),
    ("storage.readonly", 2),
    ("storage.memory", 3),
    ("storage.memory_versions", 3),
    ("storage.orm", 3),
    ("storage.models", 3),
    ("storage.migrations", 3),
    ("storage.artifacts", 3),
    ("storage.run_records", 3),
    # Issue 17's file mechanisms sit with the routed runs, above their store.
    ("storage.routed.paths", 3),
    ("storage.routed.workspace", 3),
    ("storage.routed.journal", 3),
    ("storage.routed.progress", 3),
    ("storage.routed.verify", 3),
    ("storage.routed", 3),
    ("storage.apps", 3),
    ("storage.ops", 4),
    ("storage.durability", 5),
    ("storage.default", 6),
    ("storage.tooling", 7),
    ("storage", 9),
    # The commands are callers of the package face, like any app above storage.
    ("storage.management", 10),
)


def floor_of(module: str) -> int | None:
    for prefix, floor in FLOORS:
        if module == prefix or (prefix != "storage" and module.startswith(prefix + ".")):
            return floor
    return None


def module_name(path: Path) -> str:
    parts = path.relative_to(STORAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(dotted: str) -> bool:
    base = STORAGE.parent.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def storage_imports(path: Path, *, typing_too: bool = True) -> set[str]:
    """Every ``storage`` module ``path`` imports, relative imports resolved; without
    ``typing_too``, those under ``if TYPE_CHECKING:`` are left out (they never run)."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if not typing_too and id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                found.add(sub if is_module(sub) else source)
    return {m for m in found if m == "storage" or m.startswith("storage.")}


def graph(*, typing_too: bool = True) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in sorted(STORAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        imports = storage_imports(path, typing_too=typing_too)
        edges[module_name(path)] = imports - {module_name(path)}
    return edges


def test_no_storage_module_imports_from_a_higher_floor() -> None:
    upward = []
    for module, imports in graph().items():
        floor = floor_of(module)
        if floor is None or module == "storage":
            continue
        for target in sorted(imports):
            target_floor = floor_of(target)
            if target_floor is None or target_floor > floor:
                upward.append(f"{module} (floor {floor}) -> {target} (floor {target_floor})")
    assert upward == [], "imports running back up a floor:\n" + "\n".join(upward)


def test_the_floored_modules_form_no_import_cycle() -> None:
    # A type-only import back (a hook annotated with its backend's Tx) never runs, so
    # it makes no cycle; it still counts as an arrow for the floors above.
    runtime = graph(typing_too=False)
    edges = {m: {t for t in ts if floor_of(t) is not None} for m, ts in runtime.items()}
    edges = {m: ts for m, ts in edges.items() if floor_of(m) is not None}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_walk_finds_the_rules_importing_the_meaning() -> None:
    """Guards the two floor tests: the walk resolves relative imports, so it sees the
    rules' hooks import the Event scan, and it floors the modules it is meant to judge."""
    modules = graph()
    assert "storage.meaning.events" in modules["storage.tx.rows"]
    assert "storage.meaning.query" in modules["storage.meaning.series"]
    assert floor_of("storage.tx.work") == 2
    assert floor_of("storage.orm") == 3
    assert floor_of("storage.migrations.0001_initial") == 3

"""Imports go at the top of a module, unless one inside a function keeps a heavy library off a
start path.

A ``mesh`` command, a service and a detector process start by importing their modules; an import
inside a function runs only when that function does. That is worth the surprise only where it
keeps a library that costs real start time (``HEAVY``, measured below) off the import of a module
that does not otherwise load it, in the folders that have a start path at all. Everywhere else an
import inside a function only hides a dependency (or a cycle, which ``make lint`` forbids), so
this test names each such import and says to move it to the top.

The import graph is built from the source (module-level imports only: not those inside functions
or under ``if TYPE_CHECKING:``), so the check needs no import and runs in about a second.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "shared", "services", "detectors", "tools", "hosting", "control", "testkit", "bench", "chaos",
)  # fmt: skip

#: Libraries (or parts of one) whose import costs start time the ``mesh`` command does not
#: otherwise pay: cold ``python -X importtime -c "import X"`` on the 2-core machine, best of three
#: (2026-11-27): docker 97 ms, pyspark 141, pyarrow 88, requests 81 (urllib3 58 of it), aiohttp
#: 174, faust 30, fastavro 23, yaml 13; OpenTelemetry's API 25, its SDK 47, the OTLP exporter 85
#: (SDK, protobuf and requests included): a service that does not trace loads only the API.
#: confluent_kafka (41 ms) is not here: every command and service talks to the broker.
HEAVY = frozenset(
    {"docker", "pyspark", "pyarrow", "requests", "urllib3", "aiohttp", "faust", "mode", "fastavro",
     "yaml", "opentelemetry", "opentelemetry.sdk", "opentelemetry.exporter", "google.protobuf"}
)  # fmt: skip

#: Folders whose modules are a start path (the ``mesh`` command, the services, the detectors and
#: the tools ``mesh`` runs). bench/, chaos/ and testkit/ start once per run: no import waits there.
START_PATHS = frozenset({"shared", "services", "detectors", "tools", "hosting", "control"})


@dataclass(frozen=True)
class InnerImport:
    """An import statement inside a function."""

    module: str
    line: int
    targets: tuple[str, ...]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _sources() -> dict[str, Path]:
    return {
        _module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> tuple[str, ...]:
    """The modules an import statement loads: the named ones and, for ``from X import Y``, X.Y
    when that is a module of the project."""
    if isinstance(node, ast.Import):
        return tuple(alias.name for alias in node.names)
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    submodules = (f"{base}.{alias.name}" for alias in node.names)
    return (base, *(name for name in submodules if name in _sources()))


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: Path, module: str) -> tuple[list[str], list[InnerImport]]:
    """The modules ``module`` loads at import, and its imports inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    at_top: list[str] = []
    inner: list[InnerImport] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                targets = _targets(child, module, is_package)
                if in_function:
                    inner.append(InnerImport(module, child.lineno, targets))
                else:
                    at_top.extend(targets)
            function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            walk(child, in_function or function)

    walk(tree, in_function=False)
    return at_top, inner


@cache
def _graph() -> tuple[dict[str, list[str]], list[InnerImport]]:
    edges: dict[str, list[str]] = {}
    inner: list[InnerImport] = []
    for module, path in _sources().items():
        edges[module], found = _imports(path, module)
        inner.extend(found)
    return edges, inner


def _with_parents(name: str) -> list[str]:
    """Importing a.b.c runs a/__init__, a/b/__init__ and a/b/c."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def heavy_loaded_by(module: str) -> frozenset[str]:
    """The HEAVY libraries importing ``module`` loads, following module-level imports."""
    edges, _ = _graph()
    seen: set[str] = set()
    heavy: set[str] = set()
    stack = _with_parents(module)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in HEAVY:
            heavy.add(name)
        elif name in edges:
            for target in edges[name]:
                stack.extend(_with_parents(target))
    return frozenset(heavy)


def misplaced_imports() -> list[str]:
    """Each import inside a function that keeps nothing heavy off a start path."""
    _, inner = _graph()
    misplaced = []
    for found in inner:
        folder = found.module.split(".")[0]
        kept_off = set().union(*(heavy_loaded_by(t) for t in found.targets))
        kept_off -= heavy_loaded_by(found.module)
        if folder not in START_PATHS or not kept_off:
            where = _sources()[found.module].relative_to(ROOT)
            misplaced.append(f"{where}:{found.line} imports {', '.join(found.targets)}")
    return misplaced


def test_imports_inside_functions_keep_a_heavy_library_off_a_start_path() -> None:
    misplaced = misplaced_imports()
    assert not misplaced, "move these imports to the top of their module:\n" + "\n".join(misplaced)


def test_the_mesh_command_starts_without_the_heavy_libraries() -> None:
    """What the lazy imports in control/ are for: ``mesh --help`` and every verb's parser load
    none of HEAVY (checked in a fresh interpreter, as a user's shell starts it)."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, control.cli.main; print(*sorted(sys.modules))"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    heavy = sorted(set(loaded) & HEAVY)
    assert heavy == [], f"mesh loads {heavy} before it parses its arguments"


def test_the_graph_follows_module_level_imports_through_the_project() -> None:
    """The check is only as good as its graph: the history's query module reaches pyspark
    directly and fastavro only through another module; the mesh command reaches neither."""
    assert heavy_loaded_by("services.history.query") >= {"pyspark", "fastavro"}
    assert "fastavro" not in {name.split(".")[0] for name in _graph()[0]["services.history.query"]}
    assert heavy_loaded_by("control.cli.main") == frozenset()

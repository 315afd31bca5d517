"""The package's layers import only downwards, and no two modules import each other.

Every ``import`` in ``src/svcrest`` counts, wherever it is written: at the top, inside a
function, or under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "svcrest"

#: Layers from the bottom up; a module may import its own layer and the ones below.
LAYERS: list[tuple[str, ...]] = [
    (
        "svcrest.constants",
        "svcrest.types",
        "svcrest.dates",
        "svcrest.syncrun",
        "svcrest.blocking",
        "svcrest.bounded",
        "svcrest.chains",
        "svcrest.instances",
    ),
    ("svcrest.http",),
    ("svcrest.hooks",),
    ("svcrest.rest",),
    ("svcrest.store",),
    ("svcrest.auth",),
    ("svcrest.abilities",),
    ("svcrest.site",),
    ("svcrest.serve",),
    ("svcrest.app",),
    ("svcrest.demo", "svcrest.cli", "svcrest", "svcrest.__main__"),
]
#: The client stands alone: it talks HTTP to any server and imports nothing of the server.
CLIENT = "svcrest.client"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, tree: ast.AST) -> set[str]:
    """The svcrest modules ``name``'s source imports (submodules resolved to themselves)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = name.split(".")
                if MODULES[name].name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module
                for alias in node.names
            ]
        else:
            continue
        found.update(target for target in targets if target in MODULES and target != name)
    return found


GRAPH = {name: imported(name, ast.parse(path.read_text())) for name, path in MODULES.items()}


def layer_of(name: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if name == prefix or name.startswith(prefix + "."):
                if prefix == "svcrest" and name != "svcrest":
                    continue  # the package itself, not everything under it
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), index)
    return None if best is None else best[1]


def test_every_module_has_a_layer() -> None:
    unplaced = [
        name
        for name in MODULES
        if layer_of(name) is None and not name.startswith(CLIENT) and name != "svcrest.static"
    ]
    assert unplaced == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_go_downwards(name: str) -> None:
    if name.startswith(CLIENT):
        assert {target for target in GRAPH[name] if not target.startswith(CLIENT)} == set()
        return
    own = layer_of(name)
    assert own is not None
    upward = {
        target
        for target in GRAPH[name]
        if target.startswith(CLIENT) or (layer_of(target) or 0) > own
    }
    assert upward == set(), f"{name} imports a higher layer"


def test_nothing_below_the_app_imports_it() -> None:
    app_layer = layer_of("svcrest.app")
    assert app_layer is not None
    importers = {name for name, targets in GRAPH.items() if "svcrest.app" in targets}
    assert {name for name in importers if (layer_of(name) or 0) <= app_layer} == set()


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_cycles() -> None:
    assert find_cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"]]

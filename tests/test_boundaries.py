"""Modules share only public names: no module of ``src/svcrest`` imports a ``_private`` name
(or a name from a ``_private`` module) of another svcrest module.

A name with a leading underscore is its module's business; when a second module needs it,
it gets a public name in its home module. Every import counts, wherever it is written.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from tests.test_layers import GRAPH, MODULES

ROOT = Path(__file__).resolve().parent.parent
#: (importing module, imported module, name) triples allowed to cross; keep it empty.
ALLOWED: frozenset[tuple[str, str, str]] = frozenset()


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def resolved(name: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from … import`` in module ``name`` reads from."""
    if not node.level:
        return node.module or ""
    base = name.split(".")
    if MODULES[name].name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def private_imports(name: str, tree: ast.AST) -> list[tuple[str, str, str]]:
    """``(name, module, imported name)`` for each private svcrest name ``name``'s source
    imports from another module; a name from a private module counts as private."""
    found: list[tuple[str, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = resolved(name, node)
            if module != "svcrest" and not module.startswith("svcrest."):
                continue
            private_module = any(is_private(part) for part in module.split("."))
            found.extend(
                (name, module, alias.name)
                for alias in node.names
                if (private_module or is_private(alias.name)) and module != name
            )
        elif isinstance(node, ast.Import):
            found.extend(
                (name, alias.name, "")
                for alias in node.names
                if alias.name.startswith("svcrest.")
                and any(is_private(part) for part in alias.name.split("."))
            )
    return [triple for triple in found if triple not in ALLOWED]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_name_crosses_a_module(name: str) -> None:
    assert private_imports(name, ast.parse(MODULES[name].read_text())) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from svcrest.http.tags import _quoted", ["svcrest.http.tags:_quoted"]),
        ("from .tags import _quoted", ["svcrest.rest.tags:_quoted"]),
        ("from svcrest.rest._stub import helper", ["svcrest.rest._stub:helper"]),
        ("import svcrest.rest._stub", ["svcrest.rest._stub:"]),
        ("def f():\n    from svcrest.hooks import _later", ["svcrest.hooks:_later"]),
        ("from svcrest.http.tags import quoted, __all__", []),
        ("from collections import _chain", []),
    ],
    ids=["absolute", "relative", "private-module", "import", "in-a-function", "public", "stdlib"],
)
def test_the_check_finds_private_imports(
    source: str, expected: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(MODULES, "svcrest.rest.x", MODULES["svcrest.rest.guard"])
    found = private_imports("svcrest.rest.x", ast.parse(source))
    assert [f"{module}:{imported}" for importer, module, imported in found] == expected
    assert {importer for importer, _, _ in found} <= {"svcrest.rest.x"}


ROUTING = "svcrest.rest.routing"


def test_what_routing_builds_on_imports_nothing_of_routing() -> None:
    """The modules the route table calls (the guard, conditional requests, typed callbacks…)
    sit under it: none reaches back into ``routing`` (not for its error either)."""
    under = {
        target
        for name, targets in GRAPH.items()
        if name.startswith(ROUTING)
        for target in targets
        if not target.startswith(ROUTING)
    }
    assert "svcrest.rest.guard" in under
    back = {
        name: sorted(target for target in GRAPH[name] if target.startswith(ROUTING))
        for name in sorted(under)
    }
    assert {name: targets for name, targets in back.items() if targets} == {}


def test_route_definition_error_lives_outside_routing() -> None:
    from svcrest.rest.definition_errors import RouteDefinitionError
    from svcrest.rest.routing.definitions import RoutePatternError

    assert RouteDefinitionError.__module__ == "svcrest.rest.definition_errors"
    assert issubclass(RoutePatternError, RouteDefinitionError)


def test_no_function_is_over_mccabe_12() -> None:
    """ruff's C901 enforces it in ``make lint`` (src, tests, bench, the tutorial); this fails
    when the rule is switched off, loosened, or silenced for one function."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["ruff"]["lint"]
    assert "C90" in config["select"]
    assert config["mccabe"]["max-complexity"] == 12
    assert not any("C90" in codes for codes in config.get("per-file-ignores", {}).values())
    silenced = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("src", "tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        # (not in a hidden folder: bench/.env, the benchmarks' own venv, holds other projects)
        if not any(part.startswith(".") for part in path.relative_to(ROOT).parts)
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if re.search(r"noqa:[^#]*\bC90", line)
    ]
    assert silenced == []

"""Which build of the hot modules the tests run: pure Python unless ``make test-compiled``.

The mypyc build hook (``pyproject.toml``) compiles the modules it lists; ``make test`` must
test their Python source (a stale compiled module beside it would shadow it) and
``make test-compiled`` (``SVCREST_EXPECT_COMPILED=1``) the compiled ones.
"""

from __future__ import annotations

import importlib
import os
import tomllib
from pathlib import Path

from svcrest.rest.mypyc_stub import mypyc_attr

ROOT = Path(__file__).resolve().parent.parent


def _compiled_modules() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    hook = config["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["mypyc"]
    assert hook["enable-by-default"] is False  # a plain build stays pure Python
    return [
        path.removeprefix("/src/").removesuffix(".py").replace("/", ".") for path in hook["include"]
    ]


def test_the_expected_build_of_the_hot_modules_is_loaded() -> None:
    compiled = os.environ.get("SVCREST_EXPECT_COMPILED") == "1"
    modules = _compiled_modules()
    assert "svcrest.rest.pipeline" in modules
    for name in modules:
        path = str(importlib.import_module(name).__file__)
        assert path.endswith(".py") != compiled, (name, path)


def test_the_stand_in_decorator_changes_nothing() -> None:
    class Plain:
        pass

    assert mypyc_attr(allow_interpreted_subclasses=True)(Plain) is Plain

"""The API reference documents exactly the public names: every name of ``svcrest.__all__``
has its ``::: svcrest.<name>`` block on ``docs/reference/svcrest.md`` (and the same for
``svcrest.client``), and every block names something importable. A name added to a package's
``__all__`` needs only its reference line."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"
#: A public package and the reference page of its ``__all__``.
PAGES = {"svcrest": "svcrest.md", "svcrest.client": "client.md"}
BLOCK = re.compile(r"^::: ([A-Za-z_][\w.]*)\s*$", re.MULTILINE)


def blocks(page: str) -> list[str]:
    """The dotted paths of the ``:::`` blocks of a reference page."""
    return BLOCK.findall((REFERENCE / page).read_text())


def resolve(path: str) -> object:
    """The object a dotted path names (the longest importable module, then attributes)."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for name in parts[split:]:
            found = getattr(found, name)
        return found
    raise AssertionError(f"nothing importable at {path}")


@pytest.mark.parametrize(("package", "page"), PAGES.items())
def test_the_reference_documents_every_public_name(package: str, page: str) -> None:
    public = set(importlib.import_module(package).__all__)
    prefix = package + "."
    documented = {
        path.removeprefix(prefix)
        for path in blocks(page)
        if path.startswith(prefix) and "." not in path.removeprefix(prefix)
    }
    assert sorted(public - documented) == [], f"add a '::: {prefix}<name>' line to {page}"
    assert sorted(documented - public) == [], f"{page} documents names not in __all__"


@pytest.mark.parametrize("page", sorted(path.name for path in REFERENCE.glob("*.md")))
def test_every_block_names_an_importable_object(page: str) -> None:
    paths = blocks(page)
    assert paths
    for path in paths:
        resolve(path)


def test_the_serializers_exception_is_public_where_the_reference_says() -> None:
    # A serializer's encode raises it; the reference names it with Serializer's module.
    assert "svcrest.http.serializers.UnencodableValue" in blocks("svcrest.md")
    serializers = importlib.import_module("svcrest.http.serializers")
    assert "UnencodableValue" in serializers.__all__
    assert issubclass(serializers.UnencodableValue, TypeError)


#: Each of the five rules the clients guide names, and the shared URL case that pins
#: svcrest's choice (tests/vectors/proxy_urls.json, run by both proxies).
EXT_RULES = {
    "1. A record being created that already has an id": "create of a record with an id uses it",
    "2. An id with reserved characters": "id with a slash and a space is percent-encoded",
    "3. The id parameter (`id_param`) when the id is in the path": (
        "the id parameter is dropped when the id is in the path"
    ),
    "4. A filter's `operator`": "filters are JSON-encoded, operator when given",
    "5. A proxy URL with a query string or fragment": "existing query string and fragment",
}


def test_the_five_ext_rules_are_named_and_pinned_by_url_cases() -> None:
    guide = (REFERENCE.parent / "guides" / "clients.md").read_text()
    section = guide.split("### Which Ext JS\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"\| \d\. ", line)]
    assert len(rows) == 5
    vectors = json.loads(
        (REFERENCE.parents[1] / "tests" / "vectors" / "proxy_urls.json").read_text()
    )["vectors"]
    names = {vector["name"] for vector in vectors}
    for row, (rule, case) in zip(rows, EXT_RULES.items(), strict=True):
        assert row.startswith(f"| {rule}"), row
        assert case in names

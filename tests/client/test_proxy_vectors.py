"""The shared vectors of tests/vectors/proxy_urls.json, run against the Python RestProxy.

tests/js/proxy.test.mjs runs the same vectors against svc-rest.mjs, so the two proxies cannot
drift apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from svcrest.client import Operation, RestProxy

VECTORS_FILE = Path(__file__).resolve().parent.parent / "vectors" / "proxy_urls.json"

#: The JavaScript option names (camelCase) mapped to RestProxy's keyword names.
OPTION_NAMES = {
    "appendId": "append_id",
    "format": "format",
    "batchActions": "batch_actions",
    "actionMethods": "action_methods",
    "noCache": "no_cache",
    "cacheString": "cache_string",
    "pageParam": "page_param",
    "startParam": "start_param",
    "limitParam": "limit_param",
    "sortParam": "sort_param",
    "filterParam": "filter_param",
    "groupParam": "group_param",
    "directionParam": "direction_param",
    "simpleSortMode": "simple_sort_mode",
    "simpleGroupMode": "simple_group_mode",
    "idParam": "id_param",
    "idProperty": "id_property",
    "extraParams": "extra_params",
    "api": "api",
}
OPERATION_KEYS = {
    "action",
    "records",
    "id",
    "params",
    "page",
    "start",
    "limit",
    "sorters",
    "filters",
    "grouper",
}
VECTOR_KEYS = {"name", "proxyUrl", "options", "operation", "method", "url"}


def load_vectors() -> list[dict[str, Any]]:
    document = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
    vectors: list[dict[str, Any]] = document["vectors"]
    return vectors


VECTORS = load_vectors()


def proxy_for(vector: dict[str, Any]) -> RestProxy:
    """The RestProxy a vector describes, its fixed clock included."""
    options = dict(vector["options"])
    clock = options.pop("clock", None)
    keywords = {OPTION_NAMES[name]: value for name, value in options.items()}
    if clock is not None:
        keywords["clock"] = lambda: clock
    return RestProxy(vector["proxyUrl"], **keywords)


def test_the_vector_file_is_well_formed() -> None:
    names = [vector["name"] for vector in VECTORS]
    assert len(VECTORS) >= 40
    assert len(set(names)) == len(names)
    for vector in VECTORS:
        assert set(vector) == VECTOR_KEYS, vector["name"]
        assert set(vector["options"]) <= set(OPTION_NAMES) | {"clock"}, vector["name"]
        assert set(vector["operation"]) <= OPERATION_KEYS, vector["name"]


@pytest.mark.parametrize("vector", VECTORS, ids=[vector["name"] for vector in VECTORS])
def test_vector(vector: dict[str, Any]) -> None:
    proxy = proxy_for(vector)
    operation = Operation(**vector["operation"])
    assert proxy.get_method(operation) == vector["method"]
    assert proxy.build_url(operation) == vector["url"]

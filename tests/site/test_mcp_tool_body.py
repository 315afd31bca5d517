"""A ``tools/call`` answer written by hand (:func:`svcrest.site.mcp.tools.tool_result_body`)
is byte for byte the JSON-RPC response of :func:`svcrest.site.mcp.tools.tool_result`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from svcrest import Response, RestError
from svcrest.site.mcp.protocol import result_body
from svcrest.site.mcp.tools import Tool, tool_result, tool_result_body


def _tool(wrap_output: bool, output_schema: dict[str, Any] | None) -> Tool:
    tool = Tool("t", "A tool.", {"type": "object"})
    tool.wrap_output = wrap_output
    tool.output_schema = output_schema
    return tool


_ANSWERS = [
    Response({"name": "bench", "description": 'a "site" é\n'}),
    Response([1, 2.5, None, True]),
    Response("text"),
    Response({"when": datetime(2026, 11, 28, 12, 0, tzinfo=UTC), "list": [{"a": []}]}),
    Response.from_error(RestError("rest_forbidden", "No.", {"status": 403})),
]


@pytest.mark.parametrize("ident", [2, "call-7", None])
@pytest.mark.parametrize(
    ("wrap_output", "output_schema"),
    [(False, {"type": "object"}), (True, {"type": "object"}), (True, None)],
)
@pytest.mark.parametrize("response", _ANSWERS, ids=range(len(_ANSWERS)))
def test_the_body_is_the_result_body(
    ident: str | int | None,
    wrap_output: bool,
    output_schema: dict[str, Any] | None,
    response: Response,
) -> None:
    tool = _tool(wrap_output, output_schema)
    expected = result_body(ident, tool_result(tool, response))
    assert tool_result_body(ident, tool, response) == expected
    assert orjson.loads(expected)["id"] == ident


def test_an_object_result_is_structured_content_and_text() -> None:
    body = tool_result_body(4, _tool(False, {"type": "object"}), Response({"a": "b"}))
    assert body == (
        b'{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{\\"a\\":\\"b\\"}"}],'
        b'"structuredContent":{"a":"b"},"isError":false}}'
    )

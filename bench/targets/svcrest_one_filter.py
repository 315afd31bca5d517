"""An experiment, not a way to serve: the ``svcrest`` target with the three default filters
of its path (``rest_send_allow_header``, ``rest_filter_response_fields``,
``rest_send_cors_headers``) replaced by one ``rest_post_dispatch`` filter that sets the
lines they set for the benchmark's request (``Allow: GET`` and the CORS lines of
``Origin: http://example.com``): the same bytes. Against ``svcrest``, it measures the most
that preparing the default filters ahead could gain on a read (``bench/RESULTS.md``,
session 11).
"""

from __future__ import annotations

from typing import Any

from svcrest_plain import app

from svcrest.rest.defaults import (
    cors_lines,
    rest_filter_response_fields,
    rest_send_allow_header,
    rest_send_cors_headers,
)

LINES = cors_lines("http://example.com")


def bench_lines(response: Any, server: Any, request: Any) -> Any:
    """The lines the three default filters set for the benchmark's request."""
    response.set_header_line("Allow", "GET")
    response.add_header_lines(LINES)
    return response


app.rest_get_server()  # the defaults are registered with the server
for hook, default in (
    ("rest_post_dispatch", rest_send_allow_header),
    ("rest_post_dispatch", rest_filter_response_fields),
    ("rest_pre_serve_request", rest_send_cors_headers),
):
    if not app.hooks.remove_filter(hook, default):
        raise SystemExit(f"svcrest_one_filter: {default.__name__} is not on {hook}")
app.hooks.add_filter("rest_post_dispatch", bench_lines)

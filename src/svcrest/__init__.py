"""svcrest: WordPress-style namespaced, self-describing REST APIs on a typed Python stack.

The names below are the public API; everything else may change.
"""

from __future__ import annotations

from svcrest.app import App, DoingItWrong
from svcrest.constants import REST_API_REL, REST_API_VERSION
from svcrest.dates import rest_get_date_with_gmt, rest_parse_date
from svcrest.hooks import Hooks
from svcrest.http.context import current_user, is_rest_request
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response, rest_ensure_response
from svcrest.http.serializers import Serializer, msgpack_serializer
from svcrest.rest.arg import Arg
from svcrest.rest.paginate import paginate
from svcrest.rest.resources.context_filter import (
    rest_filter_response_by_context,
    rest_is_field_included,
)
from svcrest.rest.resources.controller import RestController
from svcrest.rest.resources.endpoint_args import rest_get_endpoint_args_for_schema
from svcrest.rest.routing.definitions import public
from svcrest.rest.server import RestServer
from svcrest.store.store_collection import StoreCollection

__all__ = [
    "App",
    "Arg",
    "DoingItWrong",
    "Hooks",
    "REST_API_REL",
    "REST_API_VERSION",
    "Request",
    "Response",
    "RestController",
    "RestError",
    "RestServer",
    "Serializer",
    "StoreCollection",
    "current_user",
    "is_rest_request",
    "msgpack_serializer",
    "paginate",
    "public",
    "rest_ensure_response",
    "rest_filter_response_by_context",
    "rest_get_date_with_gmt",
    "rest_get_endpoint_args_for_schema",
    "rest_is_field_included",
    "rest_parse_date",
]

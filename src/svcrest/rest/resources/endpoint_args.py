"""A handler's ``args`` made from a resource's schema: WordPress's
``rest_get_endpoint_args_for_schema``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["CREATABLE", "EDITABLE", "rest_get_endpoint_args_for_schema"]

#: WordPress's ``WP_REST_Server::CREATABLE`` and ``EDITABLE`` method strings.
CREATABLE = "POST"
EDITABLE = "POST, PUT, PATCH"

#: The schema keywords an argument keeps (WordPress's ``rest_get_allowed_schema_keywords``
#: less ``default`` and ``required``, which only creation keeps).
_KEPT = (
    "title", "description", "type", "format", "enum", "items", "properties",
    "additionalProperties", "patternProperties", "minProperties", "maxProperties", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
    "pattern", "minItems", "maxItems", "uniqueItems", "anyOf", "oneOf",
)  # fmt: skip


def _is_creatable(method: str) -> bool:
    return ",".join(part.strip().upper() for part in method.split(",")) == CREATABLE


def rest_get_endpoint_args_for_schema(
    schema: Mapping[str, Any], method: str = CREATABLE
) -> dict[str, dict[str, Any]]:
    """The ``args`` of an endpoint writing the resource ``schema`` describes, as WordPress's
    ``rest_get_endpoint_args_for_schema``: one argument per property that is not
    ``readonly``, with the property's schema keywords (``context``, ``readonly`` and unknown
    keys dropped); ``default`` and ``required`` kept only for creation (``method`` ``"POST"``,
    WordPress's ``CREATABLE``; ``"POST, PUT, PATCH"`` is ``EDITABLE``); a property's
    ``arg_options`` merged over the result (its ``required`` and ``default`` too only for
    creation)."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    creatable = _is_creatable(method)
    args: dict[str, dict[str, Any]] = {}
    for name, params in properties.items():
        if not isinstance(params, Mapping) or params.get("readonly"):
            continue
        arg: dict[str, Any] = {}
        if creatable and "default" in params:
            arg["default"] = params["default"]
        if creatable and params.get("required"):
            arg["required"] = True
        for keyword in _KEPT:
            if keyword in params:
                arg[keyword] = params[keyword]
        options = params.get("arg_options")
        if isinstance(options, Mapping):
            arg.update(
                (key, value)
                for key, value in options.items()
                if creatable or key not in ("required", "default")
            )
        args[str(name)] = arg
    return args

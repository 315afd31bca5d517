"""JSON-schema subset validation and sanitising of request arguments, with WordPress semantics.

``validate_value`` checks a value against an argument schema and returns ``None`` or a
``RestError`` carrying WordPress's error code and message; ``sanitize_value`` coerces a value
(often a query-string string) to the declared type. Query-string forms are accepted the way
WordPress accepts them: ``"5"`` is an integer, ``"1.5"`` a number, ``"true"``/``"false"``/
``"1"``/``"0"`` booleans, ``"a,b c"`` an array and ``""`` an (empty) object.

Supported keywords: ``type`` (one name or a list, first matching type wins), ``enum``,
``minimum``/``maximum`` with ``exclusiveMinimum``/``exclusiveMaximum`` (boolean draft-4 or
numeric draft-6 form), ``multipleOf``, ``minLength``/``maxLength`` (code points), ``pattern``
(searched, not anchored), ``format`` (``date-time``, ``email``, ``uri``, ``uuid``, ``ip``,
``hex-color``; others pass), ``items``, ``minItems``, ``maxItems``, ``uniqueItems``,
``properties`` (with per-property ``required: true``), ``required`` (draft-4 list),
``additionalProperties``, ``patternProperties``, ``minProperties``, ``maxProperties``,
``anyOf`` and ``oneOf``.

``quick_check`` and ``quick_sanitizer`` compile, once per schema, the fast answer for the
values a plain schema certainly accepts and the sanitised form of the values it is sure of
(``svcrest.rest.schema.quick``); every other value gets the full check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from svcrest.rest.schema.checks import sanitize_value, validate_value
from svcrest.rest.schema.common import HELP_KEYWORDS
from svcrest.rest.schema.quick import (
    UNSURE,
    accepted_type,
    quick_check,
    quick_sanitizer,
    unchanged_type,
)

__all__ = [
    "UNSURE",
    "accepted_type",
    "quick_check",
    "quick_sanitizer",
    "sanitize_value",
    "schema_keywords_for_help",
    "unchanged_type",
    "validate_value",
]


def schema_keywords_for_help(arg: Mapping[str, Any]) -> dict[str, Any]:
    """The part of an argument definition shown in OPTIONS help data.

    ``required`` (a bool, default ``False``) first, then the JSON-schema keywords the argument
    defines, in its own order; callbacks and unknown keys are dropped.
    """
    if not isinstance(arg, Mapping):
        return {"required": False}
    help_data: dict[str, Any] = {"required": bool(arg.get("required", False))}
    for key, value in arg.items():
        if isinstance(key, str) and key in HELP_KEYWORDS:
            help_data[key] = value
    return help_data

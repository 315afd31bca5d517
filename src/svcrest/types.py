"""Shared type aliases."""

from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["JSON"]

#: Any value orjson can encode: the shape of request and response data.
JSON: TypeAlias = Any

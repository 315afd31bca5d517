"""Fixed values of the API."""

from __future__ import annotations

__all__ = ["REST_API_REL", "REST_API_VERSION"]

#: The API version (spec 9).
REST_API_VERSION = "2.0"
#: The link relation that advertises the API root (spec 4.7's {rel_uri}).
REST_API_REL = "https://api.w.org/"

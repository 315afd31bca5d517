"""Fixed values of the API."""

from __future__ import annotations

__all__ = ["REST_API_REL", "REST_API_VERSION"]

#: The API version (WordPress's ``REST_API_VERSION``).
REST_API_VERSION = "2.0"
#: The link relation that advertises the API root (as WordPress's discovery does).
REST_API_REL = "https://api.w.org/"

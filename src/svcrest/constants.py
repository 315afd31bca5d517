"""Fixed values of the API."""

from __future__ import annotations

__all__ = ["INT64_MAX", "INT64_MIN", "REST_API_REL", "REST_API_VERSION"]

#: The API version (WordPress's ``REST_API_VERSION``).
REST_API_VERSION = "2.0"
#: The link relation that advertises the API root (as WordPress's discovery does).
REST_API_REL = "https://api.w.org/"
#: The range of a signed 64-bit integer: PHP's integers (WordPress's ``PHP_INT_MIN`` and
#: ``PHP_INT_MAX``), and the ``BIGINT`` columns of the stores.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

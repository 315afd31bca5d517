"""The error of a route definition that cannot work, raised when the route is registered.

Every check of what ``register_rest_route`` is given raises it: the handlers, their methods,
arguments, ``db_timeout`` and typed callbacks, the route pattern (``svcrest.rest.routing``),
and the route options other parts of the REST layer read (``rate_limit`` and
``idempotency``, ``etag_callback``). ``App`` turns it
into WordPress's ``_doing_it_wrong`` notice (a ``DoingItWrong`` warning) and a False return,
so a mistake shows at registration, never at request time.
"""

from __future__ import annotations

__all__ = ["RouteDefinitionError"]


class RouteDefinitionError(ValueError):
    """A route definition that cannot be registered (raised at registration time)."""

"""Authenticating a request again: does a long-lived request still hold its credentials?

A stream outlives the moment its request was authenticated. :func:`still_authenticated`
runs the site's authentication again (WordPress's ``determine_current_user`` and
``rest_authentication_errors``, one chain, as :func:`~svcrest.rest.pipeline.serve_rest`
runs it) on a copy of the request's method, route, query string and header lines, in a
fresh request context of the same connection, and answers whether it finds the same user
without an error: a logout, an ended session, a revoked application password or a changed
password (on any host) make it answer False.
"""

from __future__ import annotations

from svcrest.chains import Pending
from svcrest.http.context import REQUEST_CONTEXT, RequestContext
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.rest.server import RestServer

__all__ = ["still_authenticated"]


async def still_authenticated(server: RestServer, request: Request, ctx: RequestContext) -> bool:
    """Whether ``request`` (served in ``ctx``, authenticated as ``request.user``) would be
    authenticated as the same user now, without an authentication error."""
    again = Request.from_http(
        request.method, request.route, request.query_string or "", request.headers, b""
    )
    fresh = RequestContext(
        is_rest=True,
        secure=ctx.secure,
        host=ctx.host,
        client=ctx.client,
        request_id=ctx.request_id,
    )
    token = REQUEST_CONTEXT.set(fresh)
    try:
        plan = server.plan()
        authenticate = plan.authenticate_by_carried[
            plan.rule.carried(again.headers, again.query_string, again.raw_body)
        ]
        verdict = None
        if authenticate is not None:
            verdict = authenticate(fresh.user, again)
            if type(verdict) is Pending:
                verdict = await verdict
    finally:
        REQUEST_CONTEXT.reset(token)
    return not isinstance(verdict, RestError) and fresh.user.id == request.user.id

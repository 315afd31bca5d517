"""Who is making the request: the ``determine_current_user`` filter, for REST and site pages."""

from __future__ import annotations

from typing import TYPE_CHECKING

from svcrest.context import RequestContext
from svcrest.hooks import Pending
from svcrest.http.request import Request

if TYPE_CHECKING:
    from svcrest.app import App

__all__ = ["resolve_current_user"]


async def resolve_current_user(app: App, request: Request, ctx: RequestContext) -> None:
    """Run ``determine_current_user`` (the auth cookie, other schemes) into ``ctx.user`` and
    ``request.user``; the anonymous user stays when no callback names one."""
    user = app.hooks.apply_filters_eager("determine_current_user", ctx.user, request)
    if type(user) is Pending:
        user = await user.awaitable
    if user is not None:
        ctx.user = user
    request.user = ctx.user

"""``?_embed``: linked resources embedded in the answer (WordPress's ``embed_links``).

Every embeddable link (``response.add_link(rel, href, embeddable=True)``) of a dict answer,
or of each dict item of a list answer that carries ``_links``, is dispatched internally as a
GET with the caller's user and ``context=embed`` (unless the link names a context), through
the server's pipeline (``dispatch_async``, then ``finish_hooks``), and its data (with its
own ``_links``, never embedded further) goes into ``_embedded[rel]`` in the link's position.
Only links under this site's REST root are fetched (SECURITY: never another URL); a link
that is not fetched keeps an empty placeholder ``{}``; a rel with nothing fetched is left
out. ``_embed=rel1,rel2`` limits the rels; a bare or empty ``_embed``, ``1`` and ``true``
embed them all. With ``_fields``, ``_embedded`` is kept only when listed (``_embedded`` or
``_embedded.<rel>``, which also limits the rels), and ``_links`` when ``_links`` or
``_embedded`` is listed. With ``_envelope``, the links are embedded inside the envelope's
``body`` (WordPress's ``envelope_response`` with ``$embed``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal
from urllib.parse import urlsplit

from svcrest.http.errors import RestError
from svcrest.http.forms import parse_form
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.rest.fields import links_wanted, parse_fields
from svcrest.rest.settings import SiteSettings

__all__ = [
    "EnvelopeResponse",
    "Fetch",
    "RouteOf",
    "embed_answer",
    "parse_embed_param",
    "request_for_link",
]

#: Runs an internal request through the pipeline; its answer's data with ``_links``.
Fetch = Callable[[Request], Awaitable[Any]]
#: The pipeline's ``rest_route_of(base_path, path, query_string)``.
RouteOf = Callable[[str, str, str], "str | RestError | None"]

_ALL = ("", "1", "true")


class EnvelopeResponse(Response):
    """WordPress's ``_envelope`` of a response (``{"body", "status", "headers"}``, status
    200) that keeps the response it wraps, so ``_embed`` can embed inside ``body``."""

    __slots__ = ("enveloped",)

    def __init__(self, body: dict[str, Any], enveloped: Response) -> None:
        super().__init__(body, 200)
        #: The response inside the envelope.
        self.enveloped = enveloped


def parse_embed_param(value: Any) -> Literal[True] | list[str]:
    """WordPress's ``rest_parse_embed_param``: True for every rel, or the rels listed (a
    comma-separated string, a list, or the values of a PHP array)."""
    if value is None or value is True:
        return True
    if isinstance(value, dict):  # ``_embed[a]=author``: a PHP array, read for its values
        value = list(value.values())
    items = value if isinstance(value, list) else str(value).split(",")
    rels = [str(item).strip() for item in items if str(item).strip()]
    if not rels or (len(rels) == 1 and rels[0].lower() in _ALL):
        return True
    return rels


def request_for_link(settings: SiteSettings, href: str, route_of: RouteOf) -> Request | None:
    """The internal GET request a link's ``href`` names, None when it is not under this
    site's REST root (pretty ``/svc-json/…`` or plain ``?rest_route=`` URLs)."""
    try:
        link, home = urlsplit(href), urlsplit(settings.home)
    except ValueError:
        return None
    if (link.scheme.lower(), link.netloc.lower()) != (home.scheme.lower(), home.netloc.lower()):
        return None
    route = route_of(settings.rest_base_path(), link.path or "/", link.query)
    if not isinstance(route, str):
        return None
    query = parse_form(link.query) if link.query else {}
    query.pop("rest_route", None)
    # WordPress envelopes only the outer answer: an ``_envelope`` in a link's own query
    # string would otherwise embed an envelope in place of the linked data.
    query.pop("_envelope", None)
    if not query.get("context"):
        query["context"] = "embed"
    return Request("GET", route, query=query)


class _Embedder:
    """Embeds the links of one answer; each href is fetched once (WordPress's embed cache)."""

    def __init__(
        self,
        settings: SiteSettings,
        request: Request,
        rels: Literal[True] | list[str],
        fetch: Fetch,
        route_of: RouteOf,
    ) -> None:
        self.settings = settings
        self.request = request
        self.rels = rels
        self.fetch_data = fetch
        self.route_of = route_of
        self.cache: dict[str, Any] = {}

    async def fetch(self, href: str) -> Any:
        if href in self.cache:
            return self.cache[href]
        inner = request_for_link(self.settings, href, self.route_of)
        if inner is None:
            data: Any = {}
        else:
            inner.user = self.request.user
            data = await self.fetch_data(inner)
        self.cache[href] = data
        return data

    async def embed(self, item: Any) -> Any:
        """``item`` with ``_embedded`` added from its ``_links``."""
        if not isinstance(item, dict) or not isinstance(item.get("_links"), dict):
            return item
        embedded: dict[str, list[Any]] = {}
        for rel, links in item["_links"].items():
            if self.rels is not True and rel not in self.rels:
                continue
            found: list[Any] = []
            for link in links if isinstance(links, list) else []:
                href = link.get("href") if isinstance(link, dict) else None
                if not isinstance(href, str) or not link.get("embeddable"):
                    found.append({})  # keeps the link's position
                    continue
                found.append(await self.fetch(href))
            if any(found):
                embedded[rel] = found
        return {**item, "_embedded": embedded} if embedded else item


Rels = Literal[True] | list[str]


def _rels_allowed_by_fields(request: Request, rels: Rels) -> Rels | None:
    """The rels to embed under ``_fields``: None when ``_fields`` leaves ``_embedded`` out."""
    fields = request.query_param("_fields")
    if fields is None:
        return rels
    names = parse_fields(fields)
    if not names:
        return rels
    if "_embedded" in names:
        return rels
    listed = [
        name[len("_embedded.") :].split(".", 1)[0]
        for name in names
        if name.startswith("_embedded.")
    ]
    if not listed:
        return None
    return listed if rels is True else [rel for rel in rels if rel in listed]


def _links_wanted(request: Request) -> bool:
    fields = request.query_param("_fields")
    return fields is None or links_wanted(fields)


async def embed_answer(
    settings: SiteSettings, request: Request, response: Response, fetch: Fetch, route_of: RouteOf
) -> Any:
    """The data of ``response`` with its ``_links`` and ``_embedded`` added as ``?_embed``
    asks (see the module); ``fetch`` runs each linked request through the pipeline. The
    response's own links are followed even when ``_fields`` leaves ``_links`` out. An
    envelope's ``body`` is the data of the response inside, embedded."""
    envelope = response.data
    if isinstance(response, EnvelopeResponse) and isinstance(envelope, dict):
        body = await _embedded_data(settings, request, response.enveloped, fetch, route_of)
        return {**envelope, "body": body}
    return await _embedded_data(settings, request, response, fetch, route_of)


async def _embedded_data(
    settings: SiteSettings, request: Request, response: Response, fetch: Fetch, route_of: RouteOf
) -> Any:
    data = response.data
    if response.links and isinstance(data, dict):
        data = {**data, "_links": response.links}
    rels = _rels_allowed_by_fields(request, parse_embed_param(request.query_params["_embed"]))
    if rels is not None:
        embedder = _Embedder(settings, request, rels, fetch, route_of)
        if isinstance(data, list):
            data = [await embedder.embed(item) for item in data]
        else:
            data = await embedder.embed(data)
    if response.links and isinstance(data, dict) and not _links_wanted(request):
        data = {key: value for key, value in data.items() if key != "_links"}
    return data

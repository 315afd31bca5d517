"""The demo notes plugin: ``/demo/v1/notes`` and ``/demo/v1/notes/<id>``.

A note is ``{"id", "title", "content", "author", "date", "date_gmt"}``; dates use the WordPress
REST shape ``YYYY-MM-DDTHH:MM:SS`` (``date`` in the site's timezone, ``date_gmt`` in UTC).
Reads are public; writes need the ``edit_notes`` capability (administrators and editors).
The list pages with ``page``/``per_page`` or the client proxy's ``start``/``limit`` (which win
when given), sorts and filters with the proxy's ``sort``/``filter`` JSON, searches title and
content with ``search``, and sends ``X-SVC-Total`` and ``X-SVC-TotalPages``.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from svcrest.demo.criteria import MAX_CRITERIA, parse_filters, parse_sorters
from svcrest.demo.storage import (
    CHANGE_TYPE,
    EXACT_FILTER_PROPERTIES,
    MAX_ID,
    SORT_PROPERTIES,
    TEXT_FILTER_PROPERTIES,
    NoteQuery,
    NoteStore,
)
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.rest.paginate import paginate, set_total_headers
from svcrest.rest.routing.definitions import public
from svcrest.rest.schema import validate_value
from svcrest.store.change_feed import DEFAULT_RETENTION, FEED_ARGS, ChangeFeed
from svcrest.store.changes import Change

if TYPE_CHECKING:
    from svcrest.app import App

__all__ = [
    "DEFAULT_PER_PAGE",
    "EDIT_CAPABILITY",
    "MAX_PER_PAGE",
    "NAMESPACE",
    "REST_BASE",
    "NotesController",
]

NAMESPACE: Final = "demo/v1"
REST_BASE: Final = "notes"
#: The capability every write needs.
EDIT_CAPABILITY: Final = "edit_notes"
#: The notes routes join batches, atomic ones too: every write goes through the app's store
#: on the calling thread (``NoteStore``), inside the batch's transaction.
BATCH_OPTIONS: Final = {"v1": True, "atomic": True}
DEFAULT_PER_PAGE: Final = 10
MAX_PER_PAGE: Final = 100
_TITLE_MIN_LENGTH: Final = 1
_TITLE_MAX_LENGTH: Final = 255
_CONTEXTS: Final = ("view", "edit", "embed")
_SCHEMA_ONLY_KEYS: Final = frozenset({"context", "readonly"})
#: One sorter and one filter of the ``sort`` / ``filter`` arrays (their schemas as documented;
#: the values are checked by the criteria parser, whose messages name the accepted choices).
_SORTER: Final = {
    "type": "object",
    "properties": {"property": {"type": "string"}, "direction": {"type": "string"}},
}
_FILTER: Final = {
    "type": "object",
    "properties": {
        "property": {"type": "string"},
        "operator": {"type": "string"},
        "value": {"type": ["string", "integer"]},
    },
}


def _note_id(request: Request) -> int | None:
    """The note id the URL names, or None when it names no possible note.

    The route's pattern takes any run of digits, and a permission check can see it before (or
    without) the argument's sanitising: a number longer than any id is never converted
    (``int()`` refuses more than 4,300 digits).
    """
    value = request.get_param("id")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    digits = value.lstrip("0") or "0" if isinstance(value, str) else ""
    if not (digits.isascii() and digits.isdigit()) or len(digits) > len(str(MAX_ID)):
        return None
    return int(digits)


def _invalid_id() -> RestError:
    return RestError("rest_note_invalid_id", "Invalid note ID.", {"status": 404})


def _not_allowed(request: Request, code: str, message: str) -> RestError:
    """WordPress's answer to a refused write: 401 for the anonymous user, else 403."""
    return RestError(code, message, {"status": 403 if request.user.is_logged_in else 401})


def _rest_date(stored: str) -> str:
    """``YYYY-MM-DD HH:MM:SS`` → ``YYYY-MM-DDTHH:MM:SS``."""
    return stored.replace(" ", "T", 1)


@dataclass(frozen=True, slots=True)
class _Paging:
    offset: int
    size: int
    page: int | None  # None when the proxy's start/limit chose the window


class NotesController:
    """The routes, permission checks and item preparation of the notes of one App."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.notes = NoteStore(lambda: app.store, app.clock)
        self.feed = ChangeFeed(
            lambda: self.notes.store, CHANGE_TYPE, retention=self._retention, clock=app.clock
        )

    # -- registration -----------------------------------------------------------------------

    def register_routes(self) -> None:
        """Register ``/demo/v1/notes`` and ``/demo/v1/notes/(?P<id>\\d+)``."""
        self.app.register_rest_route(
            NAMESPACE,
            "/" + REST_BASE,
            {
                0: {
                    "methods": "GET",
                    "callback": self.get_items,
                    "permission_callback": public,  # reads are public
                    "args": self.collection_args(),
                },
                1: {
                    "methods": "POST",
                    "callback": self.create_item,
                    "permission_callback": self.create_item_permissions_check,
                    "blocking": True,  # writes may wait for the store's write lock
                    "args": self.create_args(),
                },
                "schema": self.get_item_schema,
                "allow_batch": BATCH_OPTIONS,
            },
        )
        self.app.register_rest_route(
            NAMESPACE,
            "/" + REST_BASE + r"/(?P<id>\d+)",
            {
                "args": {
                    "id": {"description": "Unique identifier for the note.", "type": "integer"}
                },
                0: {"methods": "GET", "callback": self.get_item, "permission_callback": public},
                1: {
                    "methods": "PUT, PATCH",
                    "callback": self.update_item,
                    "permission_callback": self.update_item_permissions_check,
                    "blocking": True,  # writes may wait for the store's write lock
                    "args": self.update_args(),
                },
                2: {
                    "methods": "DELETE",
                    "callback": self.delete_item,
                    "permission_callback": self.delete_item_permissions_check,
                    # What DELETE answers is not a note (read by the OpenAPI document).
                    "response_schema": self.get_delete_schema,
                    "blocking": True,  # writes may wait for the store's write lock
                },
                "schema": self.get_item_schema,
                "allow_batch": BATCH_OPTIONS,
                # The ETag of a note is its revision: a GET naming it answers 304, a write
                # whose If-Match names another answers 412 (docs/guides/http-semantics.md).
                "etag_callback": self.item_version,
            },
        )
        self.app.register_rest_route(
            NAMESPACE,
            "/" + REST_BASE + "/changes",
            {
                "methods": "GET",
                "callback": self.get_changes,
                "permission_callback": public,  # reads are public
                "args": copy.deepcopy(FEED_ARGS),
            },
        )
        self.app.register_rest_route(
            NAMESPACE,
            r"/users/(?P<id>\d+)",
            {
                "methods": "GET",
                "callback": self.get_author,
                "permission_callback": public,
                "args": {
                    "id": {"description": "Unique identifier for the user.", "type": "integer"}
                },
            },
        )

    # -- schema and arguments -----------------------------------------------------------------

    def get_item_schema(self) -> dict[str, Any]:
        """The JSON Schema (draft-04) of a note; a fresh dict on every call."""
        contexts = list(_CONTEXTS)
        return {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "title": "note",
            "type": "object",
            "properties": {
                "id": {
                    "description": "Unique identifier for the note.",
                    "type": "integer",
                    "context": contexts,
                    "readonly": True,
                },
                "title": {
                    "description": "The title of the note.",
                    "type": "string",
                    "minLength": _TITLE_MIN_LENGTH,
                    "maxLength": _TITLE_MAX_LENGTH,
                    "context": contexts,
                },
                "content": {
                    "description": "The content of the note, as plain text.",
                    "type": "string",
                    "context": contexts,
                },
                "author": {
                    "description": "The id of the user who created the note.",
                    "type": "integer",
                    "context": contexts,
                    "readonly": True,
                },
                "date": {
                    "description": "The date the note was published, in the site's timezone.",
                    "type": "string",
                    "format": "date-time",
                    "context": contexts,
                },
                "date_gmt": {
                    "description": "The date the note was published, as GMT.",
                    "type": "string",
                    "format": "date-time",
                    "context": contexts,
                    "readonly": True,
                },
            },
        }

    def get_delete_schema(self) -> dict[str, Any]:
        """The JSON Schema of DELETE's answer: ``{"deleted": true, "previous": note}``."""
        note = self.get_item_schema()
        del note["$schema"]
        return {
            "title": "deleted note",
            "type": "object",
            "properties": {"deleted": {"type": "boolean"}, "previous": note},
            "required": ["deleted", "previous"],
        }

    def _property_arg(self, name: str) -> dict[str, Any]:
        definition = self.get_item_schema()["properties"][name]
        return {key: value for key, value in definition.items() if key not in _SCHEMA_ONLY_KEYS}

    def _writable_args(self) -> dict[str, dict[str, Any]]:
        args = {name: self._property_arg(name) for name in ("title", "content", "date")}
        args["title"]["validate_callback"] = _validate_title
        args["date"]["validate_callback"] = self._validate_date
        return args

    def create_args(self) -> dict[str, dict[str, Any]]:
        """Arguments of POST: ``title`` required, ``content`` defaults to "", ``date``."""
        args = self._writable_args()
        args["title"]["required"] = True
        args["content"]["default"] = ""
        return args

    def update_args(self) -> dict[str, dict[str, Any]]:
        """Arguments of PUT/PATCH: every writable field, none required, no defaults; a field
        sent as null is left unchanged (null is validated like any value sent, so the
        arguments accept it)."""
        return {name: _null_unchanged(arg) for name, arg in self._writable_args().items()}

    def collection_args(self) -> dict[str, dict[str, Any]]:
        """Arguments of the list: paging, search, sort and filter."""
        return {
            "page": {
                "description": "Current page of the collection.",
                "type": "integer",
                "default": 1,
                "minimum": 1,
            },
            "per_page": {
                "description": "Maximum number of notes to be returned in result set.",
                "type": "integer",
                "default": DEFAULT_PER_PAGE,
                "minimum": 1,
                "maximum": MAX_PER_PAGE,
            },
            "start": {
                "description": "Offset of the first note to return (wins over page).",
                "type": "integer",
                "minimum": 0,
            },
            "limit": {
                "description": "Maximum number of notes to return (wins over per_page).",
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_PER_PAGE,
            },
            "search": {
                "description": "Limit results to notes whose title or content contains a string.",
                "type": "string",
            },
            "sort": {
                "description": (
                    "A JSON array of sorters in one query value, e.g. "
                    '[{"property":"title","direction":"DESC"}] (URL-encoded; direction ASC or '
                    "DESC, ASC when left out; at most "
                    + str(MAX_CRITERIA)
                    + "), one such JSON object, the same array in indexed keys "
                    "(sort[0][property]=title&sort[0][direction]=DESC, as qs and WordPress's "
                    "clients write it), or one property name with dir. Properties: "
                    + ", ".join(SORT_PROPERTIES)
                    + "."
                ),
                "type": ["string", "array"],
                "items": _SORTER,
                "validate_callback": _validate_sort,
            },
            "dir": {
                "description": "Direction of a sort given as one property name.",
                "type": "string",
                "enum": ["ASC", "DESC"],
            },
            "filter": {
                "description": (
                    "A JSON array of filters in one query value, e.g. "
                    '[{"property":"title","value":"abc"}] (URL-encoded; at most '
                    + str(MAX_CRITERIA)
                    + "), one such JSON object, or the same array in indexed keys "
                    "(filter[0][property]=title&filter[0][value]=abc). A substring match on "
                    + ", ".join(TEXT_FILTER_PROPERTIES)
                    + ' ("operator":"=" for an exact one), exact on '
                    + ", ".join(EXACT_FILTER_PROPERTIES)
                    + "."
                ),
                "type": ["string", "array"],
                "items": _FILTER,
                "validate_callback": _validate_filter,
            },
        }

    def _validate_date(self, value: Any, request: Request, key: str) -> RestError | bool:
        if self.app.rest_get_date_with_gmt(value) is None:
            return RestError("rest_invalid_date", "Invalid date.", {"param": key})
        return True

    # -- permissions ------------------------------------------------------------------------

    def create_item_permissions_check(self, request: Request) -> RestError | bool:
        """Writers only: ``edit_notes``."""
        if request.user.can(EDIT_CAPABILITY):
            return True
        return _not_allowed(
            request, "rest_cannot_create", "Sorry, you are not allowed to create notes."
        )

    def update_item_permissions_check(self, request: Request) -> RestError | bool:
        """404 for an unknown note (as WordPress), then ``edit_notes``."""
        if self._find(request) is None:
            return _invalid_id()
        if request.user.can(EDIT_CAPABILITY):
            return True
        return _not_allowed(
            request, "rest_cannot_edit", "Sorry, you are not allowed to edit this note."
        )

    def delete_item_permissions_check(self, request: Request) -> RestError | bool:
        """404 for an unknown note (as WordPress), then ``edit_notes``."""
        if self._find(request) is None:
            return _invalid_id()
        if request.user.can(EDIT_CAPABILITY):
            return True
        return _not_allowed(
            request, "rest_cannot_delete", "Sorry, you are not allowed to delete this note."
        )

    # -- items ------------------------------------------------------------------------------

    def _find(self, request: Request) -> dict[str, Any] | None:
        """The note the URL names, or None."""
        note_id = _note_id(request)
        return None if note_id is None else self.notes.get(note_id)

    def collection_url(self) -> str:
        """The URL of the notes collection."""
        return self.app.rest_url(f"/{NAMESPACE}/{REST_BASE}")

    def item_url(self, note_id: int) -> str:
        """The URL of one note."""
        return self.app.rest_url(f"/{NAMESPACE}/{REST_BASE}/{note_id}")

    @staticmethod
    def prepare_item(note: dict[str, Any]) -> dict[str, Any]:
        """A stored note in its REST shape (without links)."""
        return {
            "id": note["id"],
            "title": note["title"],
            "content": note["content"],
            "author": note["author"],
            "date": _rest_date(note["date"]),
            "date_gmt": _rest_date(note["date_gmt"]),
        }

    def author_url(self, user_id: int) -> str:
        """The URL of a note author's public profile (embeddable)."""
        return self.app.rest_url(f"/{NAMESPACE}/users/{user_id}")

    def _item_response(self, note: dict[str, Any], status: int = 200) -> Response:
        response = Response(self.prepare_item(note), status)
        response.add_link("self", self.item_url(note["id"]))
        response.add_link("collection", self.collection_url())
        response.add_link("author", self.author_url(note["author"]), embeddable=True)
        return response

    def _dates(self, value: Any) -> tuple[str, str] | RestError:
        if value is None:
            now = dt.datetime.fromtimestamp(int(self.app.clock()), dt.UTC)
            value = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        dates = self.app.rest_get_date_with_gmt(value)
        if dates is None:
            return RestError("rest_invalid_date", "Invalid date.", {"status": 400})
        return dates

    # -- callbacks --------------------------------------------------------------------------

    def get_items(self, request: Request) -> Response | RestError:
        """GET ``/notes``: one page of notes, with the total counts in headers."""
        sorters = parse_sorters(request.get_param("sort"), request.get_param("dir"))
        filters = parse_filters(request.get_param("filter"))
        if isinstance(sorters, str) or isinstance(filters, str):  # validated already
            message = sorters if isinstance(sorters, str) else str(filters)
            return RestError("rest_invalid_param", message, {"status": 400})
        paging = _paging(request)
        search = request.get_param("search")
        query = NoteQuery(
            offset=paging.offset,
            limit=paging.size,
            sorters=sorters,
            filters=filters,
            search=search if isinstance(search, str) and search else None,
        )
        notes, total = self.notes.list(query)
        server = self.app.rest_get_server()
        data = [server.prepare_response_for_collection(self._item_response(n)) for n in notes]
        if paging.page is not None:
            return paginate(request, data, total=total, page=paging.page, per_page=paging.size)
        response = Response(data)  # the proxy's start/limit window: totals, no page links
        set_total_headers(response, total, paging.size)
        return response

    def create_item(self, request: Request) -> Response | RestError:
        """POST ``/notes``: create a note by the current user; 201 with ``Location``."""
        dates = self._dates(request.get_param("date"))
        if isinstance(dates, RestError):
            return dates
        content = request.get_param("content")
        note = self.notes.create(
            title=str(request.get_param("title")).strip(),
            content="" if content is None else str(content),
            author=request.user.id,
            date=dates[0],
            date_gmt=dates[1],
        )
        response = self._item_response(note, 201)
        response.header("Location", self.item_url(note["id"]))
        return response

    def get_author(self, request: Request) -> dict[str, Any] | RestError:
        """GET ``/users/<id>``: ``{"id", "name"}`` of a user who wrote a note. SECURITY: only
        the display name, and only of note authors (no enumeration of the other users)."""
        user_id = _note_id(request)
        user = None
        if user_id is not None and self.notes.has_author(user_id):
            user = self.app.users.get(user_id)
        if user is None:
            return RestError("rest_user_invalid_id", "Invalid user ID.", {"status": 404})
        return {"id": user.id, "name": user.display_name}

    async def get_changes(self, request: Request) -> Response | RestError:
        """GET ``/notes/changes``: the long-poll of the notes' changes (``since``, ``wait``;
        see :class:`~svcrest.store.change_feed.ChangeFeed`), each note as GET shows it; a
        deletion is ``{"id": n}``, and events of notes deleted since are left out."""
        return await self.feed.answer(request, self._change_data)

    def _change_data(self, change: Change, request: Request) -> Any:
        if change.event == "deleted":
            return {"id": change.item_id}
        note = self.notes.get(change.item_id)
        if note is None:
            return None
        server = self.app.rest_get_server()
        return server.prepare_response_for_collection(self._item_response(note))

    def _retention(self) -> float:
        return float(self.app.hooks.apply_filters("svc_changes_retention", DEFAULT_RETENTION))

    def item_version(self, request: Request) -> str | None:
        """The version of the note the URL names (``<id>-<revision>``), or None when there
        is none: one indexed read, no note built."""
        note_id = _note_id(request)
        revision = None if note_id is None else self.notes.revision(note_id)
        return None if revision is None else f"{note_id}-{revision}"

    def get_item(self, request: Request) -> Response | RestError:
        """GET ``/notes/<id>``."""
        note = self._find(request)
        return _invalid_id() if note is None else self._item_response(note)

    def update_item(self, request: Request) -> Response | RestError:
        """PUT or PATCH ``/notes/<id>``: update only the fields sent (a null is not sent)."""
        changes: dict[str, Any] = {}
        for name in ("title", "content"):
            value = request.get_param(name)
            if value is not None:
                changes[name] = str(value)
        if "title" in changes:
            changes["title"] = changes["title"].strip()
        date = request.get_param("date")
        if date is not None:
            dates = self._dates(date)
            if isinstance(dates, RestError):
                return dates
            changes["date"], changes["date_gmt"] = dates
        note_id = _note_id(request)
        note = None if note_id is None else self.notes.update(note_id, changes)
        return _invalid_id() if note is None else self._item_response(note)

    def delete_item(self, request: Request) -> Response | RestError:
        """DELETE ``/notes/<id>``: ``{"deleted": true, "previous": note}``."""
        note_id = _note_id(request)
        previous = None if note_id is None else self.notes.delete(note_id)
        if previous is None:
            return _invalid_id()
        return Response({"deleted": True, "previous": self.prepare_item(previous)})


def _paging(request: Request) -> _Paging:
    """The window of the list: ``start``/``limit`` when given, else ``page``/``per_page``."""
    start, limit = request.get_param("start"), request.get_param("limit")
    size = (
        int(limit) if limit is not None else int(request.get_param("per_page") or DEFAULT_PER_PAGE)
    )
    if start is not None:
        return _Paging(offset=int(start), size=size, page=None)
    page = int(request.get_param("page") or 1)
    return _Paging(offset=(page - 1) * size, size=size, page=page)


def _null_unchanged(definition: dict[str, Any]) -> dict[str, Any]:
    """An update argument that takes null as "leave unchanged": a sent null is validated like
    any value, so the argument's type also allows ``"null"`` (shown so in OPTIONS help and the
    OpenAPI document), and a ``validate_callback`` lets null through and checks every other
    value exactly as the original keywords (and validate callback) would."""
    keywords = {
        k: v for k, v in definition.items() if k not in ("description", "validate_callback")
    }
    extra = definition.get("validate_callback")

    def validate(value: Any, request: Request, key: str) -> RestError | bool:
        if value is None:
            return True
        error = validate_value(value, keywords, key)
        if error is not None:
            return error
        return True if extra is None else _verdict(extra(value, request, key))

    shown = dict(keywords)
    if isinstance(shown.get("type"), str):
        shown["type"] = [shown["type"], "null"]
    return {"description": definition["description"], **shown, "validate_callback": validate}


def _verdict(outcome: Any) -> RestError | bool:
    """A validate callback's verdict as the argument checks read it."""
    return outcome if isinstance(outcome, RestError) else outcome is not False


def _validate_title(value: Any, request: Request, key: str) -> RestError | bool:
    """The schema's ``minLength`` counted on the trimmed title: a title of only whitespace
    would show as an empty note (titles are stored trimmed)."""
    if isinstance(value, str) and len(value.strip()) < _TITLE_MIN_LENGTH:
        message = f"{key} must be at least {_TITLE_MIN_LENGTH} character long."
        return RestError("rest_too_short", message, {"param": key})
    return True


def _validate_sort(value: Any, request: Request, key: str) -> RestError | bool:
    parsed = parse_sorters(value, request.get_param("dir"))
    if isinstance(parsed, str):
        return RestError("rest_invalid_sort", parsed, {"param": key})
    return True


def _validate_filter(value: Any, request: Request, key: str) -> RestError | bool:
    parsed = parse_filters(value)
    if isinstance(parsed, str):
        return RestError("rest_invalid_filter", parsed, {"param": key})
    return True

"""The columns of a store-backed collection, read from the JSON schema of its items.

The rule: an item property becomes a column only through :func:`columns_of_schema`, whose
names are checked against :data:`IDENTIFIER` and always written double-quoted; every value
crosses between JSON and the database through :meth:`Column.to_db` / :meth:`Column.from_db`.

Types, as WordPress's schema names them:

=============  ======================  ==============================  ===================
schema         SQLite                  PostgreSQL                      JSON answer
=============  ======================  ==============================  ===================
``integer``    ``INTEGER``             ``BIGINT``                      int
``number``     ``REAL``                ``DOUBLE PRECISION``            float
``boolean``    ``INTEGER`` (0 / 1)     ``BOOLEAN``                     bool
``string``     ``TEXT``                ``TEXT COLLATE "C"``            str
``date-time``  ``TEXT``                ``TEXT COLLATE "C"``            ``YYYY-MM-DDTHH:MM:SSZ``
object, array  ``TEXT`` (JSON)         ``TEXT`` (JSON)                 the decoded value
=============  ======================  ==============================  ===================

Strings compare by code point on both engines (SQLite's ``BINARY``, PostgreSQL's ``"C"``
collation), so a sort and a cursor give the same order everywhere. A ``date-time`` is parsed
as WordPress's ``rest_parse_date`` parses it (a value without a zone is UTC, a fraction is
dropped) and stored as the UTC instant in a fixed-width text that sorts chronologically.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

from svcrest.constants import INT64_MAX, INT64_MIN
from svcrest.dates import rest_parse_date
from svcrest.http.errors import RestError
from svcrest.store.base import Dialect

__all__ = [
    "IDENTIFIER",
    "MAX_INT",
    "MIN_INT",
    "CollectionError",
    "Column",
    "Kind",
    "check_identifier",
    "columns_of_schema",
    "quote",
    "storable_text",
]

#: What a table or column name may be: a letter or ``_``, then letters, digits or ``_``,
#: at most 63 characters (PostgreSQL's limit). SECURITY: names are also double-quoted.
IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}\Z")
#: The range of an integer column on both engines (a signed 64-bit integer).
MIN_INT: Final = INT64_MIN
MAX_INT: Final = INT64_MAX
#: The columns every collection table has besides its properties' own.
RESERVED: Final = ("id", "version")

Kind = Literal["integer", "number", "boolean", "string", "date-time", "json"]

_SQL_TYPES: Final[Mapping[Kind, Mapping[Dialect, str]]] = {
    "integer": {"sqlite": "INTEGER", "postgresql": "BIGINT"},
    "number": {"sqlite": "REAL", "postgresql": "DOUBLE PRECISION"},
    "boolean": {"sqlite": "INTEGER", "postgresql": "BOOLEAN"},
    "string": {"sqlite": "TEXT", "postgresql": 'TEXT COLLATE "C"'},
    "date-time": {"sqlite": "TEXT", "postgresql": 'TEXT COLLATE "C"'},
    "json": {"sqlite": "TEXT", "postgresql": "TEXT"},
}
_SCALARS: Final[tuple[Kind, ...]] = ("integer", "number", "boolean", "string")
_BOOLEAN_TEXT: Final[Mapping[str, bool]] = {"true": True, "false": False, "1": True, "0": False}


class CollectionError(RestError, ValueError):
    """A query or a value the collection cannot take: 400 ``rest_invalid_param``, naming the
    request parameter at fault (``filter``, ``sort``, ``cursor``, a property…) as WordPress's
    argument validation does (``data.params`` and ``data.details``)."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(
            "rest_invalid_param",
            f"Invalid parameter(s): {param}",
            {
                "status": 400,
                "params": {param: message},
                "details": {
                    param: {"code": "rest_invalid_param", "message": message, "data": None}
                },
            },
        )
        #: The parameter at fault.
        self.param = param
        #: What is wrong with it, in one sentence.
        self.reason = message


def check_identifier(name: object, what: str) -> str:
    """``name`` when it can be a table or column name (:data:`IDENTIFIER`); else ValueError
    (a mistake of the code that declares the collection, raised when it is declared)."""
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise ValueError(
            f"{what} {name!r} cannot name a column or table: use letters, digits and _"
            " (not starting with a digit), at most 63 characters"
        )
    return name


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier. SECURITY: only for names that passed
    :func:`check_identifier` (they hold no quote)."""
    return f'"{name}"'


@dataclass(frozen=True, slots=True)
class Column:
    """One property of the item schema stored as a column.

    ``required`` (the schema's ``required: true``) and ``default`` decide ``nullable``: a
    property with either is never stored as NULL (a missing value takes ``default``).
    ``enum``: the allowed values (after conversion), or None.
    """

    name: str
    kind: Kind
    default: Any = None
    has_default: bool = False
    required: bool = False
    enum: tuple[Any, ...] | None = None

    @property
    def nullable(self) -> bool:
        """Whether the column may hold NULL (a property without ``default`` or ``required``)."""
        return not (self.has_default or self.required)

    @property
    def scalar(self) -> bool:
        """Whether the column can be sorted, filtered and compared (not JSON)."""
        return self.kind != "json"

    @property
    def db_reader(self) -> Callable[[Any], Any]:
        """What :meth:`from_db` does to a stored value that is not None, as one callable
        (``bool``, ``int``, ``float``, ``orjson.loads`` or ``str``, each a C function: a
        table reading rows calls it without a Python call of :meth:`from_db` per value)."""
        return _FROM_DB.get(self.kind, str)

    def sql_type(self, dialect: Dialect) -> str:
        """The column's type in ``dialect``'s DDL."""
        return _SQL_TYPES[self.kind][dialect]

    def to_db(self, value: Any, param: str | None = None) -> Any:
        """``value`` (JSON, or a query-string text) as the column stores it; CollectionError
        naming ``param`` (default: the property) when it is not of the column's type, out of
        range or outside ``enum``. None stays None (refused for a column that is not
        ``nullable``)."""
        param = param or self.name
        if value is None:
            if not self.nullable:
                raise CollectionError(param, f"{self.name} must not be null.")
            return None
        stored = _CONVERT[self.kind](value, self.name, param)
        if self.enum is not None and stored not in self.enum:
            raise CollectionError(param, f"{self.name} is not one of the allowed values.")
        return stored

    def from_db(self, value: Any) -> Any:
        """A stored value as its JSON answer."""
        if value is None:
            return None
        kind = self.kind
        if kind == "boolean":
            return bool(value)
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
        if kind == "json":
            return orjson.loads(value)
        return str(value)


def _to_integer(value: Any, name: str, param: str) -> int:
    if isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text[:1] in "+-" else text
        if digits.isascii() and digits.isdigit() and len(digits) <= 19:
            value = int(text)
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_INT <= value <= MAX_INT:
        raise CollectionError(param, f"{name} is not of type integer.")
    return value


def _to_number(value: Any, name: str, param: str) -> float:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value.strip())
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CollectionError(param, f"{name} is not of type number.")
    return float(value)


def _to_boolean(value: Any, name: str, param: str) -> bool:
    # As WordPress's rest_sanitize_boolean reads query strings: "true"/"false"/"1"/"0".
    if isinstance(value, str) and value.strip().lower() in _BOOLEAN_TEXT:
        return _BOOLEAN_TEXT[value.strip().lower()]
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    if not isinstance(value, bool):
        raise CollectionError(param, f"{name} is not of type boolean.")
    return value


def storable_text(text: str) -> bool:
    """Whether both engines can store ``text``: no NUL (PostgreSQL's text cannot hold one)
    and no lone surrogate (it has no UTF-8 form)."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _to_string(value: Any, name: str, param: str) -> str:
    if not isinstance(value, str):
        raise CollectionError(param, f"{name} is not of type string.")
    if not storable_text(value):
        raise CollectionError(
            param, f"{name} must not contain a NUL character or a lone surrogate."
        )
    return value


def _to_date_time(value: Any, name: str, param: str) -> str:
    moment = rest_parse_date(value) if isinstance(value, str) else False
    if moment is False:
        raise CollectionError(param, f"Invalid date for {name}.")
    return _date_text(moment, name, param)


def _date_text(moment: int, name: str, param: str) -> str:
    """The stored (and answered) text of Unix time ``moment``: RFC 3339 in UTC, fixed width."""
    days, seconds = divmod(moment, 86_400)
    ordinal = 719_163 + days  # date(1970, 1, 1).toordinal()
    if not 1 <= ordinal <= 3_652_059:  # years 0001 to 9999
        raise CollectionError(param, f"Invalid date for {name}.")
    day = _dt.date.fromordinal(ordinal)
    hour, rest = divmod(seconds, 3600)
    return (
        f"{day.year:04d}-{day.month:02d}-{day.day:02d}T{hour:02d}:{rest // 60:02d}:{rest % 60:02d}Z"
    )


def _to_json(value: Any, name: str, param: str) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        raise CollectionError(param, f"{name} cannot be stored as JSON.") from None


#: A stored value's conversion to its JSON answer, by kind (``str`` for the others).
_FROM_DB: Final[Mapping[str, Callable[[Any], Any]]] = {
    "boolean": bool,
    "integer": int,
    "number": float,
    "json": orjson.loads,
}

_CONVERT: Final = {
    "integer": _to_integer,
    "number": _to_number,
    "boolean": _to_boolean,
    "string": _to_string,
    "date-time": _to_date_time,
    "json": _to_json,
}


def _kind_of(name: str, prop: Mapping[str, Any]) -> Kind:
    """The storage kind of property ``name`` (its schema ``type``, ``format``)."""
    types = prop.get("type")
    if isinstance(types, list):  # ["string", "null"]: the non-null type decides
        types = [item for item in types if item != "null"]
        types = types[0] if len(types) == 1 else None
    if types in ("object", "array"):
        return "json"
    if types == "string" and prop.get("format") == "date-time":
        return "date-time"
    for kind in _SCALARS:
        if types == kind:
            return kind
    raise ValueError(
        f"property {name!r} has type {types!r}: a stored collection takes integer, number,"
        " boolean, string (also format date-time), object or array"
    )


def columns_of_schema(schema: Mapping[str, Any]) -> dict[str, Column]:
    """The columns of the item schema's ``properties`` (``id`` and ``version`` excepted: the
    table always has its own), in the schema's order. ValueError for a property whose name
    or type cannot be a column, or whose ``default`` / ``enum`` does not fit its type."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        raise ValueError("the item schema needs a properties object")
    columns: dict[str, Column] = {}
    folded: set[str] = set()
    for name, prop in properties.items():
        if name in RESERVED:
            continue
        check_identifier(name, "property")
        # SQLite's names ignore case: "Title" and "title" (or "ID" and "id") would collide.
        if name.lower() in folded or name.lower() in RESERVED:
            raise ValueError(f"property {name!r} differs from another column only by case")
        folded.add(name.lower())
        if not isinstance(prop, Mapping):
            raise ValueError(f"property {name!r} must be a schema object")
        kind = _kind_of(name, prop)
        column = Column(name, kind, required=prop.get("required") is True)
        try:
            if "enum" in prop:
                enum = tuple(column.to_db(value) for value in prop["enum"] if value is not None)
                column = Column(name, kind, required=column.required, enum=enum)
            if prop.get("default") is not None:
                default = column.to_db(prop["default"])
                column = Column(name, kind, default, True, column.required, column.enum)
        except CollectionError as exc:
            raise ValueError(f"property {name!r}: {exc.reason}") from None
        columns[name] = column
    return columns

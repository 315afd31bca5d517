"""Case-insensitive, multi-valued HTTP headers that keep their order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping

from svcrest.bounded import Memo

__all__ = [
    "PROBE_LONGEST",
    "Headers",
    "HeadersInit",
    "Lines",
    "OnDemandHeaders",
    "asgi_header_lines",
    "probe_length",
]


HeadersInit = Mapping[str, str] | Iterable[tuple[str, str]] | None
#: Header lines in order and their index (lower-cased name → values), or None for an index
#: built from the lines the first time a look-up needs it.
Lines = tuple[list[tuple[str, str]], dict[str, list[str]] | None]


def _join(key: str, values: list[str]) -> str:
    """Several lines of one header as one value: RFC 9110 joins with ", ", but ``Cookie``
    lines are joined with "; " (RFC 6265 §5.4; a comma would merge two cookies)."""
    return ("; " if key == "cookie" else ", ").join(values)


# PERF: the decoded names of the header lines requests bring (a lookup costs half a decode).
# SECURITY: names are the client's: bounded in entries and bytes, only names of at most
# ``_NAME_LENGTH`` bytes are kept, and the memory is emptied when full.
_NAMES_MAX = 256
_NAME_LENGTH = 64
_NAMES: Memo[bytes, str] = Memo(_NAMES_MAX, _NAME_LENGTH)


def _decoded_name(raw: bytes) -> str:
    """An ASGI header name decoded (Latin-1), remembered when short."""
    return _NAMES.keep(raw, raw.decode("latin-1"))


def asgi_header_lines(raw: Iterable[tuple[bytes, bytes]]) -> Lines:
    """The header lines of an ASGI scope's ``headers`` (lower-case byte names, Latin-1)
    decoded, in order, and their index (name → values), in one pass."""
    items: list[tuple[str, str]] = []
    index: dict[str, list[str]] = {}
    names = _NAMES
    for raw_name, raw_value in raw:
        name = names.get(raw_name)
        if name is None:
            name = _decoded_name(raw_name)
        value = raw_value.decode("latin-1")
        items.append((name, value))
        values = index.get(name)
        if values is None:
            index[name] = [value]
        else:
            values.append(value)
    return items, index


# A memory of name sets asked about together (``Headers.has_any``) keeps only sets of at
# most ``_PROBE_NAMES`` names of at most ``PROBE_LONGEST`` characters: the code's own sets
# are a few short names; a plugin may ask with anything.
_PROBE_NAMES = 16
PROBE_LONGEST = 64


def probe_length(names: frozenset[str]) -> int:
    """How a memory of name sets (a :class:`~svcrest.bounded.Memo` with ``longest`` of
    ``PROBE_LONGEST``) measures ``names``: its longest name, or more than it keeps when the
    set has more than ``_PROBE_NAMES`` names."""
    if len(names) > _PROBE_NAMES:
        return PROBE_LONGEST + 1
    return max(map(len, names), default=0)


class Headers(MutableMapping[str, str]):
    """An ordered list of header lines looked up case-insensitively.

    ``headers[name]`` joins every value of ``name`` with ", " (as httpx does; ``Cookie``
    lines with "; ");
    ``get_list(name)`` returns them separately; ``add`` appends one more line while
    ``headers[name] = value`` replaces every line of that name.
    """

    __slots__ = ("_index", "_items", "_keys")

    def __init__(self, init: HeadersInit = None) -> None:
        self._items: list[tuple[str, str]] = []
        # PERF: lower-cased name → values, built on the first lookup and dropped on change;
        # a request's headers are read many times and written rarely.
        self._index: dict[str, list[str]] | None = None
        # PERF: the lower-cased names in order, kept up to date once built: a response's few
        # lines are tested and written more than read.
        self._keys: list[str] | None = None
        if not init:
            return
        # PERF: a duck-typed check; isinstance against the Mapping ABC costs ~1 µs.
        pairs = init.items() if hasattr(init, "items") else init
        self._items = [(str(name), str(value)) for name, value in pairs]

    @classmethod
    def from_lines(
        cls, lines: list[tuple[str, str]], index: dict[str, list[str]] | None = None
    ) -> Headers:
        """Headers holding ``lines`` (a list of str pairs, taken as it is, not copied);
        ``index``, when given, is their lower-cased name → values (taken as it is too)."""
        headers = cls()
        headers._items = lines
        headers._index = index
        return headers

    def add(self, name: str, value: str) -> None:
        """Append one header line."""
        self._items.append((name, value))
        self._index = None
        if self._keys is not None:
            self._keys.append(name.lower())

    def extend(self, lines: Iterable[tuple[str, str]]) -> None:
        """Append header lines."""
        self._items.extend(lines)
        self._index = None
        self._keys = None

    def is_empty(self) -> bool:
        """Whether there is no header line at all."""
        return not self._items

    def _names(self) -> list[str]:
        keys = self._keys
        if keys is None:
            keys = self._keys = [name.lower() for name, _ in self._items] if self._items else []
        return keys

    def _lookup(self) -> dict[str, list[str]]:
        index = self._index
        if index is None:
            index = {}
            for name, value in self._items:
                index.setdefault(name.lower(), []).append(value)
            self._index = index
        return index

    def index(self) -> dict[str, list[str]]:
        """Lower-cased name → values, in order (shared: read it, do not change it)."""
        index = self._index
        return index if index is not None else self._lookup()

    def has_any(self, names: frozenset[str]) -> bool:
        """Whether a line of any of ``names`` (lower case) is there. PERF: one set test, in
        C over the request's few names."""
        index = self._index
        return not names.isdisjoint(index if index is not None else self._lookup())

    def get_list(self, name: str) -> list[str]:
        """Every value of ``name`` in order."""
        return list(self._lookup().get(name.lower(), ()))

    def get_joined(self, name: str) -> str | None:
        """The value of ``name`` (lines joined with ", "; ``Cookie`` lines with "; "), or
        None; ``name`` is lower case."""
        index = self._index
        values = (index if index is not None else self._lookup()).get(name)
        if not values:
            return None
        return values[0] if len(values) == 1 else _join(name, values)

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        """The value of ``name`` (lines joined with ", "), or ``default``.

        PERF: answered from the index; the Mapping mixin would raise and catch a KeyError for
        every absent header.
        """
        key = name.lower()
        values = self._lookup().get(key)
        if not values:
            return default
        return values[0] if len(values) == 1 else _join(key, values)

    def items_list(self) -> list[tuple[str, str]]:
        """Every header line as (name, value), in order, duplicates included."""
        return list(self._items)

    def copy(self) -> Headers:
        """A shallow copy."""
        return Headers(self._items)

    def __getitem__(self, name: str) -> str:
        key = name.lower()
        values = self._lookup().get(key)
        if not values:
            raise KeyError(name)
        return values[0] if len(values) == 1 else _join(key, values)

    def __setitem__(self, name: str, value: str) -> None:
        if not self._items:  # PERF: the common first write of a response header
            self._items.append((name, value))
            self._keys = None
            self._index = None
            return
        key = name.lower()
        keys = self._names()
        if key in keys:
            self._remove(key)
            keys = self._names()
        self._items.append((name, value))
        keys.append(key)
        self._index = None

    def _remove(self, key: str) -> None:
        keys = self._names()
        self._items = [
            item for item, item_key in zip(self._items, keys, strict=True) if item_key != key
        ]
        self._keys = None
        self._index = None

    def __delitem__(self, name: str) -> None:
        key = name.lower()
        if key not in self._names():
            raise KeyError(name)
        self._remove(key)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        items = self._items
        if not items:
            return False
        index = self._index
        if index is not None:
            return name.lower() in index
        key = name.lower()
        if len(items) <= 4:  # PERF: a response's first few lines: a scan beats an index
            return any(item[0].lower() == key for item in items)
        return key in self._names()

    def __iter__(self) -> Iterator[str]:
        seen: set[str] = set()
        for name, _ in self._items:
            key = name.lower()
            if key not in seen:
                seen.add(key)
                yield name

    def __len__(self) -> int:
        return len(self._lookup())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Headers):
            return sorted((n.lower(), v) for n, v in self._items) == sorted(
                (n.lower(), v) for n, v in other.items_list()
            )
        if isinstance(other, Mapping):
            return dict(self.items()) == {str(k): str(v) for k, v in other.items()} or {
                k.lower(): v for k, v in self.items()
            } == {str(k).lower(): str(v) for k, v in other.items()}
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable mapping

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


class OnDemandHeaders(Headers):
    """:class:`Headers` kept in a server's own form of the request's lines (a WSGI environ,
    an ASGI scope's byte pairs) until something needs them all.

    A subclass answers ``get_joined`` and ``has_any`` from that form (``get`` asks
    ``get_joined``) and says how to list the lines (:meth:`_list_lines`, called once). The
    first time anything else reads or changes the lines, they are listed into a plain
    :class:`Headers` (:meth:`listed`), which answers from then on: every other method hands
    over to it. A subclass's constructor sets ``_listed_lines`` to None itself (PERF: no call
    to a base constructor on every request); the base class's own storage stays unused.
    """

    __slots__ = ("_listed_lines",)
    _listed_lines: Headers | None

    def _list_lines(self) -> Lines:
        """The lines in order and their index (lower-cased name → values, or None to have
        :class:`Headers` build it); called once, the first time they are needed. The
        subclass lets go of its own form then."""
        raise NotImplementedError

    def listed(self) -> Headers:
        """The lines as plain :class:`Headers`, listed from the server's form the first time."""
        headers = self._listed_lines
        if headers is None:
            items, index = self._list_lines()
            headers = self._listed_lines = Headers.from_lines(items, index)
        return headers

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        """The value of ``name``, or ``default`` (see :meth:`Headers.get`)."""
        value = self.get_joined(name.lower())
        return default if value is None else value

    def get_joined(self, name: str) -> str | None:
        return self.listed().get_joined(name)

    def has_any(self, names: frozenset[str]) -> bool:
        return self.listed().has_any(names)

    def add(self, name: str, value: str) -> None:
        self.listed().add(name, value)

    def extend(self, lines: Iterable[tuple[str, str]]) -> None:
        self.listed().extend(lines)

    def is_empty(self) -> bool:
        return self.listed().is_empty()

    def index(self) -> dict[str, list[str]]:
        return self.listed().index()

    def get_list(self, name: str) -> list[str]:
        return self.listed().get_list(name)

    def items_list(self) -> list[tuple[str, str]]:
        return self.listed().items_list()

    def copy(self) -> Headers:
        return self.listed().copy()

    def __getitem__(self, name: str) -> str:
        return self.listed()[name]

    def __setitem__(self, name: str, value: str) -> None:
        self.listed()[name] = value

    def __delitem__(self, name: str) -> None:
        del self.listed()[name]

    def __contains__(self, name: object) -> bool:
        return name in self.listed()

    def __iter__(self) -> Iterator[str]:
        return iter(self.listed())

    def __len__(self) -> int:
        return len(self.listed())

    def __eq__(self, other: object) -> bool:
        return self.listed() == other

    __hash__ = None  # mutable mapping

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.listed().items_list()!r})"

"""Case-insensitive, multi-valued HTTP headers that keep their order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping

__all__ = ["Headers", "HeadersInit"]

HeadersInit = Mapping[str, str] | Iterable[tuple[str, str]] | None


class Headers(MutableMapping[str, str]):
    """An ordered list of header lines looked up case-insensitively.

    ``headers[name]`` joins every value of ``name`` with ", " (as httpx does);
    ``get_list(name)`` returns them separately; ``add`` appends one more line while
    ``headers[name] = value`` replaces every line of that name.
    """

    __slots__ = ("_index", "_items")

    def __init__(self, init: HeadersInit = None) -> None:
        self._items: list[tuple[str, str]] = []
        # PERF: lower-cased name → values, built on the first lookup and dropped on change;
        # a request's headers are read many times and written rarely.
        self._index: dict[str, list[str]] | None = None
        if init is None:
            return
        # PERF: a duck-typed check; isinstance against the Mapping ABC costs ~1 µs.
        pairs = init.items() if hasattr(init, "items") else init
        self._items = [(str(name), str(value)) for name, value in pairs]

    @classmethod
    def from_lines(cls, lines: list[tuple[str, str]]) -> Headers:
        """Headers holding ``lines`` (a list of str pairs, taken as it is, not copied)."""
        headers = cls()
        headers._items = lines
        return headers

    def add(self, name: str, value: str) -> None:
        """Append one header line."""
        self._items.append((name, value))
        self._index = None

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
        return self._lookup()

    def get_list(self, name: str) -> list[str]:
        """Every value of ``name`` in order."""
        return list(self._lookup().get(name.lower(), ()))

    def get_joined(self, name: str) -> str | None:
        """The value of ``name`` (lines joined with ", "), or None; ``name`` is lower case."""
        values = self._lookup().get(name)
        if not values:
            return None
        return values[0] if len(values) == 1 else ", ".join(values)

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        """The value of ``name`` (lines joined with ", "), or ``default``.

        PERF: answered from the index; the Mapping mixin would raise and catch a KeyError for
        every absent header.
        """
        values = self._lookup().get(name.lower())
        if not values:
            return default
        return values[0] if len(values) == 1 else ", ".join(values)

    def items_list(self) -> list[tuple[str, str]]:
        """Every header line as (name, value), in order, duplicates included."""
        return list(self._items)

    def copy(self) -> Headers:
        """A shallow copy."""
        return Headers(self._items)

    def __getitem__(self, name: str) -> str:
        values = self._lookup().get(name.lower())
        if not values:
            raise KeyError(name)
        return values[0] if len(values) == 1 else ", ".join(values)

    def __setitem__(self, name: str, value: str) -> None:
        key = name.lower()
        # PERF: a scan, not the index: response headers are written more than read.
        if any(item[0].lower() == key for item in self._items):
            self._items = [item for item in self._items if item[0].lower() != key]
        self._items.append((name, value))
        self._index = None

    def __delitem__(self, name: str) -> None:
        key = name.lower()
        kept = [item for item in self._items if item[0].lower() != key]
        if len(kept) == len(self._items):
            raise KeyError(name)
        self._items = kept
        self._index = None

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = name.lower()
        index = self._index
        if index is None and len(self._items) <= 8:
            # PERF: a response's few lines change between reads; scanning them beats
            # rebuilding the index each time.
            return any(item[0].lower() == key for item in self._items)
        return key in self._lookup()

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
                (n.lower(), v) for n, v in other._items
            )
        if isinstance(other, Mapping):
            return dict(self.items()) == {str(k): str(v) for k, v in other.items()} or {
                k.lower(): v for k, v in self.items()
            } == {str(k).lower(): str(v) for k, v in other.items()}
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable mapping

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"

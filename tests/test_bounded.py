"""The bounded memories: the auth caches (oldest first, in entries and in bytes) and the
request path's memos (short keys, emptied when full)."""

from __future__ import annotations

import pytest

from svcrest.bounded import BoundedDict, Memo


def _length(key: str, value: str) -> int:
    return len(value)


def _by_bytes(max_bytes: int, dropped: list[tuple[str, str]]) -> BoundedDict[str, str]:
    """At most 100 entries and ``max_bytes`` characters of values; ``dropped`` records what
    leaves one by one."""
    return BoundedDict(100, max_bytes, _length, lambda key, value: dropped.append((key, value)))


def test_the_oldest_entries_go_first() -> None:
    memo: BoundedDict[str, int] = BoundedDict(3)
    for index, key in enumerate("abcde"):
        assert memo.put(key, index)
    assert memo.entries == {"c": 2, "d": 3, "e": 4}
    assert list(memo.entries) == ["c", "d", "e"]
    assert (len(memo), memo.get("b"), memo.get("d"), memo.size_bytes) == (3, None, 3, 0)


def test_replacing_a_key_makes_it_the_newest_without_evicting() -> None:
    memo: BoundedDict[str, int] = BoundedDict(4)
    for index, key in enumerate("abc"):
        memo.put(key, index)
    memo.put("a", 10)
    assert list(memo.entries.items()) == [("b", 1), ("c", 2), ("a", 10)]
    memo.put("d", 3)
    memo.put("e", 4)
    assert list(memo.entries.items()) == [("c", 2), ("a", 10), ("d", 3), ("e", 4)]


def test_refresh_makes_an_entry_the_newest() -> None:
    memo: BoundedDict[str, int] = BoundedDict(3)
    for index, key in enumerate("abc"):
        memo.put(key, index)
    memo.refresh("a")
    memo.refresh("missing")
    assert list(memo.entries) == ["b", "c", "a"]
    memo.put("d", 3)
    assert list(memo.entries) == ["c", "a", "d"]


def test_the_byte_bound_evicts_the_oldest_until_the_new_entry_fits() -> None:
    dropped: list[tuple[str, str]] = []
    memo = _by_bytes(10, dropped)
    memo.put("a", "aaaa")
    memo.put("b", "bbbb")
    assert (list(memo.entries), memo.size_bytes) == (["a", "b"], 8)
    memo.put("c", "ccc")  # 8 + 3 > 10: "a" goes
    assert (list(memo.entries), memo.size_bytes) == (["b", "c"], 7)
    memo.put("d", "ddd")  # 7 + 3 = 10 fits
    assert (list(memo.entries), memo.size_bytes) == (["b", "c", "d"], 10)
    memo.put("e", "e" * 10)  # only alone
    assert (list(memo.entries), memo.size_bytes) == (["e"], 10)
    assert dropped == [("a", "aaaa"), ("b", "bbbb"), ("c", "ccc"), ("d", "ddd")]


def test_an_entry_larger_than_the_byte_bound_is_not_kept() -> None:
    dropped: list[tuple[str, str]] = []
    memo = _by_bytes(10, dropped)
    memo.put("a", "aaaa")
    assert memo.put("a", "x" * 11) is False
    assert (memo.entries, memo.size_bytes, dropped) == ({"a": "aaaa"}, 4, [])


def test_replacing_a_key_counts_its_new_size() -> None:
    dropped: list[tuple[str, str]] = []
    memo = _by_bytes(10, dropped)
    memo.put("a", "aaaa")
    memo.put("b", "bb")
    memo.put("a", "aaaaa")  # the old "a" goes first: 2 + 5 fits
    assert (list(memo.entries.items()), memo.size_bytes) == ([("b", "bb"), ("a", "aaaaa")], 7)
    assert dropped == [("a", "aaaa")]


def test_remove_returns_the_value_and_frees_its_bytes() -> None:
    dropped: list[tuple[str, str]] = []
    memo = _by_bytes(10, dropped)
    memo.put("a", "aaaa")
    memo.put("b", "bbb")
    assert memo.remove("a") == "aaaa"
    assert memo.remove("a") is None
    assert (memo.entries, memo.size_bytes, dropped) == ({"b": "bbb"}, 3, [("a", "aaaa")])


def test_clear_empties_the_same_dict_without_calling_dropped() -> None:
    dropped: list[tuple[str, str]] = []
    memo = _by_bytes(10, dropped)
    entries = memo.entries
    memo.put("a", "aaaa")
    memo.put("b", "bbb")
    memo.clear()
    assert (len(memo), memo.size_bytes, dropped) == (0, 0, [])
    assert memo.entries is entries
    memo.put("c", "c" * 10)
    assert (entries, memo.size_bytes) == ({"c": "c" * 10}, 10)


class _Stolen:
    """A key another writer takes out of the dict just as an eviction pops it (a race lost by
    a writer without a lock: the pop hashes the key, then finds it gone)."""

    def __init__(self, memo: BoundedDict[object, int]) -> None:
        self.memo = memo
        self.armed = False

    def __hash__(self) -> int:
        if self.armed:
            self.armed = False
            del self.memo.entries[self]
        return 1234


def test_a_writer_that_loses_a_race_empties_the_dict_instead_of_raising() -> None:
    memo: BoundedDict[object, int] = BoundedDict(2)
    stolen = _Stolen(memo)
    memo.put(stolen, 1)
    memo.put("b", 2)
    stolen.armed = True
    assert memo.put("c", 3)
    assert memo.entries == {"c": 3}


@pytest.mark.parametrize(
    ("max_entries", "max_bytes", "with_size", "message"),
    [
        (0, None, False, "at least one entry"),
        (1, 10, False, "needs a size function"),
        (1, None, True, "needs a size function"),
        (1, 0, True, "must be positive"),
    ],
)
def test_bounds_are_checked(
    max_entries: int, max_bytes: int | None, with_size: bool, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        BoundedDict(max_entries, max_bytes, _length if with_size else None)


# -- Memo: the request path's memories -------------------------------------------------------


def test_a_memo_is_emptied_when_full_and_answers_what_it_keeps() -> None:
    memo: Memo[str, int] = Memo(3)
    assert [memo.keep(key, index) for index, key in enumerate("abc")] == [0, 1, 2]
    assert memo.entries == {"a": 0, "b": 1, "c": 2}
    assert memo.keep("d", 3) == 3
    assert memo.entries == {"d": 3}
    assert (len(memo), "d" in memo, "a" in memo, list(memo)) == (1, True, False, ["d"])
    assert memo.get("a") is None


def test_a_memo_keeps_only_short_keys() -> None:
    memo: Memo[str, str] = Memo(10, longest=4)
    assert memo.keep("abcd", "kept") == "kept"
    assert memo.keep("abcde", "not kept") == "not kept"
    assert memo.entries == {"abcd": "kept"}


def test_a_memo_measures_keys_with_its_length_function() -> None:
    memo: Memo[tuple[str, str], int] = Memo(10, longest=5, length=lambda key: len(key[0] + key[1]))
    memo.keep(("ab", "cde"), 1)
    memo.keep(("ab", "cdef"), 2)
    assert memo.entries == {("ab", "cde"): 1}


def test_a_memo_needs_room() -> None:
    with pytest.raises(ValueError, match="at least one entry"):
        Memo(0)

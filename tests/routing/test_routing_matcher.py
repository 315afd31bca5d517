"""The compiled matcher gives exactly the answers of a naive in-order regex scan."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svcrest.rest.routing.definitions import RoutePatternError
from svcrest.rest.routing.matcher import (
    CompiledMatcher,
    RoutePattern,
    literal_prefix,
)
from svcrest.rest.routing.table import RouteTable

#: PCRE's ``i`` without ``u`` (WordPress's route regexes): ASCII classes, ASCII case folding.
WORDPRESS_FLAGS = re.ASCII | re.IGNORECASE


def naive(patterns: list[str], path: str) -> tuple[int, dict[str, str]] | None:
    for index, pattern in enumerate(patterns):
        match = re.fullmatch(pattern, path, WORDPRESS_FLAGS)
        if match is not None:
            return index, {k: v for k, v in match.groupdict().items() if v is not None}
    return None


@pytest.mark.parametrize(
    ("pattern", "prefix"),
    [
        ("/demo/v1/items/(?P<id>\\d+)", ("demo", "v1", "items")),
        ("/demo/v1/items", ("demo", "v1", "items")),
        ("/Demo/V1", ("demo", "v1")),
        ("/", ("",)),
        ("/demo/v1/?(?P<x>.*)", ("demo",)),
        ("/demo/v1/*", ("demo",)),
        ("/demo/v1|/other", ()),
        ("/demo/(a|b)/c", ("demo",)),
        ("/de.mo/v1", ()),
        ("(?i)/demo", ()),
        ("demo/v1", ()),
        ("/d\u00e9mo/v1", ()),
        ("/demo/v1/items\\/x", ("demo", "v1")),
        ("/demo/[/]x", ("demo",)),
    ],
)
def test_literal_prefix(pattern: str, prefix: tuple[str, ...]) -> None:
    assert literal_prefix(pattern) == prefix


SEGMENTS = st.sampled_from(
    ["demo", "DEMO", "v1", "V2", "items", "a", "b", "", "x1", "\u212a", "\u212aey", "caf\u00e9"]
)
PATTERN_PARTS = st.sampled_from(
    [
        "demo",
        "v1",
        "V2",
        "items",
        "a",
        "b",
        "x1",
        "k",
        "(?P<id>\\d+)",
        "(?P<slug>[a-z]+)",
        "(a|b)",
        "a?",
        "[ab]",
        ".*",
        "(?:x1)?",
        "d.mo",
        "\\d",
        "items(?P<n>\\d*)",
        "key",
        "caf\u00c9",
        "(?P<w>\\w+)",
        "\\W",
    ]
)


@st.composite
def patterns(draw: st.DrawFn) -> str:
    parts = draw(st.lists(PATTERN_PARTS, min_size=0, max_size=4))
    pattern = "/" + "/".join(parts)
    tail = draw(st.sampled_from(["", "/?", "|/b", "/(?P<rest>.*)"]))
    for candidate in (pattern + tail, pattern, "/"):
        try:
            re.compile(candidate)
        except re.error:
            continue
        return candidate
    raise AssertionError("unreachable: '/' compiles")


@st.composite
def paths(draw: st.DrawFn) -> str:
    segments = draw(
        st.lists(
            st.one_of(SEGMENTS, st.from_regex(r"[0-9]{1,3}", fullmatch=True)),
            min_size=0,
            max_size=5,
        )
    )
    return "/" + "/".join(segments)


@settings(max_examples=400, deadline=None)
@given(st.lists(patterns(), min_size=1, max_size=25), st.lists(paths(), min_size=1, max_size=8))
def test_compiled_matcher_equals_naive_scan(table: list[str], requests: list[str]) -> None:
    matcher = CompiledMatcher([RoutePattern(p) for p in table])
    for path in [*requests, *table]:
        assert matcher.first_match(path) == naive(table, path), path


@settings(max_examples=200, deadline=None)
@given(st.lists(patterns(), min_size=1, max_size=15), paths())
def test_every_match_in_order(table: list[str], path: str) -> None:
    matcher = CompiledMatcher([RoutePattern(p) for p in table])
    expected = [i for i, p in enumerate(table) if re.fullmatch(p, path, WORDPRESS_FLAGS)]
    assert [index for index, _ in matcher.iter_matches(path)] == expected


@pytest.mark.parametrize(
    ("route", "path", "expected"),
    [
        ("/key", "/\u212aey", None),  # KELVIN SIGN: not k without PCRE's u
        ("/key", "/KEY", (0, {})),
        ("/caf\u00e9", "/CAF\u00c9", None),  # only ASCII letters match their other case
        ("/caf\u00e9", "/CAF\u00e9", (0, {})),
        ("/ns/v1/caf\u00e9", "/NS/V1/caf\u00e9", (0, {})),
        ("(?u)/key", "/\u212aey", (0, {})),  # a leading (?u) asks for Unicode
        ("/ns/(?u:(?P<w>\\w+))", "/ns/\u00e9t\u00e9", (0, {"w": "\u00e9t\u00e9"})),
        ("/ns/(?P<w>\\w+)", "/ns/\u00e9t\u00e9", None),
    ],
)
def test_case_folds_ascii_letters_only_unless_the_pattern_asks(
    route: str, path: str, expected: tuple[int, dict[str, str]] | None
) -> None:
    assert CompiledMatcher([RoutePattern(route)]).first_match(path) == expected


@pytest.mark.parametrize(
    ("route", "path", "expected"),
    [
        ("/ns/v1/^x", "/ns/v1/x", None),
        ("/ns/v1/(?<=v1/)x", "/ns/v1/x", (0, {})),
        ("/ns/v1/(?<=v2/)x", "/ns/v1/x", None),
        ("/ns/v1/\\bx", "/ns/v1/x", (0, {})),
        ("/NS/v1/(?P<id>\\d+)", "/ns/V1/7", (0, {"id": "7"})),
        ("/ns/v1", "/ns/v1", (0, {})),
        ("/ns/v1", "/ns/v1x", None),
        ("/ns/v1/(?P<rest>.*)", "/ns/v1", None),
        ("//(?P<rest>.*)", "/", None),
    ],
)
def test_tail_matching_keeps_full_pattern_semantics(
    route: str, path: str, expected: tuple[int, dict[str, str]] | None
) -> None:
    assert CompiledMatcher([RoutePattern(route)]).first_match(path) == expected
    assert naive([route], path) == expected


@pytest.mark.parametrize(
    ("route", "path", "expected"),
    [
        ("/ns/v1/items/(?P<id>\\d+)", "/ns/v1/items/\uff11", None),  # FULLWIDTH DIGIT ONE
        ("/ns/v1/items/(?P<id>\\d+)", "/ns/v1/items/1\u0661", None),  # ARABIC-INDIC ONE
        ("/ns/v1/items/(?P<id>\\d+)", "/ns/v1/items/19", (0, {"id": "19"})),
        ("(?P<id>\\d+)", "\u0967", None),  # no literal prefix: DEVANAGARI DIGIT ONE
        ("/ns/v1/(?P<id>[\\d-]+)", "/ns/v1/\uff11-2", None),
        ("/ns/v1/(?P<id>[\\d-]+)", "/ns/v1/1-2", (0, {"id": "1-2"})),
        ("/ns/v1/(?P<x>\\D+)", "/ns/v1/\uff11", (0, {"x": "\uff11"})),
        ("/ns/v1/(?P<x>\\D+)", "/ns/v1/a1", None),
        ("/ns/v1/(?P<x>[\\D_]+)", "/ns/v1/\uff11_a", (0, {"x": "\uff11_a"})),
        ("/ns/v1/(?P<x>[\\D_]+)", "/ns/v1/a7", None),
        ("/ns/v1/(?P<x>[^\\D]+)", "/ns/v1/42", (0, {"x": "42"})),
        ("/ns/v1/(?P<x>[^\\D]+)", "/ns/v1/4\uff12", None),
        ("/k/(?P<id>\\d+)", "/\u212a/7", None),  # no KELVIN SIGN folding either
        ("/ns/v1/(?#\\d[)(?P<id>\\d)", "/ns/v1/7", (0, {"id": "7"})),  # a comment
        ("(?x)/a # [\\d\n(?P<id>\\d)", "/a7", (0, {"id": "7"})),  # a verbose comment
        ("/ns/v1/(?P<x>[]\\d]+)", "/ns/v1/]1", (0, {"x": "]1"})),  # ] first is literal
        ("/ns/v1/(?P<x>\\\\d)", "/ns/v1/\\d", (0, {"x": "\\d"})),  # escaped backslash
    ],
)
def test_digits_are_ascii_as_in_wordpress(
    route: str, path: str, expected: tuple[int, dict[str, str]] | None
) -> None:
    assert CompiledMatcher([RoutePattern(route)]).first_match(path) == expected


def test_a_pattern_error_after_a_digit_escape_is_placed_as_written() -> None:
    table = RouteTable()
    with pytest.raises(RoutePatternError) as raised:
        table.add("ns/v1", "/ns/v1/items/(?P<id>\\d+)(", {"callback": lambda r: None})
    assert (raised.value.reason, raised.value.position) == (
        "missing ), unterminated subpattern",
        len("/ns/v1/items/(?P<id>\\d+)"),
    )
    assert RoutePattern("/ns/v1/items/(?P<id>\\d+)").route == "/ns/v1/items/(?P<id>\\d+)"


def test_routes_share_compiled_tails() -> None:
    one, two = RoutePattern("/a/v1/x/(?P<id>\\d+)"), RoutePattern("/b/v2/y/(?P<id>\\d+)")
    assert one.tail is two.tail
    assert (one.offset, two.offset) == (len("/a/v1/x/"), len("/b/v2/y/"))


def test_many_routes_only_walks_candidates() -> None:
    table = [f"/ns{n}/v1/items{r}/(?P<id>\\d+)" for n in range(100) for r in range(100)]
    matcher = CompiledMatcher([RoutePattern(p) for p in table])
    assert matcher.first_match("/ns99/v1/items99/42") == (9999, {"id": "42"})
    assert list(matcher._candidates("/ns99/v1/items99/42")) == [9999]
    assert matcher.first_match("/ns99/v1/nothing") is None


def test_non_ascii_paths_walk_the_trie_folding_ascii_letters_only() -> None:
    table = [f"/ns{n}/v1/items{r}/(?P<id>[^/]+)" for n in range(10) for r in range(10)]
    table.append("/key/(?P<id>[^/]+)")
    matcher = CompiledMatcher([RoutePattern(p) for p in table])
    assert list(matcher._candidates("/NS9/V1/ITEMS9/\u00e9")) == [99]
    assert matcher.first_match("/NS9/V1/ITEMS9/\u00e9") == (99, {"id": "\u00e9"})
    assert list(matcher._candidates("/\u212aey/1")) == []  # the KELVIN SIGN is not k
    assert matcher.first_match("/\u212aey/1") is None
    assert matcher.first_match("/KEY/\u212a") == (100, {"id": "\u212a"})

"""An ASGI scope's header lines read on demand: every answer is the one the decoded lines
give, before and after they are decoded, with names that come twice, after changes (as a
WSGI environ's), and with bounded memories of the names asked."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svcrest.bounded import Memo
from svcrest.http import scope_headers
from svcrest.http.environ import EnvironHeaders
from svcrest.http.headers import (
    PROBE_LONGEST,
    Headers,
    OnDemandHeaders,
    asgi_header_lines,
    probe_length,
)
from svcrest.http.scope_headers import ScopeHeaders

NAMES = [b"host", b"origin", b"cookie", b"x-svc-nonce", b"content-length", b"x-a", b"\xdf"]
VALUES = [b"", b"0", b"a b", b"x, y", b"\xe9t\xe9"]
#: Names asked of the headers: lower case (as the pipeline asks), other cases, and names no
#: Latin-1 line can have.
ASKED = ["host", "origin", "cookie", "x-svc-nonce", "content-length", "x-a", "ß", "Cookie", "€", ""]
PROBES = [
    frozenset({"cookie", "authorization", "x-svc-nonce", "x-wp-nonce"}),
    frozenset({"transfer-encoding", "content-length"}),
    frozenset({"ß", "€"}),
    frozenset(),
]


def _answers(headers: Headers) -> list[object]:
    return [
        *((headers.get_joined(name), headers.get(name, "-")) for name in ASKED),
        *(headers.has_any(names) for names in PROBES),
    ]


@given(st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES)), max_size=8))
def test_scope_headers_answer_as_their_decoded_lines(raw: list[tuple[bytes, bytes]]) -> None:
    decoded = Headers.from_lines(*asgi_header_lines(raw))
    lazy = ScopeHeaders(raw)
    before = _answers(lazy)
    assert before == _answers(decoded)
    assert lazy.items_list() == decoded.items_list()  # decoded on demand, in order
    assert _answers(lazy) == before
    assert lazy == decoded


@given(
    st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES)), max_size=8),
    st.booleans(),
)
def test_the_asgi_adapters_headers_are_the_scopes_as_the_class_makes_them(
    raw: list[tuple[bytes, bytes]], as_tuple: bool
) -> None:
    """The ASGI adapter makes a request's ``ScopeHeaders`` without the class call: the same
    state as ``ScopeHeaders(lines)``, and the same answers, for a list or any other iterable
    of pairs (a name that comes twice included)."""
    from svcrest.serve.asgi import _request

    lines: Any = tuple(raw) if as_tuple else raw
    scope = {"type": "http", "method": "GET", "path": "/", "headers": lines}
    made = _request(scope)[0].headers
    assert type(made) is ScopeHeaders
    expected = ScopeHeaders(lines)
    if expected.single is None:  # a name came twice: the adapter asked Host of the listed lines
        expected.get_joined("host")
    assert (made.single, made._raw, made._listed_lines) == (
        expected.single,
        expected._raw,
        expected._listed_lines,
    )
    assert made._raw is None or type(made._raw) is list
    assert _answers(made) == _answers(expected)
    assert made.items_list() == expected.items_list()


def test_a_name_that_comes_twice_is_answered_joined() -> None:
    headers = ScopeHeaders([(b"cookie", b"a=1"), (b"accept", b"x"), (b"cookie", b"b=2")])
    assert headers.get_joined("cookie") == "a=1; b=2"
    assert headers.get("Accept") == "x"
    assert headers.get_list("cookie") == ["a=1", "b=2"]


SOURCES: list[tuple[Callable[[Any], OnDemandHeaders], Any]] = [
    (ScopeHeaders, [(b"cookie", b"a=1"), (b"origin", b"https://a.test")]),
    (EnvironHeaders, {"HTTP_COOKIE": "a=1", "HTTP_ORIGIN": "https://a.test", "PATH": "/bin"}),
]


@pytest.mark.parametrize(("make", "source"), SOURCES, ids=["scope", "environ"])
def test_changed_headers_answer_from_their_lines(
    make: Callable[[Any], OnDemandHeaders], source: Any
) -> None:
    before = copy.deepcopy(source)
    headers = make(source)
    assert headers.get_joined("cookie") == "a=1"
    headers["Cookie"] = "b=2"
    headers.add("X-Svc-Nonce", "n")
    del headers["origin"]
    assert headers.get_joined("cookie") == "b=2"
    assert headers.get("Origin") is None
    assert headers.has_any(frozenset({"x-svc-nonce"})) is True
    assert headers.items_list() == [("Cookie", "b=2"), ("X-Svc-Nonce", "n")]
    assert source == before  # the server's own form is never changed


@pytest.mark.parametrize(("make", "source"), SOURCES, ids=["scope", "environ"])
def test_listed_headers_answer_every_mapping_question_as_plain_headers(
    make: Callable[[Any], OnDemandHeaders], source: Any
) -> None:
    headers = make(copy.deepcopy(source))
    not_a_name: object = 3
    plain = Headers([("Cookie", "a=1"), ("Origin", "https://a.test")])
    assert (
        len(headers),
        sorted(n.lower() for n in headers),
        "COOKIE" in headers,
        not_a_name in headers,
    ) == (
        2,
        ["cookie", "origin"],
        True,
        False,
    )
    assert headers == plain and headers == {"cookie": "a=1", "origin": "https://a.test"}
    assert type(headers.listed()) is Headers
    assert headers.index() == {"cookie": ["a=1"], "origin": ["https://a.test"]}
    copied = headers.copy()
    headers.extend([("X-A", "1"), ("X-A", "2")])
    assert (headers.get_list("x-a"), headers.is_empty(), "x-a" in copied) == (
        ["1", "2"],
        False,
        False,
    )
    assert repr(headers).startswith(type(headers).__name__ + "([")


def test_any_iterable_of_pairs_is_read() -> None:
    headers = ScopeHeaders(iter([(b"host", b"a.test"), (b"x-a", b"1")]))
    assert (headers.get_joined("host"), headers.items_list()) == (
        "a.test",
        [("host", "a.test"), ("x-a", "1")],
    )


def test_the_memories_of_asked_names_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    names: Memo[str, bytes] = Memo(2, scope_headers._NAME_LENGTH)
    probes: Memo[frozenset[str], Any] = Memo(2, PROBE_LONGEST, probe_length)
    monkeypatch.setattr(scope_headers, "_RAW_NAMES", names)
    monkeypatch.setattr(scope_headers, "_PROBES", probes)
    monkeypatch.setattr(scope_headers, "_raw_name_of", names.get)
    monkeypatch.setattr(scope_headers, "_probe_of", probes.get)
    headers = ScopeHeaders([(b"x-a", b"1")])
    long_name = "x-" + "a" * 63
    assert [headers.get_joined(name) for name in ("x-a", "x-b", "x-c", long_name)] == [
        "1",
        None,
        None,
        None,
    ]
    assert list(names) == ["x-c"]  # emptied when full; the long name never kept
    many = frozenset(f"x-{n}" for n in range(17))
    assert [headers.has_any(names) for names in (many, frozenset({long_name}))] == [False, False]
    assert len(probes) == 0  # too many names; a name too long
    asked = [frozenset({"x-a"}), frozenset({"x-b"}), frozenset({"x-c"})]
    assert [headers.has_any(names) for names in asked] == [True, False, False]
    assert list(probes) == asked[2:]  # emptied when full (at 2)


#: Header names (each Latin-1 but the last two), for the probe's tests.
_PROBED = ["authorization", "cookie", "x-wp-nonce", "x-svc-nonce", "x-api-key", "ß", "€"]


@pytest.mark.parametrize("count", range(1, len(_PROBED) + 1))
def test_has_any_of_up_to_four_names_tests_each_and_answers_as_isdisjoint(count: int) -> None:
    """One to four names are tested one by one in the scope's lines (the fast path), more
    through ``isdisjoint``: both answer as ``isdisjoint`` of the names' bytes would, and as
    the decoded lines do, for every line present; a name no Latin-1 line can have is left
    out of both."""
    names = frozenset(_PROBED[:count])
    raw, four = scope_headers._probe(names)
    assert raw == frozenset(n.encode("latin-1") for n in _PROBED[:count] if n != "€")
    assert (four is not None) is (0 < len(raw) <= 4)
    if four is not None:
        assert set(four) == raw
    assert scope_headers.raw_names(names) == raw
    for present in [*(n.encode("latin-1") for n in _PROBED[:-1]), b"origin", b""]:
        lines = [(b"host", b"a.test"), (present, b"x")] if present else [(b"host", b"a.test")]
        headers = ScopeHeaders(lines)
        assert headers.single is not None
        expected = not raw.isdisjoint(headers.single)
        assert headers.has_any(names) is expected, present
        assert Headers.from_lines(*asgi_header_lines(lines)).has_any(names) is expected, present

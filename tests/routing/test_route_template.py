"""Route patterns as OpenAPI path templates: named groups, unnamed groups, and routes no single
template describes."""

from __future__ import annotations

import pytest

from svcrest.rest.routing.template import PathParam, RouteTemplate, route_template


@pytest.mark.parametrize(
    ("route", "path", "params"),
    [
        pytest.param("/demo/v1/notes", "/demo/v1/notes", (), id="static"),
        pytest.param("/", "/", (), id="root"),
        pytest.param(
            r"/demo/v1/notes/(?P<id>\d+)",
            "/demo/v1/notes/{id}",
            (PathParam("id", r"\d+"),),
            id="named-group",
        ),
        pytest.param(
            r"/svc/v2/users/(?P<user_id>\d+|me)/application-passwords/(?P<uuid>[\w-]+)",
            "/svc/v2/users/{user_id}/application-passwords/{uuid}",
            (PathParam("user_id", r"\d+|me"), PathParam("uuid", r"[\w-]+")),
            id="alternation-inside-a-group",
        ),
        pytest.param(
            r"/a/(?P<slug>[a-z]+(?:-[a-z]+)*)/(?P<n>[)(]+)",
            "/a/{slug}/{n}",
            (PathParam("slug", "[a-z]+(?:-[a-z]+)*"), PathParam("n", "[)(]+")),
            id="nested-groups-and-parentheses-in-a-class",
        ),
        pytest.param(
            r"/a/(?P<outer>x(?P<inner>\d))",
            "/a/{outer}",
            (PathParam("outer", r"x(?:\d)"),),
            id="nested-named-group-made-non-capturing",
        ),
        pytest.param(
            r"/a/(\d+)/b/(?:x|y)",
            "/a/{group1}/b/{group2}",
            (PathParam("group1", r"\d+", named=False), PathParam("group2", "x|y", named=False)),
            id="unnamed-groups",
        ),
        pytest.param(
            r"/a/(\d+)/(?P<group1>\w+)",
            "/a/{group1_}/{group1}",
            (PathParam("group1_", r"\d+", named=False), PathParam("group1", r"\w+")),
            id="unnamed-name-taken",
        ),
        pytest.param(r"/files/report\.json", "/files/report.json", (), id="escaped-dot"),
        pytest.param(r"/v1\/x\-y", "/v1/x-y", (), id="escaped-punctuation"),
        pytest.param("/files/report.json", "/files/report.json", (), id="bare-dot-as-dot"),
        pytest.param(r"^/a/(?P<id>\d+)$", "/a/{id}", (PathParam("id", r"\d+"),), id="anchors"),
        pytest.param("(?i)/a(?#comment)/b", "/a/b", (), id="flags-and-comment"),
    ],
)
def test_route_templates(route: str, path: str, params: tuple[PathParam, ...]) -> None:
    assert route_template(route) == RouteTemplate(path, params)


@pytest.mark.parametrize(
    "route",
    [
        pytest.param(r"/a/\d+", id="class-escape"),
        pytest.param("/a/[0-9]+", id="character-class"),
        pytest.param("/a|/b", id="top-level-alternation"),
        pytest.param("/ab?", id="quantifier"),
        pytest.param(r"/a/(?P<id>\d+)?", id="optional-group"),
        pytest.param(r"/a/(?P<id>\d)+", id="repeated-group"),
        pytest.param(r"/a/(?P<id>\d){2}", id="counted-group"),
        pytest.param("/a/(?=x)x", id="lookahead"),
        pytest.param(r"/a/(?P<x>y)/(?P=x)", id="backreference"),
        pytest.param("/a/(x", id="unbalanced"),
        pytest.param("(?P<all>.*)", id="no-leading-slash"),
    ],
)
def test_routes_no_template_describes(route: str) -> None:
    assert route_template(route) is None

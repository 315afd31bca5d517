"""schemathesis against the served demo (DESIGN §11): ``svcrest serve`` in a subprocess, the
schema read from its ``/openapi.json``, every operation called with generated data (valid and
invalid), anonymously and as a logged-in editor with cookie + nonce. No answer may be a 5xx,
and every answer must conform to the document: status code, content type, headers, body.

The examples per operation are bounded (``MAX_EXAMPLES``), so the run takes seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.browser.support import PASSWORD, USER, Site, running_site

MAX_EXAMPLES = 25
OPERATIONS = [
    "GET /",
    "POST /batch/v1",
    "GET /svc/v2",
    "GET /svc/v2/users/{user_id}/application-passwords",
    "POST /svc/v2/users/{user_id}/application-passwords",
    "DELETE /svc/v2/users/{user_id}/application-passwords",
    "GET /svc/v2/users/{user_id}/application-passwords/{uuid}",
    "DELETE /svc/v2/users/{user_id}/application-passwords/{uuid}",
    "GET /demo/v1",
    "GET /demo/v1/notes",
    "POST /demo/v1/notes",
    "GET /demo/v1/notes/{id}",
    "PUT /demo/v1/notes/{id}",
    "PATCH /demo/v1/notes/{id}",
    "DELETE /demo/v1/notes/{id}",
    "GET /demo/v1/notes/changes",
    "GET /demo/v1/users/{id}",
]
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with running_site(Path(tmp_path_factory.mktemp("schemathesis"))) as site:
        yield site


@pytest.fixture(scope="module")
def api_schema(served: Site) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(served.url + "/openapi.json", timeout=10)


@pytest.fixture(scope="module")
def editor(served: Site) -> dict[str, dict[str, str]]:
    """The editor's headers and cookies: the login cookie and a nonce."""
    with httpx.Client(base_url=served.url, trust_env=False, timeout=10) as client:
        login = client.post("/login", data={"log": USER, "pwd": PASSWORD})
        assert login.status_code == 303, login.text
        cookie = client.cookies["svc_logged_in"]
        nonce = client.get("/auth/nonce").json()["nonce"]
    return {"headers": {"X-SVC-Nonce": nonce}, "cookies": {"svc_logged_in": cookie}}


bounded = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
    derandomize=True,
)


#: The longest ``wait`` of a change feed's long-poll the fuzzer sends (a generated wait of up to
#: 30 s, valid, would hold each call that long when nothing changes).
SHORT_WAIT = 0.2


def short_wait(case: schemathesis.Case[Any]) -> None:
    """Shorten a valid ``wait`` of ``case`` to `SHORT_WAIT` (an invalid one stays: it is
    refused at once)."""
    wait = case.query.get("wait") if isinstance(case.query, dict) else None
    if isinstance(wait, int | float) and not isinstance(wait, bool) and SHORT_WAIT < wait <= 30:
        case.query["wait"] = SHORT_WAIT


def check_every_operation(
    api_schema: schemathesis.BaseSchema, served: Site, credentials: dict[str, dict[str, str]]
) -> list[str]:
    """Run every operation with valid and invalid generated data; the operations tested.

    (schemathesis's pytest plugin does not run on pytest 9, so its strategies are driven by
    hypothesis directly; a failure names the operation and hypothesis shows the case.)
    """
    tested = []
    for result in api_schema.get_all_operations():
        assert isinstance(result, Ok), result
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @bounded
            @given(case=operation.as_strategy(generation_mode=mode))
            def call(case: schemathesis.Case[Any]) -> None:
                short_wait(case)
                response = case.call_and_validate(
                    headers=credentials.get("headers", {}),
                    cookies=credentials.get("cookies", {}),
                    checks=CHECKS,
                    timeout=10,
                )
                assert response.status_code < 500

            try:
                call()
            except Exception as failure:
                raise AssertionError(f"{operation.label} ({mode.value}): {failure}") from failure
        tested.append(operation.label)
    assert "Traceback" not in served.server_log()
    return tested


def test_anonymous_calls_conform(api_schema: schemathesis.BaseSchema, served: Site) -> None:
    tested = check_every_operation(api_schema, served, {})
    assert tested == OPERATIONS


def test_editor_calls_conform(
    api_schema: schemathesis.BaseSchema, served: Site, editor: dict[str, dict[str, str]]
) -> None:
    tested = check_every_operation(api_schema, served, editor)
    assert tested == OPERATIONS

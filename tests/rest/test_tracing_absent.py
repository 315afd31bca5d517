"""Without ``opentelemetry`` installed, serving requests imports nothing of it: a fresh
interpreter whose import system cannot see the package serves a REST request and a batch."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import importlib.machinery
    import importlib.util
    import io
    import json
    import sys
    from wsgiref.util import setup_testing_defaults

    HIDE = sys.argv[1] == "hide"
    asked = []


    class Hidden:
        '''The path finder, blind to the opentelemetry packages.'''

        @staticmethod
        def find_spec(name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                asked.append(name)
                return None
            return importlib.machinery.PathFinder.find_spec(name, path, target)

        @staticmethod
        def invalidate_caches():
            importlib.machinery.PathFinder.invalidate_caches()


    if HIDE:
        finder = importlib.machinery.PathFinder
        sys.meta_path[:] = [Hidden if f is finder else f for f in sys.meta_path]

    import svcrest

    app = svcrest.App("http://example.org")
    app.register_rest_route(
        "t/v1",
        "/items",
        {
            "methods": ["GET", "POST"],
            "callback": lambda: {"ok": True},
            "permission_callback": svcrest.public,
            "allow_batch": {"v1": True},
        },
    )


    def serve(method, path, body=b""):
        environ = {"REQUEST_METHOD": method, "PATH_INFO": path}
        if body:
            environ["CONTENT_TYPE"] = "application/json"
            environ["CONTENT_LENGTH"] = str(len(body))
        environ["wsgi.input"] = io.BytesIO(body)
        setup_testing_defaults(environ)
        statuses = []
        b"".join(app.wsgi(environ, lambda status, headers: statuses.append(status)))
        return statuses[0]


    batch = json.dumps({"requests": [{"path": "/t/v1/items"}]}).encode()
    statuses = [serve("GET", "/svc-json/t/v1/items"), serve("POST", "/svc-json/batch/v1", batch)]
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
    print(json.dumps({"statuses": statuses, "loaded": loaded, "asked": asked}))
    """
)


def _run(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_nothing_of_opentelemetry_is_imported_when_it_is_absent() -> None:
    result = _run("hide")
    assert result == {
        "statuses": ["200 OK", "207 Multi-Status"],
        "loaded": [],
        "asked": ["opentelemetry"],  # looked for once, when the tracing module was imported
    }


def test_the_same_requests_import_it_when_it_is_installed() -> None:
    """The check above can fail: with the package visible, the first request imports it."""
    pytest.importorskip("opentelemetry")
    result = _run("show")
    assert result["statuses"] == ["200 OK", "207 Multi-Status"]
    assert "opentelemetry.trace" in result["loaded"]  # type: ignore[operator]

"""The README's first example runs as written (falcon's test_examples idea)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_first_screen_shows_the_two_commands() -> None:
    first_screen = "\n".join(README.read_text().splitlines()[:15])
    assert "make run" in first_screen
    assert "make test" in first_screen


def test_readme_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    example = blocks[0]
    assert 10 <= len(example.strip().splitlines()) <= 16
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(example, str(README), "exec"), namespace)
    app = namespace["app"]
    from svcrest import App

    assert isinstance(app, App)
    missing = app.rest_do_request("/books/v1/books/101")
    assert (missing.status, missing.data["code"]) == (404, "book_not_found")
    invalid = app.rest_do_request("/books/v1/books/0")
    assert (invalid.status, invalid.data["code"]) == (400, "rest_invalid_param")

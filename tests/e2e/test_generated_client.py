"""A client nobody here wrote: openapi-python-client generates one from the demo's served
``/openapi.json`` without a single warning, and the generated calls (list, get, create,
update, delete of the demo notes, and an error body) work against ``svcrest serve``,
authenticated with an application password made by ``svcrest user app-password add``."""

from __future__ import annotations

import base64
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_e2e_server import served_site, svcrest

PACKAGE = "svcrest_demo_generated"


@pytest.fixture
def generated(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """The running site, its generated client package's directory and the editor's
    application password."""
    db = str(tmp_path / "svcrest.db")
    with served_site(db) as url:
        made = svcrest("user", "app-password", "add", "editor1", "generated client", "--db", db)
        assert made.returncode == 0, made.stderr
        password = made.stdout.strip().splitlines()[-1]
        document = httpx.get(url + "/openapi.json", timeout=10, trust_env=False)
        assert document.status_code == 200
        (tmp_path / "openapi.json").write_bytes(document.content)
        # No post hooks: the generator would run ruff over the output (not its business here).
        (tmp_path / "config.json").write_text(json.dumps({"post_hooks": []}))
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "openapi_python_client",
                "generate",
                "--path",
                "openapi.json",
                "--meta",
                "none",
                "--output-path",
                PACKAGE,
                "--config",
                "config.json",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        assert "warning" not in output.lower(), output
        assert "error" not in output.lower(), output
        sys.path.insert(0, str(tmp_path))
        try:
            yield url, PACKAGE, password
        finally:
            sys.path.remove(str(tmp_path))
            for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
                del sys.modules[name]


def module(name: str) -> Any:
    """A module of the generated package."""
    return importlib.import_module(f"{PACKAGE}.{name}")


@pytest.mark.slow
def test_the_generated_client_drives_the_notes(generated: tuple[str, str, str]) -> None:
    url, _, password = generated
    client_module = module("client")
    models = module("models")
    token = base64.b64encode(f"editor1:{password}".encode()).decode()
    client = client_module.AuthenticatedClient(
        base_url=url + "/svc-json", token=token, prefix="Basic"
    )
    with client:
        create = module("api.demov1.post_demo_v1_notes")
        created = create.sync(
            client=client, body=models.PostDemoV1NotesJsonBody(title="Generated", content="one")
        )
        assert isinstance(created, models.Note), created
        assert (created.title, created.content) == ("Generated", "one")
        create.sync(client=client, body=models.PostDemoV1NotesJsonBody(title="Second"))

        listed = module("api.demov1.get_demo_v1_notes").sync(client=client, per_page=10)
        assert [note.title for note in listed] == ["Second", "Generated"]
        assert all(isinstance(note, models.Note) for note in listed)

        read = module("api.demov1.get_demo_v1_notes_id").sync(id=created.id, client=client)
        assert isinstance(read, models.Note)
        assert read.title == "Generated"

        updated = module("api.demov1.put_demo_v1_notes_id").sync(
            id=created.id, client=client, body=models.PutDemoV1NotesIdJsonBody(title="Edited")
        )
        assert isinstance(updated, models.Note)
        assert (updated.title, updated.content) == ("Edited", "one")

        deleted = module("api.demov1.delete_demo_v1_notes_id").sync(id=created.id, client=client)
        assert deleted.deleted is True
        assert deleted.previous.title == "Edited"

        # Error bodies are parsed into the shared Error model: a 404 and a 400 with params.
        gone = module("api.demov1.get_demo_v1_notes_id").sync(id=created.id, client=client)
        assert isinstance(gone, models.Error), gone
        assert (gone.code, gone.data.status) == ("rest_note_invalid_id", 404)
        refused = create.sync(client=client, body=models.PostDemoV1NotesJsonBody(title=""))
        assert isinstance(refused, models.Error), refused
        assert (refused.code, refused.data.status) == ("rest_invalid_param", 400)
        assert "title" in refused.data.params.to_dict()

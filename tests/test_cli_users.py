"""``svcrest user list|delete|set-password|app-password`` (DESIGN §10)."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest

from svcrest import App
from tests.cli_run import run

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A site with ed (editor, "ed-pw") and ann (subscriber)."""
    path = str(tmp_path / "site.db")
    app = App(store=path)
    app.users.create("ed", "ed-pw", roles=("editor",), display_name="Ed Itor")
    app.users.create("ann", "ann-pw")
    app.store.close()
    return path


def authenticate(db: str, login: str, password: str) -> int | None:
    app = App(store=db)
    try:
        user = app.users.authenticate(login, password)
        return None if user is None else user.id
    finally:
        app.store.close()


def test_user_list(capsys: pytest.CaptureFixture[str], db: str) -> None:
    assert run(capsys, "user", "list", "--db", db) == (
        0,
        "1\ted\teditor\tEd Itor\n2\tann\tsubscriber\tann\n",
        "",
    )


def test_user_delete(capsys: pytest.CaptureFixture[str], db: str) -> None:
    assert run(capsys, "user", "delete", "ANN", "--db", db) == (0, "Deleted user ann.\n", "")
    assert run(capsys, "user", "list", "--db", db)[1] == "1\ted\teditor\tEd Itor\n"
    assert run(capsys, "user", "delete", "ann", "--db", db) == (
        1,
        "",
        "svcrest: error: no user with the login 'ann'\n",
    )


def test_user_set_password_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, db: str
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("new pw\n"))
    assert run(capsys, "user", "set-password", "ed", "--password-stdin", "--db", db) == (
        0,
        "Changed the password of ed.\n",
        "",
    )
    assert authenticate(db, "ed", "new pw") == 1
    assert authenticate(db, "ed", "ed-pw") is None


def test_user_set_password_generated(capsys: pytest.CaptureFixture[str], db: str) -> None:
    status, out, err = run(capsys, "user", "set-password", "ann", "--db", db)
    match = re.fullmatch(r"Changed the password of ann to: ([\w-]{24})\n", out)
    assert (status, err) == (0, "")
    assert match is not None
    assert authenticate(db, "ann", match.group(1)) == 2


def test_user_commands_need_an_existing_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = str(tmp_path / "none.db")
    status, out, err = run(capsys, "user", "list", "--db", missing)
    assert (status, out) == (2, "")
    assert err.startswith(f"svcrest: error: the database {missing!r} does not exist")
    assert not Path(missing).exists()


def test_app_password_add_list_delete(capsys: pytest.CaptureFixture[str], db: str) -> None:
    status, out, err = run(capsys, "user", "app-password", "add", "ed", "My phone", "--db", db)
    assert (status, err) == (0, "")
    match = re.fullmatch(
        rf"Created application password 'My phone' \(({UUID})\) of ed:\n([A-Za-z0-9]{{24}})\n",
        out,
    )
    assert match is not None
    uuid, password = match.groups()
    app = App(store=db)
    try:
        user = app.users.authenticate_application_password("ed", password)
        assert user is not None and user.id == 1
    finally:
        app.store.close()
    status, out, err = run(capsys, "user", "app-password", "list", "ed", "--db", db)
    assert (status, out, err) == (0, f"{uuid}\tMy phone\n", "")
    assert password not in out
    assert run(capsys, "user", "app-password", "list", "ann", "--db", db) == (0, "", "")
    assert run(capsys, "user", "app-password", "delete", "ann", uuid, "--db", db) == (
        1,
        "",
        f"svcrest: error: ann has no application password {uuid!r}\n",
    )
    assert run(capsys, "user", "app-password", "delete", "ed", uuid, "--db", db) == (
        0,
        f"Deleted application password {uuid} of ed.\n",
        "",
    )
    assert run(capsys, "user", "app-password", "list", "ed", "--db", db) == (0, "", "")


def test_app_password_errors(capsys: pytest.CaptureFixture[str], db: str) -> None:
    assert run(capsys, "user", "app-password", "add", "nobody", "x", "--db", db) == (
        1,
        "",
        "svcrest: error: no user with the login 'nobody'\n",
    )
    assert run(capsys, "user", "app-password", "add", "ed", " ", "--db", db) == (
        2,
        "",
        "svcrest: error: An application name is required to create an application password.\n",
    )


def test_app_password_add_with_a_scope(capsys: pytest.CaptureFixture[str], db: str) -> None:
    status, out, err = run(
        capsys,
        "user",
        "app-password",
        "add",
        "ed",
        "agent",
        "--scope",
        "notes/v1",
        "--scope",
        "other/v1",
        "--read-only",
        "--db",
        db,
    )
    assert (status, err) == (0, "")
    match = re.fullmatch(
        rf"Created application password 'agent' \(({UUID}), scope: notes/v1, other/v1;"
        rf" read-only\) of ed:\n([A-Za-z0-9]{{24}})\n",
        out,
    )
    assert match is not None
    uuid = match.group(1)
    status, out, err = run(
        capsys, "user", "app-password", "add", "ed", "reader", "--read-only", "--db", db
    )
    assert status == 0
    reader = re.search(rf"\(({UUID}), read-only\)", out)
    assert reader is not None
    run(capsys, "user", "app-password", "add", "ed", "plain", "--db", db)
    status, out, err = run(capsys, "user", "app-password", "list", "ed", "--db", db)
    lines = out.splitlines()
    assert (status, err, lines[:2]) == (
        0,
        "",
        [
            f"{uuid}\tagent\tscope: notes/v1, other/v1; read-only",
            f"{reader.group(1)}\treader\tread-only",
        ],
    )
    assert re.fullmatch(rf"{UUID}\tplain", lines[2])
    app = App(store=db)
    try:
        item = app.users.get_application_password(1, uuid)
        assert item is not None and (item["scope"], item["read_only"]) == (
            ["notes/v1", "other/v1"],
            True,
        )
    finally:
        app.store.close()


def test_app_password_add_refuses_a_bad_scope(capsys: pytest.CaptureFixture[str], db: str) -> None:
    assert run(
        capsys, "user", "app-password", "add", "ed", "agent", "--scope", "a b", "--db", db
    ) == (2, "", "svcrest: error: 'a b' is not a REST namespace\n")

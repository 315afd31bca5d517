"""Login timing tells nothing about which logins exist: every way a password is checked does
the same work (one scrypt verification with the site's parameters for account passwords,
one fast hash for application passwords), counted here call by call; no timed assertions."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import svcrest.auth.passwords as passwords_module
import svcrest.auth.users as users_module
from svcrest import App, Request, public
from svcrest.auth.passwords import ScryptParams, hash_application_password
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
FAST = ScryptParams(n=16, r=1, p=1)
HOME = "http://127.0.0.1:8000"
ME = "/svc-json/demo/v1/me"


class Site:
    def __init__(self, store: str | None) -> None:
        self.app = App(HOME, clock=lambda: 1_700_000_000.0, secret_key="s", store=store)
        self.app.users.password_params = FAST
        self.alice = self.app.users.create("alice", "alice-pw", roles=("editor",))

        def me(request: Request) -> dict[str, Any]:
            return {"id": request.user.id}

        self.app.register_rest_route(
            "demo/v1", "/me", {"permission_callback": public, "methods": "GET", "callback": me}
        )


@pytest.fixture
def site(store_location: str | None) -> Iterator[Site]:
    made = Site(store_location)
    yield made
    made.app.store.close()


@pytest.fixture
def scrypt_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """The (n, r, p) of every scrypt run from now on."""
    runs: list[tuple[int, int, int]] = []
    real = passwords_module._scrypt

    def counting(password: str, salt: bytes, n: int, r: int, p: int, length: int) -> bytes:
        runs.append((n, r, p))
        return real(password, salt, n, r, p, length)

    monkeypatch.setattr(passwords_module, "_scrypt", counting)
    return runs


#: (login, password) of every path through a password check: right, wrong and empty
#: passwords of an existing login, an unknown login, an empty one, one too long to exist, and
#: values of the wrong type.
PATHS: list[tuple[Any, Any]] = [
    ("alice", "alice-pw"),
    ("alice", "wrong"),
    ("alice", ""),
    ("ALICE", ""),
    ("nobody", ""),
    ("nobody", "wrong"),
    ("", ""),
    ("", "alice-pw"),
    ("x" * 300, "alice-pw"),
    ("alice", None),
    (None, "alice-pw"),
]


def test_every_authenticate_path_runs_one_scrypt_with_the_sites_parameters(
    site: Site, scrypt_runs: list[tuple[int, int, int]]
) -> None:
    users = site.app.users
    counts = []
    for login, password in PATHS:
        scrypt_runs.clear()
        users.authenticate(login, password)
        counts.append(list(scrypt_runs))
    assert counts == [[(FAST.n, FAST.r, FAST.p)]] * len(PATHS)
    assert users.authenticate("alice", "alice-pw") == site.alice


def test_the_first_unknown_login_costs_no_more_than_the_next(
    scrypt_runs: list[tuple[int, int, int]],
) -> None:
    app = App(HOME)
    try:
        app.users.password_params = FAST
        app.users.authenticate("nobody", "guess")
        assert scrypt_runs == [(FAST.n, FAST.r, FAST.p)]
        # A change of parameters is followed by the unknown-login path.
        app.users.password_params = ScryptParams(n=32, r=1, p=1)
        app.users.authenticate("nobody", "guess")
        assert scrypt_runs[1:] == [(32, 1, 1)]
    finally:
        app.store.close()


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "form"])
def test_every_login_path_runs_one_scrypt(
    site: Site,
    client_for: ClientFor,
    scrypt_runs: list[tuple[int, int, int]],
    as_json: bool,
) -> None:
    client = client_for(site.app)
    answers = []
    for login, password in [(login, pw) for login, pw in PATHS if isinstance(login, str)]:
        if not isinstance(password, str):
            continue
        scrypt_runs.clear()
        fields = {"log": login, "pwd": password}
        sent = client.post("/login", json=fields) if as_json else client.post("/login", data=fields)
        answers.append((login[:10], password, sent.status_code, len(scrypt_runs)))
    right = 200 if as_json else 303
    assert answers == [
        ("alice", "alice-pw", right, 1),
        ("alice", "wrong", 403, 1),
        ("alice", "", 403, 1),
        ("ALICE", "", 403, 1),
        ("nobody", "", 403, 1),
        ("nobody", "wrong", 403, 1),
        ("", "", 403, 1),
        ("", "alice-pw", 403, 1),
        ("x" * 10, "alice-pw", 403, 1),
    ]


def test_every_basic_path_runs_one_fast_hash_and_no_scrypt(
    site: Site,
    client_for: ClientFor,
    scrypt_runs: list[tuple[int, int, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    password, _ = site.app.users.create_application_password(site.alice.id, "phpunit")
    hashes: list[str] = []
    real = hash_application_password

    def counting(value: str) -> str:
        hashes.append(value)
        return real(value)

    monkeypatch.setattr(users_module, "hash_application_password", counting)
    client = client_for(site.app)
    answers = []
    for login, secret in [
        ("alice", password),
        ("alice", "wrong"),
        ("alice", ""),
        ("alice", "alice-pw"),
        ("nobody", password),
        ("nobody", ""),
        ("", ""),
        ("x" * 300, password),
    ]:
        hashes.clear()
        scrypt_runs.clear()
        token = base64.b64encode(f"{login}:{secret}".encode()).decode()
        sent = client.get(ME, headers={"Authorization": f"Basic {token}"})
        answers.append((sent.status_code, len(hashes), len(scrypt_runs)))
    assert answers == [(200, 1, 0)] + [(401, 1, 0)] * 7

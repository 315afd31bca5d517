"""Clients written for WordPress, unmodified, against ``svcrest serve --wordpress-compat``.

``@wordpress/api-fetch`` (from npm, as WordPress's own pages configure it: the root URL and
nonce middlewares, ``nonceEndpoint`` at ``admin-ajax.php?action=rest-nonce``) lists,
creates, updates and deletes the demo's notes, and recovers from a stale nonce with exactly
one refresh. Node has no cookie jar, so the script wraps ``globalThis.fetch`` with one (as a
browser would keep the login cookie); api-fetch itself is untouched.

``wpapi`` 1.2.2 discovers the site, pages (``_paging``) and writes with a nonce, and with an
application password over Basic authentication.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_e2e_server import PASSWORD, npm_install, served_site

API_FETCH_VERSION = "7.56.0"

API_FETCH_SCRIPT = r"""
const apiFetch = require("@wordpress/api-fetch").default;
const home = process.argv[2];
const cookies = new Map();
const nativeFetch = globalThis.fetch;
const nonceFetches = [];
// A browser's cookie jar for this one site: send what it set, keep what it sets.
globalThis.fetch = async (url, options = {}) => {
  const headers = new Headers(options.headers || {});
  if (cookies.size) {
    headers.set("Cookie", [...cookies].map(([k, v]) => `${k}=${v}`).join("; "));
  }
  if (String(url).includes("admin-ajax.php")) nonceFetches.push(String(url));
  const response = await nativeFetch(url, {...options, headers, redirect: "manual"});
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(";");
    const [name, value] = pair.split("=");
    if (value) cookies.set(name, value); else cookies.delete(name);
  }
  return response;
};
globalThis.window = globalThis;

async function main() {
  const login = await globalThis.fetch(home + "/login", {
    method: "POST",
    headers: {"Content-Type": "application/x-www-form-urlencoded"},
    body: "log=editor1&pwd=" + encodeURIComponent(process.argv[3]),
  });
  if (login.status !== 303) throw new Error("login answered " + login.status);
  const nonce = await (await globalThis.fetch(
    home + "/wp-admin/admin-ajax.php?action=rest-nonce")).text();
  nonceFetches.length = 0;
  // What WordPress's inline script does for api-fetch.
  apiFetch.use(apiFetch.createRootURLMiddleware(home + "/svc-json/"));
  apiFetch.nonceMiddleware = apiFetch.createNonceMiddleware(nonce);
  apiFetch.use(apiFetch.nonceMiddleware);
  apiFetch.nonceEndpoint = home + "/wp-admin/admin-ajax.php?action=rest-nonce";

  const created = await apiFetch({path: "/demo/v1/notes", method: "POST",
                                  data: {title: "From api-fetch", content: "one"}});
  const updated = await apiFetch({path: "/demo/v1/notes/" + created.id, method: "PUT",
                                  data: {title: "From api-fetch, edited"}});
  const listed = await apiFetch({path: "/demo/v1/notes"});
  const page = await apiFetch({path: "/demo/v1/notes?per_page=1", parse: false});
  apiFetch.nonceMiddleware.nonce = "0".repeat(32);  // stale: refreshed once, then retried
  const again = await apiFetch({path: "/demo/v1/notes/" + created.id});
  const refreshes = nonceFetches.length;
  const deleted = await apiFetch({path: "/demo/v1/notes/" + created.id, method: "DELETE"});
  let gone = null;
  try {
    await apiFetch({path: "/demo/v1/notes/" + created.id});
  } catch (error) {
    gone = error.code;
  }
  console.log(JSON.stringify({
    created: [created.title, created.content],
    updated: [updated.title, updated.content],
    titles: listed.map((note) => note.title),
    total: page.headers.get("X-WP-Total"),
    totalPages: page.headers.get("X-WP-TotalPages"),
    again: again.title,
    refreshes,
    deleted: deleted.deleted,
    gone,
  }));
}
main().catch((error) => { console.error(JSON.stringify(error) + " " + error); process.exit(1); });
"""


@pytest.fixture(scope="module")
def compat_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = str(tmp_path_factory.mktemp("wpcompat") / "svcrest.db")
    with served_site(db, "--server", "uvicorn", "--interface", "asgi", "--wordpress-compat") as url:
        yield url


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_unmodified_api_fetch_writes_and_refreshes_its_nonce_once(
    compat_server: str, tmp_path: Path
) -> None:
    npm_install(tmp_path, f"@wordpress/api-fetch@{API_FETCH_VERSION}")
    script = tmp_path / "api-fetch.cjs"
    script.write_text(API_FETCH_SCRIPT)
    run = subprocess.run(
        ["node", str(script), compat_server, PASSWORD],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {
        "created": ["From api-fetch", "one"],
        "updated": ["From api-fetch, edited", "one"],
        "titles": ["From api-fetch, edited"],
        "total": "1",
        "totalPages": "1",
        "again": "From api-fetch, edited",
        "refreshes": 1,
        "deleted": True,
        "gone": "rest_note_invalid_id",
    }


WPAPI_SCRIPT = r"""
const WPAPI = require("wpapi");
const [home, cookie, nonce] = process.argv.slice(2);
WPAPI.discover(home).then(async (site) => {
  site.setHeaders("Cookie", cookie);
  site.auth({nonce});  // wpapi sends it as X-WP-Nonce
  const notes = () => site.namespace("demo/v1").notes();
  for (const title of ["first", "second", "third"]) {
    await notes().create({title});
  }
  const page = await notes().perPage(2).get();
  const next = await page._paging.next.get();
  console.log(JSON.stringify({
    total: page._paging.total,
    totalPages: page._paging.totalPages,
    first: page.map((note) => note.title),
    next: next.map((note) => note.title),
    nextOfNext: next._paging.next === undefined,
  }));
}).catch((error) => { console.error(String(error)); process.exit(1); });
"""


@pytest.fixture(scope="module")
def wpapi_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with node-wpapi 1.2.2 installed from npm, shared by the wpapi tests."""
    directory = tmp_path_factory.mktemp("wpapi")
    npm_install(directory, "wpapi@1.2.2")
    return directory


def run_node(
    directory: Path, name: str, source: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """Run the node script ``source`` (saved as ``name`` in ``directory``) with ``args``."""
    script = directory / name
    script.write_text(source)
    return subprocess.run(
        ["node", str(script), *args],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@contextlib.contextmanager
def logged_in_editor(server: str) -> Iterator[tuple[httpx.Client, str]]:
    """A client logged in as ``editor1`` (its cookie kept) and a REST nonce for it."""
    with httpx.Client(base_url=server) as client:
        login = client.post("/login", data={"log": "editor1", "pwd": PASSWORD})
        assert login.status_code == 303
        yield client, client.get("/auth/nonce").json()["nonce"]


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_unmodified_wpapi_pages_and_writes_with_a_nonce(
    compat_server: str, wpapi_dir: Path
) -> None:
    with logged_in_editor(compat_server) as (client, nonce):
        cookie = "svc_logged_in=" + client.cookies["svc_logged_in"]
        for note in client.get("/svc-json/demo/v1/notes?per_page=100").json():
            deleted = client.delete(
                f"/svc-json/demo/v1/notes/{note['id']}", headers={"X-SVC-Nonce": nonce}
            )
            assert deleted.status_code == 200
    run = run_node(wpapi_dir, "wpapi.cjs", WPAPI_SCRIPT, compat_server, cookie, nonce)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {
        "total": 3,
        "totalPages": 2,
        "first": ["third", "second"],
        "next": ["first"],
        "nextOfNext": True,
    }


WPAPI_APP_PASSWORD_SCRIPT = r"""
const WPAPI = require("wpapi");
const [home, username, password] = process.argv.slice(2);
WPAPI.discover(home).then(async (site) => {
  site.auth({username, password});  // wpapi sends Authorization: Basic
  const notes = () => site.namespace("demo/v1").notes();
  const created = await notes().create({title: "Written with an application password"});
  const read = await notes().id(created.id).get();
  let refused;
  try {
    await notes().auth({username, password: "abcd EFGH ijkl MNOP qrst UVWX"}).create({title: "no"});
  } catch (error) {
    refused = [error.code, error.data.status];
  }
  console.log(JSON.stringify({
    created: [created.title, created.author],
    read: read.title,
    refused,
  }));
}).catch((error) => { console.error(JSON.stringify(error) + " " + error); process.exit(1); });
"""


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_unmodified_wpapi_writes_with_an_application_password(
    compat_server: str, wpapi_dir: Path
) -> None:
    # The editor creates an application password over the REST route (cookie + nonce), as a
    # settings page would, and hands it to the script: no cookie, no nonce there.
    with logged_in_editor(compat_server) as (client, nonce):
        created = client.post(
            "/svc-json/svc/v2/users/me/application-passwords",
            json={"name": "wpapi script"},
            headers={"X-SVC-Nonce": nonce},
        )
    assert created.status_code == 201, created.text
    password = created.json()["password"]
    run = run_node(
        wpapi_dir,
        "wpapi-app-password.cjs",
        WPAPI_APP_PASSWORD_SCRIPT,
        compat_server,
        "editor1",
        password,
    )
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    author = answer["created"][1]
    assert answer == {
        "created": ["Written with an application password", author],
        "read": "Written with an application password",
        "refused": ["incorrect_password", 401],
    }
    with logged_in_editor(compat_server) as (client, nonce):
        # The note is the editor's: the application password authenticated them.
        assert client.get(f"/svc-json/demo/v1/users/{author}").json() == {
            "id": author,
            "name": "editor1",
        }
        listed = client.get(
            "/svc-json/svc/v2/users/me/application-passwords",
            headers={"X-SVC-Nonce": nonce},
        ).json()
    (item,) = listed
    assert (item["name"], item["last_ip"]) == ("wpapi script", "127.0.0.1")
    assert item["last_used"] is not None

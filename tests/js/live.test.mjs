// svc-rest.mjs's RestProxy against a live `svcrest serve` (DESIGN.md section 13): result sets
// and pages, headers, api, onException and sync(..., {batch: "server"}).
//
// tests/test_js_module.py starts the server on a free port with a fresh database and the
// editor SVCREST_USER, then runs this file with SVCREST_SITE set; without it the tests skip.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ProxyError, RestClient, RestProxy } from "../../src/svcrest/static/svc-rest.mjs";

const SITE = process.env.SVCREST_SITE;
const skip = SITE ? false : "SVCREST_SITE is not set (tests/test_js_module.py sets it)";
const ROOT = `${SITE}/svc-json/`;
const NOTES = `${ROOT}demo/v1/notes`;
const BATCH = `${ROOT}batch/v1`;
const CLOCK = 1700000000000;
const DC = `_dc=${CLOCK}`;
// Notes 1..5 in this order; newest first is 3, 5, 1, 4, 2.
const SEED = [
  ["Banana bread", "2024-01-03T10:00:00Z"],
  ["apple pie", "2024-01-01T10:00:00Z"],
  ["Cherry jam", "2024-01-05T10:00:00Z"],
  ["Date loaf", "2024-01-02T10:00:00Z"],
  ["Elderflower cordial", "2024-01-04T10:00:00Z"],
];

/** fetch with a cookie jar (as a browser keeps the session cookie), recording each call. */
function cookieFetch() {
  const jar = new Map();
  const calls = [];
  const jarFetch = async (url, init = {}) => {
    const headers = new Headers(init.headers ?? {});
    if (jar.size) headers.set("Cookie", [...jar].map(([name, value]) => `${name}=${value}`).join("; "));
    calls.push({ line: `${init.method ?? "GET"} ${url}`, headers, body: init.body });
    const response = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const line of response.headers.getSetCookie()) {
      const pair = line.split(";")[0];
      const cut = pair.indexOf("=");
      const value = pair.slice(cut + 1);
      if (value && !/max-age=0/i.test(line)) jar.set(pair.slice(0, cut).trim(), value);
      else jar.delete(pair.slice(0, cut).trim());
    }
    return response;
  };
  jarFetch.calls = calls;
  jarFetch.lines = () => calls.map((call) => call.line);
  return jarFetch;
}

/** A RestClient logged in as the editor (session cookie and nonce), and its fetch. */
async function editorClient() {
  const jarFetch = cookieFetch();
  const form = new URLSearchParams({ log: process.env.SVCREST_USER, pwd: process.env.SVCREST_PASSWORD });
  const login = await jarFetch(`${SITE}/login`, { method: "POST", body: form });
  assert.equal(login.status, 303);
  const client = new RestClient({ root: ROOT, nonce: null, fetch: jarFetch });
  await client.refreshNonce();
  jarFetch.calls.length = 0;
  return { client, jarFetch };
}

/** A proxy of the notes, sending with `client`, its errors collected in `reported`. */
function notesProxy(client, options = {}, url = NOTES) {
  const reported = [];
  const proxy = new RestProxy(url, {
    client,
    clock: () => CLOCK,
    onException: (error, operation) => reported.push([error, operation]),
    ...options,
  });
  return { proxy, reported };
}

async function titles(proxy) {
  const notes = await proxy.read(undefined, { per_page: 100 });
  return notes.map((note) => note.title).sort();
}

async function pagesOf(iterator) {
  const pages = [];
  for await (const page of iterator) pages.push(page);
  return pages;
}

describe("RestProxy against svcrest serve", { skip }, () => {
  test("readResult and iterPages follow the paging headers and Link rel=next", async () => {
    const { client, jarFetch } = await editorClient();
    const { proxy } = notesProxy(client);
    const created = await proxy.create(...SEED.map(([title, date]) => ({ title, date })));
    assert.deepEqual(
      created.map((note) => note.id),
      [1, 2, 3, 4, 5],
    );
    jarFetch.calls.length = 0;

    const result = await proxy.readResult(undefined, { per_page: 2, page: 2 });
    assert.deepEqual(
      result.records.map((note) => [note.id, note.title]),
      [
        [1, "Banana bread"],
        [4, "Date loaf"],
      ],
    );
    assert.deepEqual([result.total, result.totalPages], [5, 3]);
    assert.equal(result.nextUrl, `${NOTES}?${DC}&per_page=2&page=3`);
    assert.equal(result.response.status, 200);

    const one = await proxy.readResult(3);
    assert.deepEqual(
      [one.records.map((note) => note.title), one.total, one.totalPages, one.nextUrl],
      [["Cherry jam"], null, null, null],
    );

    jarFetch.calls.length = 0;
    const pages = await pagesOf(proxy.iterPages({ per_page: 2 }));
    assert.deepEqual(
      pages.map((page) => page.records.map((note) => note.id)),
      [[3, 5], [1, 4], [2]],
    );
    assert.deepEqual(
      pages.map((page) => [page.total, page.totalPages]),
      [
        [5, 3],
        [5, 3],
        [5, 3],
      ],
    );
    assert.deepEqual(jarFetch.lines(), [
      `GET ${NOTES}?${DC}&per_page=2`,
      `GET ${NOTES}?${DC}&per_page=2&page=2`,
      `GET ${NOTES}?${DC}&per_page=2&page=3`,
    ]);
    assert.deepEqual(
      jarFetch.calls.map((call) => call.headers.get("X-SVC-Nonce")),
      [client.nonce, client.nonce, client.nonce],
    );
  });

  test("headers go on every request, the nonce refresh included; a recovery reports nothing", async () => {
    const { client, jarFetch } = await editorClient();
    const { proxy, reported } = notesProxy(client, { headers: { "X-Trace": "t-1" } });
    client.nonce = "forged";
    const [note] = await proxy.create({ title: "Traced" });
    assert.equal(note.title, "Traced");
    assert.deepEqual(jarFetch.lines(), [`POST ${NOTES}?${DC}`, `GET ${SITE}/auth/nonce`, `POST ${NOTES}?${DC}`]);
    assert.deepEqual(
      jarFetch.calls.map((call) => call.headers.get("X-Trace")),
      ["t-1", "t-1", "t-1"],
    );
    assert.deepEqual(reported, []);
    await proxy.destroy(note);
  });

  test("api URLs replace the url per action and keep the id rules", async () => {
    const { client, jarFetch } = await editorClient();
    const { proxy } = notesProxy(
      client,
      { api: { create: `${NOTES}?_fields=id,title`, read: NOTES, destroy: NOTES } },
      `${ROOT}demo/v1/nowhere`,
    );
    const [note] = await proxy.create({ title: "Routed" });
    assert.deepEqual(Object.keys(note), ["id", "title"]);
    assert.equal((await proxy.read(note.id)).title, "Routed");
    await proxy.destroy(note);
    await assert.rejects(proxy.update({ id: note.id, title: "U" }), (error) => {
      assert.ok(error instanceof ProxyError);
      assert.deepEqual([error.status, error.code], [404, "rest_no_route"]);
      return true;
    });
    assert.deepEqual(jarFetch.lines(), [
      `POST ${NOTES}?_fields=id,title&${DC}`,
      `GET ${NOTES}/${note.id}?${DC}`,
      `DELETE ${NOTES}/${note.id}?${DC}`,
      `PUT ${ROOT}demo/v1/nowhere/${note.id}?${DC}`,
    ]);
  });

  test("onException is called once per thrown error, with the operation", async () => {
    const { client } = await editorClient();
    const { proxy, reported } = notesProxy(client);
    const error = await proxy.read(999999).catch((caught) => caught);
    assert.ok(error instanceof ProxyError);
    assert.deepEqual([error.code, error.message, error.status], ["rest_note_invalid_id", "Invalid note ID.", 404]);
    assert.deepEqual(reported, [[error, { action: "read", id: 999999, params: undefined }]]);
  });

  test("a server batch sync is one request mapped back to its operations", async () => {
    const { client, jarFetch } = await editorClient();
    const { proxy, reported } = notesProxy(client);
    const [first, second] = await proxy.create({ title: "batch-1" }, { title: "batch-2" });
    const before = await titles(proxy);
    jarFetch.calls.length = 0;
    const result = await proxy.sync(
      { create: [{ title: "batch-3" }], update: [{ id: first.id, title: "batch-1b" }], destroy: [second] },
      { batch: "server" },
    );
    assert.deepEqual(jarFetch.lines(), [`POST ${BATCH}`]);
    assert.deepEqual(JSON.parse(jarFetch.calls[0].body), {
      validation: "normal",
      requests: [
        { method: "POST", path: "/demo/v1/notes", body: { title: "batch-3" } },
        { method: "PUT", path: `/demo/v1/notes/${first.id}`, body: { id: first.id, title: "batch-1b" } },
        { method: "DELETE", path: `/demo/v1/notes/${second.id}` },
      ],
    });
    assert.deepEqual(Object.keys(result), ["create", "update"]);
    assert.deepEqual(
      result.create.map((note) => [note.id, note.title]),
      [[second.id + 1, "batch-3"]],
    );
    assert.deepEqual(
      result.update.map((note) => [note.id, note.title]),
      [[first.id, "batch-1b"]],
    );
    const expected = [...before.filter((title) => !title.startsWith("batch-")), "batch-1b", "batch-3"].sort();
    assert.deepEqual(await titles(proxy), expected);
    assert.deepEqual(reported, []);
  });

  test("a failed atomic sync throws ProxyError and writes nothing", async () => {
    const { client, jarFetch } = await editorClient();
    const { proxy, reported } = notesProxy(client);
    const [kept] = await proxy.create({ title: "atomic-kept" });
    const before = await titles(proxy);
    jarFetch.calls.length = 0;
    const error = await proxy
      .sync(
        { create: [{ title: "never" }], update: [{ id: kept.id, title: "changed" }], destroy: [{ id: 999999 }] },
        { batch: "server", atomic: true },
      )
      .catch((caught) => caught);
    assert.ok(error instanceof ProxyError);
    assert.deepEqual(
      [error.code, error.message, error.status, error.data],
      ["rest_note_invalid_id", "Invalid note ID.", 404, { status: 404 }],
    );
    assert.deepEqual(reported, [[error, { action: "destroy", records: [{ id: 999999 }] }]]);
    assert.deepEqual(jarFetch.lines(), [`POST ${BATCH}`]);
    assert.equal(JSON.parse(jarFetch.calls[0].body).validation, "atomic");
    assert.deepEqual(await titles(proxy), before);
  });

  test("an atomic sync that passes commits everything", async () => {
    const { client } = await editorClient();
    const { proxy } = notesProxy(client);
    const [gone] = await proxy.create({ title: "atomic-gone" });
    const result = await proxy.sync(
      { create: [{ title: "atomic-new" }], destroy: [gone] },
      { batch: "server", atomic: true },
    );
    assert.deepEqual(
      result.create.map((note) => note.title),
      ["atomic-new"],
    );
    assert.deepEqual(result.update, []);
    const now = await titles(proxy);
    assert.ok(now.includes("atomic-new") && !now.includes("atomic-gone"));
  });

  test("conditional sends the ETag read as If-Match; a change meanwhile throws 412", async () => {
    const { client, jarFetch } = await editorClient();
    const { proxy: mine, reported } = notesProxy(client, { conditional: true });
    const { proxy: theirs } = notesProxy(client);
    const [note] = await theirs.create({ title: "etag-original" });
    await mine.read(note.id);
    assert.equal(mine.etags.get(String(note.id)), `"${note.id}-1"`);
    await theirs.update({ id: note.id, title: "etag-theirs" });
    jarFetch.calls.length = 0;
    const error = await mine.update({ id: note.id, title: "etag-mine" }).catch((caught) => caught);
    assert.ok(error instanceof ProxyError);
    assert.deepEqual([error.code, error.status], ["rest_precondition_failed", 412]);
    assert.deepEqual(reported, [[error, { action: "update", records: [{ id: note.id, title: "etag-mine" }] }]]);
    assert.equal(jarFetch.calls[0].headers.get("If-Match"), `"${note.id}-1"`);
    await mine.read(note.id);
    const [saved] = await mine.update({ id: note.id, title: "etag-mine" });
    assert.equal(saved.title, "etag-mine");
    assert.equal(mine.etags.get(String(note.id)), `"${note.id}-3"`);
    await mine.destroy({ id: note.id });
    assert.equal(mine.etags.size, 0);
  });
});

describe("RestClient.subscribe against svcrest serve", { skip }, () => {
  test("follows the notes' changes with the session's nonce, in order, until unsubscribed", async () => {
    const { client, jarFetch } = await editorClient();
    const { proxy } = notesProxy(client);
    const seen = [];
    const failures = [];
    const stop = client.subscribe("demo/v1/notes", (change) => seen.push(change), {
      wait: 5,
      onError: (error) => failures.push(error),
    });
    await new Promise((resolve) => setTimeout(resolve, 300)); // the first poll pins the start
    const [note] = await proxy.create({ title: "Followed" });
    await proxy.update({ id: note.id, title: "Followed, edited" });
    const until = async (count) => {
      const deadline = Date.now() + 10_000;
      while (seen.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    await until(2);
    await proxy.destroy({ id: note.id });
    await until(3);
    stop();
    await stop.done;
    assert.deepEqual(
      seen.map((change) => [change.event, change.data.id]),
      [
        ["created", note.id],
        ["updated", note.id],
        ["deleted", note.id],
      ],
    );
    assert.equal(seen[1].data.title, "Followed, edited");
    assert.deepEqual(seen[2].data, { id: note.id });
    assert.equal(new Set(seen.map((change) => change.id)).size, 3);
    assert.equal(stop.cursor, seen.at(-1).id);
    assert.deepEqual(failures, []);
    const polls = jarFetch.calls.filter((call) => call.line.includes("/demo/v1/notes/changes"));
    assert.ok(polls.length >= 1);
    assert.equal(polls[0].line, `GET ${NOTES}/changes?wait=5`);
    assert.ok(polls.every((call) => call.headers.get("X-SVC-Nonce") === client.nonce));
  });
});

// Tests of src/svcrest/static/svc-rest.mjs: the shared URL vectors and the fetch helper.
// Run with `node --test tests/js/` (tests/test_js_module.py runs it under pytest).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { afterEach, describe, test } from "node:test";

import {
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_DELAY,
  IDEMPOTENCY_HEADER,
  INVALID_NONCE_CODE,
  ProxyError,
  RestClient,
  RestProxy,
  isValidId,
  nextLink,
} from "../../src/svcrest/static/svc-rest.mjs";

const vectorsUrl = new URL("../vectors/proxy_urls.json", import.meta.url);
const { vectors } = JSON.parse(readFileSync(vectorsUrl, "utf8"));

const SITE = "http://example.test";
const ROOT = `${SITE}/svc-json/`;
const URL_ = `${ROOT}demo/v1/notes`;
const CLOCK = 1700000000000;
const DC = `_dc=${CLOCK}`;

/** The RestProxy a vector describes, with its fixed clock. */
function proxyFor(vector) {
  const { clock, ...options } = vector.options;
  return new RestProxy(vector.proxyUrl, { ...options, clock: () => clock });
}

describe("shared vectors (tests/vectors/proxy_urls.json)", () => {
  test("the file holds at least 40 uniquely named vectors", () => {
    assert.ok(vectors.length >= 40);
    assert.equal(new Set(vectors.map((vector) => vector.name)).size, vectors.length);
  });

  for (const vector of vectors) {
    test(vector.name, () => {
      const proxy = proxyFor(vector);
      assert.equal(proxy.getMethod(vector.operation), vector.method);
      assert.equal(proxy.buildUrl(vector.operation), vector.url);
    });
  }
});

describe("RestProxy", () => {
  const proxy = (options = {}, url = URL_) => new RestProxy(url, { clock: () => CLOCK, ...options });

  test("isValidId: truthy or the number 0, never a boolean", () => {
    const cases = [
      [0, true],
      ["0", true],
      [5, true],
      ["a/b c", true],
      ["", false],
      [null, false],
      [undefined, false],
      [false, false],
      [true, false],
      [Number.NaN, false],
    ];
    for (const [id, valid] of cases) assert.equal(isValidId(id), valid, String(id));
  });

  test("an undefined id is invalid", () => {
    assert.equal(proxy().buildUrl({ action: "read", id: undefined }), `${URL_}?${DC}`);
  });

  test("a subclass can override getMethod", () => {
    class PatchingProxy extends RestProxy {
      getMethod(operation) {
        if (operation.action === "update" && operation.records.length > 1) return "PATCH";
        return super.getMethod(operation);
      }
    }
    const patching = new PatchingProxy(URL_);
    assert.equal(patching.getMethod({ action: "update", records: [{ id: 1 }] }), "PUT");
    assert.equal(patching.getMethod({ action: "update", records: [{ id: 1 }, { id: 2 }] }), "PATCH");
  });

  test("records may be Maps or class instances", () => {
    class Note {
      constructor(id) {
        this.id = id;
      }
    }
    assert.equal(proxy().buildUrl({ action: "update", records: [new Map([["id", 4]])] }), `${URL_}/4?${DC}`);
    assert.equal(proxy().buildUrl({ action: "update", records: [new Note(0)] }), `${URL_}/0?${DC}`);
  });

  test("a Map keeps the order of integer-like parameter names", () => {
    const params = new Map([
      ["b", "1"],
      ["2", "x"],
    ]);
    assert.equal(proxy().buildUrl({ action: "read", params }), `${URL_}?${DC}&b=1&2=x`);
    assert.equal(proxy().buildUrl({ action: "read", params: { b: "1", 2: "x" } }), `${URL_}?${DC}&2=x&b=1`);
  });

  test("the default clock gives Date.now() milliseconds", () => {
    const before = Date.now();
    const url = new RestProxy(URL_).buildUrl({ action: "read" });
    const after = Date.now();
    const stamp = Number(url.slice(`${URL_}?_dc=`.length));
    assert.ok(before <= stamp && stamp <= after);
  });

  test("unknown actions and action method keys are refused", () => {
    assert.throws(() => proxy().getMethod({ action: "list" }), TypeError);
    assert.throws(() => proxy().buildUrl({ action: "list" }), TypeError);
    assert.throws(() => proxy({ actionMethods: { list: "GET" } }), /unknown action: list/);
  });

  test("invalid sorters, filters and groupers are refused", () => {
    const bad = [
      { sorters: [{ direction: "ASC" }] },
      { sorters: [{ property: "a", dir: "ASC" }] },
      { sorters: [{ property: "a", direction: 1 }] },
      { sorters: [3] },
      { filters: ["title"] },
      { filters: [{ property: "a", op: "=" }] },
      { filters: [{ property: "a", operator: 1 }] },
      { grouper: { property: "a", root: "x" } },
      { grouper: 3 },
      { sorters: 3 },
      { filters: 3 },
    ];
    for (const fields of bad) {
      assert.throws(() => proxy().buildUrl({ action: "read", ...fields }), TypeError, JSON.stringify(fields));
    }
  });

  test("requestBody: records for create/update, a list for a batch, none for read", () => {
    const p = proxy();
    assert.deepEqual(p.requestBody({ action: "create", records: [{ t: 1 }] }), { t: 1 });
    assert.deepEqual(p.requestBody({ action: "update", records: [{ id: 1 }, { id: 2 }] }), [{ id: 1 }, { id: 2 }]);
    assert.deepEqual(p.requestBody({ action: "destroy", records: [{ id: 1 }, { id: 2 }] }), [{ id: 1 }, { id: 2 }]);
    assert.equal(p.requestBody({ action: "destroy", records: [{ id: 1 }] }), undefined);
    assert.equal(p.requestBody({ action: "read", id: 1 }), undefined);
  });
});

// -- the fetch helper ------------------------------------------------------------------------

/** A scripted fetch: each call is checked against the next step and answered by it. */
function scriptFetch(steps) {
  const calls = [];
  const fetch = async (url, init = {}) => {
    assert.ok(calls.length < steps.length, `unexpected request ${init.method} ${url}`);
    const step = steps[calls.length];
    calls.push({ url, init });
    assert.equal(`${init.method} ${url}`, `${step.method} ${step.url}`);
    assert.equal(init.credentials, step.credentials ?? "same-origin");
    const headers = new Headers(init.headers);
    for (const [name, value] of Object.entries(step.headers ?? {})) {
      assert.equal(headers.get(name), value, name);
    }
    for (const name of step.absent ?? []) assert.equal(headers.has(name), false, name);
    if (step.body === undefined) {
      assert.equal(init.body, undefined);
    } else {
      assert.equal(headers.get("Content-Type"), "application/json");
      assert.deepEqual(JSON.parse(init.body), step.body);
    }
    return step.response();
  };
  fetch.calls = calls;
  fetch.finished = () => calls.length === steps.length;
  return fetch;
}

const json = (status, data, headers = {}) => () =>
  new Response(data === undefined ? null : JSON.stringify(data), {
    status,
    headers: { "Content-Type": "application/json; charset=UTF-8", ...headers },
  });
const restError = (code, message, status) => json(status, { code, message, data: { status } });
const invalidNonce = restError(INVALID_NONCE_CODE, "Cookie check failed", 403);

describe("RestClient", () => {
  afterEach(() => {
    delete globalThis.window;
  });

  test("reads window.svcApiSettings and sends the nonce with same-origin credentials", async () => {
    globalThis.window = { svcApiSettings: { root: ROOT, nonce: "n1" } };
    const fetch = scriptFetch([
      { method: "GET", url: `${URL_}/5?${DC}`, headers: { "X-SVC-Nonce": "n1", Accept: "application/json" }, response: json(200, { id: 5 }) },
    ]);
    const client = new RestClient({ fetch });
    assert.equal(client.root, ROOT);
    const notes = client.proxy("/demo/v1/notes", { clock: () => CLOCK });
    assert.equal(notes.url, URL_);
    assert.deepEqual(await client.read(notes, 5), { id: 5 });
    assert.ok(fetch.finished());
  });

  test("explicit options win over svcApiSettings; no nonce means no header", async () => {
    globalThis.window = { svcApiSettings: { root: "http://other.test/", nonce: "n1" } };
    const fetch = scriptFetch([
      { method: "GET", url: `${URL_}?${DC}&page=2`, absent: ["X-SVC-Nonce"], credentials: "include", response: json(200, []) },
    ]);
    const client = new RestClient({ root: ROOT, nonce: null, fetch, credentials: "include" });
    assert.equal(client.nonce, null);
    const notes = client.proxy("demo/v1/notes", { clock: () => CLOCK });
    assert.deepEqual(await client.read(notes, undefined, { page: 2 }), []);
  });

  test("adopts a fresh nonce from the X-SVC-Nonce response header", async () => {
    const fetch = scriptFetch([
      { method: "GET", url: `${URL_}?${DC}`, headers: { "X-SVC-Nonce": "n1" }, response: json(200, [], { "X-SVC-Nonce": "n2" }) },
      { method: "GET", url: `${URL_}?${DC}`, headers: { "X-SVC-Nonce": "n2" }, response: json(200, []) },
    ]);
    const client = new RestClient({ root: ROOT, nonce: "n1", fetch });
    const notes = client.proxy("demo/v1/notes", { clock: () => CLOCK });
    await client.read(notes);
    assert.equal(client.nonce, "n2");
    await client.read(notes);
    assert.ok(fetch.finished());
  });

  test("refreshes the nonce once from /auth/nonce and retries once", async () => {
    const fetch = scriptFetch([
      { method: "PUT", url: `${URL_}/3?${DC}`, headers: { "X-SVC-Nonce": "forged" }, body: { id: 3 }, response: invalidNonce },
      { method: "GET", url: `${SITE}/auth/nonce`, response: json(200, { nonce: "fresh" }) },
      { method: "PUT", url: `${URL_}/3?${DC}`, headers: { "X-SVC-Nonce": "fresh" }, body: { id: 3 }, response: json(200, { id: 3, ok: true }) },
    ]);
    const client = new RestClient({ root: ROOT, nonce: "forged", fetch });
    const notes = client.proxy("demo/v1/notes", { clock: () => CLOCK });
    assert.deepEqual(await client.update(notes, { id: 3 }), [{ id: 3, ok: true }]);
    assert.equal(client.nonce, "fresh");
    assert.ok(fetch.finished());
  });

  test("a second invalid nonce throws ProxyError without a loop", async () => {
    const fetch = scriptFetch([
      { method: "DELETE", url: `${URL_}/3?${DC}`, response: invalidNonce },
      { method: "GET", url: `${SITE}/auth/nonce`, response: json(200, { nonce: "still-bad" }) },
      { method: "DELETE", url: `${URL_}/3?${DC}`, headers: { "X-SVC-Nonce": "still-bad" }, response: invalidNonce },
    ]);
    const client = new RestClient({ root: ROOT, nonce: "bad", fetch });
    const notes = client.proxy("demo/v1/notes", { clock: () => CLOCK });
    await assert.rejects(client.destroy(notes, { id: 3 }), (error) => {
      assert.ok(error instanceof ProxyError);
      assert.equal(error.code, INVALID_NONCE_CODE);
      assert.equal(error.status, 403);
      assert.equal(error.message, "Cookie check failed");
      return true;
    });
    assert.equal(fetch.calls.length, 3);
  });

  test("a failed refresh throws the original error with the failure as cause", async () => {
    const fetch = scriptFetch([
      { method: "GET", url: `${URL_}?${DC}`, response: invalidNonce },
      { method: "GET", url: "http://example.test/custom/nonce", response: () => new Response("Forbidden", { status: 403, statusText: "Forbidden" }) },
    ]);
    const client = new RestClient({ root: ROOT, nonce: "bad", nonceUrl: "http://example.test/custom/nonce", fetch });
    const notes = client.proxy("demo/v1/notes", { clock: () => CLOCK });
    await assert.rejects(client.read(notes), (error) => {
      assert.equal(error.code, INVALID_NONCE_CODE);
      assert.equal(error.cause.code, "http_error");
      assert.equal(error.cause.message, "Forbidden");
      return true;
    });
    assert.ok(fetch.finished());
  });

  test("the nonce URL is /auth/nonce at the root's origin, or the page's", () => {
    assert.equal(new RestClient({ root: "http://example.test:8000/svc-json/" }).getNonceUrl(), "http://example.test:8000/auth/nonce");
    assert.equal(new RestClient({ root: "/svc-json/" }).getNonceUrl(), "/auth/nonce");
    globalThis.location = { href: "http://page.test/notes/" };
    try {
      assert.equal(new RestClient({ root: "/svc-json/" }).getNonceUrl(), "http://page.test/auth/nonce");
    } finally {
      delete globalThis.location;
    }
  });

  test("methodOverride sends PUT, PATCH and DELETE as POST", async () => {
    const fetch = scriptFetch([
      { method: "POST", url: `${URL_}/3?${DC}`, headers: { "X-HTTP-Method-Override": "PUT" }, body: { id: 3 }, response: json(200, { id: 3 }) },
      { method: "POST", url: `${URL_}/3?${DC}`, headers: { "X-HTTP-Method-Override": "PATCH" }, body: { id: 3 }, response: json(200, { id: 3 }) },
      { method: "POST", url: `${URL_}/3?${DC}`, headers: { "X-HTTP-Method-Override": "DELETE" }, response: json(200, { deleted: true }) },
      { method: "POST", url: `${URL_}?${DC}`, absent: ["X-HTTP-Method-Override"], body: { t: 1 }, response: json(201, { id: 4 }) },
      { method: "GET", url: `${URL_}/4?${DC}`, absent: ["X-HTTP-Method-Override"], response: json(200, { id: 4 }) },
    ]);
    const client = new RestClient({ root: ROOT, methodOverride: true, fetch });
    const notes = client.proxy("demo/v1/notes", { clock: () => CLOCK });
    const patching = client.proxy("demo/v1/notes", { clock: () => CLOCK, actionMethods: { update: "PATCH" } });
    await client.update(notes, { id: 3 });
    await client.update(patching, { id: 3 });
    await client.destroy(notes, { id: 3 });
    await client.create(notes, { t: 1 });
    await client.read(notes, 4);
    assert.ok(fetch.finished());
  });

  test("create, batch create, sync and the error shapes", async () => {
    const fetch = scriptFetch([
      { method: "POST", url: `${URL_}?${DC}`, body: { t: 1 }, response: json(201, { id: 1, t: 1 }) },
      { method: "POST", url: `${URL_}?${DC}`, body: { t: 2 }, response: json(201, { id: 2, t: 2 }) },
      { method: "POST", url: `${URL_}?${DC}`, body: [{ t: 3 }, { t: 4 }], response: json(201, [{ id: 3 }, { id: 4 }]) },
      { method: "POST", url: `${URL_}?${DC}`, body: [{ t: 5 }, { t: 6 }], response: json(201, [{ id: 5 }, { id: 6 }]) },
      { method: "PUT", url: `${URL_}/1?${DC}`, body: { id: 1 }, response: json(200, { id: 1 }) },
      { method: "DELETE", url: `${URL_}/2?${DC}`, body: [{ id: 2 }, { id: 3 }], response: json(200, { deleted: true }) },
      { method: "GET", url: `${URL_}/9?${DC}`, response: restError("rest_not_found", "Gone.", 404) },
      { method: "GET", url: `${URL_}/9?${DC}`, response: () => new Response("<html>", { status: 502, statusText: "Bad Gateway" }) },
      { method: "GET", url: `${URL_}?${DC}`, response: () => new Response("<html>", { status: 200 }) },
    ]);
    const client = new RestClient({ root: ROOT, fetch });
    const notes = client.proxy("demo/v1/notes", { clock: () => CLOCK });
    const batched = client.proxy("demo/v1/notes", { clock: () => CLOCK, batchActions: true });
    assert.deepEqual(await client.create(notes, { t: 1 }, { t: 2 }), [
      { id: 1, t: 1 },
      { id: 2, t: 2 },
    ]);
    assert.deepEqual(await client.create(batched, { t: 3 }, { t: 4 }), [{ id: 3 }, { id: 4 }]);
    assert.deepEqual(
      await client.sync(batched, { create: [{ t: 5 }, { t: 6 }], update: [{ id: 1 }], destroy: [{ id: 2 }, { id: 3 }] }),
      { create: [{ id: 5 }, { id: 6 }], update: [{ id: 1 }] },
    );
    await assert.rejects(client.read(notes, 9), { name: "ProxyError", code: "rest_not_found", status: 404, message: "Gone." });
    await assert.rejects(client.read(notes, 9), { code: "http_error", status: 502, message: "Bad Gateway" });
    await assert.rejects(client.read(notes), { code: "invalid_json", status: 200 });
    assert.ok(fetch.finished());
  });

  test("execute() sends an operation and returns the whole response", async () => {
    const fetch = scriptFetch([
      {
        method: "GET",
        url: `${URL_}?${DC}&page=2&limit=5&sort=title&dir=DESC`,
        response: json(200, [{ id: 6 }], { "X-SVC-Total": "7", "X-SVC-TotalPages": "2" }),
      },
    ]);
    const client = new RestClient({ root: ROOT, fetch });
    const notes = client.proxy("demo/v1/notes", { clock: () => CLOCK, simpleSortMode: true });
    const operation = { action: "read", page: 2, limit: 5, sorters: [{ property: "title", direction: "DESC" }] };
    const { data, status, headers } = await client.execute(notes, operation);
    assert.deepEqual(data, [{ id: 6 }]);
    assert.equal(status, 200);
    assert.equal(headers.get("X-SVC-TotalPages"), "2");
  });

  test("request() returns the data, status and headers", async () => {
    const fetch = scriptFetch([
      { method: "GET", url: `${URL_}?per_page=1`, response: json(200, [{ id: 1 }], { "X-SVC-Total": "7" }) },
    ]);
    const client = new RestClient({ root: ROOT, fetch });
    const { data, status, headers } = await client.request("GET", `${URL_}?per_page=1`);
    assert.deepEqual(data, [{ id: 1 }]);
    assert.equal(status, 200);
    assert.equal(headers.get("X-SVC-Total"), "7");
  });
});

// -- DESIGN.md section 13: the additions on RestProxy ----------------------------------------

/** A TCP server that accepts connections and never answers; resolves to its port. */
async function silentServer() {
  const sockets = [];
  const server = createServer((socket) => sockets.push(socket));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const close = () => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  };
  return { port: server.address().port, close, connections: () => sockets.length };
}

describe("RestProxy additions", () => {
  const proxy = (options = {}, url = URL_) => new RestProxy(url, { clock: () => CLOCK, ...options });

  test("the defaults: timeout 30 s, no headers, no api, a RestClient made on first use", () => {
    const notes = proxy();
    assert.deepEqual([notes.timeout, notes.headers, notes.api, notes.onException, notes.root], [30, {}, {}, null, null]);
    assert.ok(notes.client instanceof RestClient);
    assert.equal(notes.client, notes.client);
    const client = new RestClient({ root: ROOT, nonce: null });
    assert.equal(client.proxy("demo/v1/notes").client, client);
  });

  test("api keys are actions; an api URL keeps the id and format rules", () => {
    assert.throws(() => proxy({ api: { list: URL_ } }), /api has an unknown action: list/);
    const notes = proxy({ api: { read: `${ROOT}demo/v1/search?q=a` }, format: "json" });
    assert.equal(notes.buildUrl({ action: "read", id: 7 }), `${ROOT}demo/v1/search/7.json?q=a&${DC}`);
    assert.equal(notes.buildUrl({ action: "destroy", records: [{ id: 7 }] }), `${URL_}/7.json?${DC}`);
  });

  test("nextLink finds rel=next among several links and resolves it", () => {
    const header = `<${ROOT}>; rel="https://api.w.org/", <${URL_}?page=1>; rel="prev", </svc-json/demo/v1/notes?page=3>; rel=next`;
    assert.equal(nextLink(header, URL_), `${URL_}?page=3`);
    assert.equal(nextLink(`<a?page=2>; rel="prev next"`), "a?page=2");
    assert.equal(nextLink(`<${ROOT}>; rel="https://api.w.org/"`), null);
    assert.equal(nextLink(null), null);
  });

  test("readResult and iterPages over a scripted fetch", async () => {
    const fetch = scriptFetch([
      {
        method: "GET",
        url: `${URL_}?${DC}&per_page=1`,
        headers: { "X-Trace": "t" },
        response: json(200, [{ id: 2 }], { "X-SVC-Total": "2", "X-SVC-TotalPages": "2", Link: `<${URL_}?per_page=1&page=2>; rel="next"` }),
      },
      {
        method: "GET",
        url: `${URL_}?per_page=1&page=2`,
        headers: { "X-Trace": "t" },
        response: json(200, [{ id: 1 }], { "X-SVC-Total": "2", "X-SVC-TotalPages": "2" }),
      },
    ]);
    const notes = proxy({ client: new RestClient({ root: ROOT, nonce: null, fetch }), headers: { "X-Trace": "t" } });
    const pages = [];
    for await (const page of notes.iterPages({ per_page: 1 })) pages.push(page);
    assert.deepEqual(
      pages.map(({ records, total, totalPages, nextUrl }) => [records, total, totalPages, nextUrl]),
      [
        [[{ id: 2 }], 2, 2, `${URL_}?per_page=1&page=2`],
        [[{ id: 1 }], 2, 2, null],
      ],
    );
    assert.equal(pages[0].response.status, 200);
    assert.ok(fetch.finished());
  });

  test("iterPages stops at a next link back to a page already read", async () => {
    const first = `${URL_}?per_page=1&page=1`;
    const second = `${URL_}?per_page=1&page=2`;
    const next = (url) => ({ Link: `<${url}>; rel="next"` });
    const fetch = scriptFetch([
      { method: "GET", url: `${URL_}?${DC}&per_page=1`, response: json(200, [{ id: 2 }], next(first)) },
      { method: "GET", url: first, response: json(200, [{ id: 2 }], next(second)) },
      { method: "GET", url: second, response: json(200, [{ id: 1 }], next(first)) },
    ]);
    const notes = proxy({ client: new RestClient({ root: ROOT, nonce: null, fetch }) });
    const read = [];
    await assert.rejects(
      async () => {
        for await (const page of notes.iterPages({ per_page: 1 })) read.push(page.records);
      },
      (error) => {
        assert.ok(error instanceof ProxyError);
        assert.deepEqual(
          [error.code, error.message, error.status],
          ["paging_loop", `The next page link leads back to a page already read: ${first}`, 200],
        );
        return true;
      },
    );
    assert.deepEqual(read, [[{ id: 2 }], [{ id: 2 }], [{ id: 1 }]]);
    assert.ok(fetch.finished());
  });

  test("a paging loop is told to onException", async () => {
    const first = `${URL_}?per_page=1&page=1`;
    const next = (url) => ({ Link: `<${url}>; rel="next"` });
    const fetch = scriptFetch([
      { method: "GET", url: `${URL_}?${DC}&per_page=1`, response: json(200, [], next(first)) },
      { method: "GET", url: first, response: json(200, [], next(first)) },
    ]);
    const told = [];
    const notes = proxy({
      client: new RestClient({ root: ROOT, nonce: null, fetch }),
      onException: (error, operation) => told.push([error.code, operation.action]),
    });
    await assert.rejects(async () => {
      for await (const page of notes.iterPages({ per_page: 1 })) assert.ok(page);
    }, ProxyError);
    assert.deepEqual(told, [["paging_loop", "read"]]);
    assert.ok(fetch.finished());
  });

  test("batchRequest: one entry per operation under the REST root, no cache buster", () => {
    const notes = proxy({ extraParams: { lang: "fr" } });
    const request = notes.batchRequest(
      [
        { action: "create", records: [{ title: "A" }] },
        { action: "destroy", records: [{ id: 4 }] },
      ],
      { atomic: true },
    );
    assert.deepEqual(request, {
      method: "POST",
      url: `${ROOT}batch/v1`,
      body: {
        validation: "atomic",
        requests: [
          { method: "POST", path: "/demo/v1/notes?lang=fr", body: { title: "A" } },
          { method: "DELETE", path: "/demo/v1/notes/4?lang=fr" },
        ],
      },
    });
    const rooted = proxy({ root: "http://example.test/api" }, "http://example.test/api/notes");
    assert.equal(rooted.batchRequest([{ action: "read", id: 1 }]).url, "http://example.test/api/batch/v1");
    assert.throws(() => proxy({}, "http://example.test/wp/notes").restRoot(), /cannot tell the REST root/);
  });

  test("sync refuses unknown batch modes and atomic without a server batch", async () => {
    const notes = proxy();
    await assert.rejects(notes.sync({ create: [{}] }, { batch: "client" }), /unknown batch mode "client"/);
    await assert.rejects(notes.sync({ create: [{}] }, { atomic: true }), /atomic needs batch: "server"/);
    assert.deepEqual(await notes.sync({}, { batch: "server", atomic: true }), { create: [], update: [] });
  });

  test("a malformed batch answer throws invalid_batch_response, reported once", async () => {
    const fetch = scriptFetch([
      { method: "POST", url: `${ROOT}batch/v1`, body: { validation: "normal", requests: [{ method: "DELETE", path: "/demo/v1/notes/1" }] }, response: json(207, { responses: [] }) },
    ]);
    const reported = [];
    const notes = proxy({
      client: new RestClient({ root: ROOT, nonce: null, fetch }),
      onException: (error, operation) => reported.push([error.code, operation]),
    });
    await assert.rejects(notes.sync({ destroy: [{ id: 1 }] }, { batch: "server" }), ProxyError);
    assert.deepEqual(reported, [["invalid_batch_response", null]]);
  });

  test("a timeout throws an instanceof ProxyError with the code timeout", async () => {
    const silent = await silentServer();
    try {
      const reported = [];
      const notes = new RestProxy(`http://127.0.0.1:${silent.port}/svc-json/demo/v1/notes`, {
        timeout: 0.2,
        client: new RestClient({ root: "", nonce: null }),
        onException: (error, operation) => reported.push([error.code, operation]),
      });
      const started = Date.now();
      const error = await notes.read(5).catch((caught) => caught);
      assert.ok(error instanceof ProxyError);
      assert.deepEqual([error.code, error.message, error.status], ["timeout", "No answer within 0.2 seconds.", 0]);
      assert.ok(error.cause);
      assert.ok(Date.now() - started < 5000);
      assert.deepEqual(reported, [["timeout", { action: "read", id: 5, params: undefined }]]);
      // A timeout is not a broken connection: it is not retried (one connection, once the
      // server has seen it).
      for (let waited = 0; silent.connections() === 0 && waited < 2000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(silent.connections(), 1);
    } finally {
      await silent.close();
    }
  });
});

describe("svc-rest.d.ts", () => {
  test("declares exactly the module's exports", async () => {
    const module = await import("../../src/svcrest/static/svc-rest.mjs");
    const declarations = readFileSync(new URL("../../src/svcrest/static/svc-rest.d.ts", import.meta.url), "utf8");
    const declared = [...declarations.matchAll(/^export declare (?:const|function|class) (\w+)/gm)].map((m) => m[1]);
    assert.deepEqual(declared.sort(), Object.keys(module).sort());
  });
});

describe("RestProxy conditional", () => {
  test("sends the ETag read as If-Match on update and destroy; a 412 throws", async () => {
    const fetch = scriptFetch([
      { method: "GET", url: `${URL_}/5?${DC}`, absent: ["If-Match"], response: json(200, { id: 5, title: "a" }, { ETag: '"5-1"' }) },
      { method: "PUT", url: `${URL_}/5?${DC}`, headers: { "If-Match": '"5-1"' }, body: { id: 5, title: "b" }, response: json(200, { id: 5, title: "b" }, { ETag: '"5-2"' }) },
      {
        method: "DELETE",
        url: `${URL_}/5?${DC}`,
        headers: { "If-Match": '"5-2"' },
        response: restError("rest_precondition_failed", "The resource has changed since it was read (If-Match does not match).", 412),
      },
    ]);
    const client = new RestClient({ root: ROOT, nonce: null, fetch });
    const proxy = new RestProxy(URL_, { client, clock: () => CLOCK, conditional: true });
    await proxy.read(5);
    assert.deepEqual([...proxy.etags], [["5", '"5-1"']]);
    await proxy.update({ id: 5, title: "b" });
    assert.deepEqual([...proxy.etags], [["5", '"5-2"']]);
    const error = await proxy.destroy({ id: 5 }).catch((caught) => caught);
    assert.ok(error instanceof ProxyError);
    assert.deepEqual([error.code, error.status], ["rest_precondition_failed", 412]);
    assert.ok(fetch.finished());
  });

  test("without conditional no If-Match is sent; batch entries carry their own", () => {
    const plain = new RestProxy(URL_, { clock: () => CLOCK });
    plain.etags.set("5", '"5-1"');
    assert.equal(plain.ifMatch({ action: "update", records: [{ id: 5 }] }), null);
    const proxy = new RestProxy(URL_, { clock: () => CLOCK, conditional: true });
    proxy.etags.set("5", '"5-1"');
    assert.equal(proxy.ifMatch({ action: "read", id: 5 }), null);
    assert.equal(proxy.ifMatch({ action: "update", records: [{ id: 6 }] }), null);
    assert.deepEqual(
      proxy.batchRequest([
        { action: "update", records: [{ id: 5, title: "b" }] },
        { action: "destroy", records: [{ id: 6 }] },
      ]).body.requests,
      [
        { method: "PUT", path: "/demo/v1/notes/5", body: { id: 5, title: "b" }, headers: { "If-Match": '"5-1"' } },
        { method: "DELETE", path: "/demo/v1/notes/6" },
      ],
    );
  });
});

// -- Idempotency-Key and retries after 429 / 503 (as the Python proxies) ----------------------

const KEY = /^"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"$/;
const keyOf = (call) => new Headers(call.init.headers).get(IDEMPOTENCY_HEADER);
const tooMany = (message, retryAfter = "1") =>
  json(
    429,
    { code: "rest_too_many_requests", message, data: { status: 429 } },
    retryAfter === null ? {} : { "Retry-After": retryAfter },
  );
const unavailable = (retryAfter = null) =>
  json(503, { code: "rest_unavailable", message: "Busy.", data: { status: 503 } }, retryAfter === null ? {} : { "Retry-After": retryAfter });
const broken = () => {
  throw new TypeError("fetch failed");
};

/** A RestClient over `steps` whose sleeps are recorded (and do not wait). */
function retryingClient(steps, options = {}) {
  const fetch = scriptFetch(steps);
  const sleeps = [];
  const sleep = async (seconds) => {
    sleeps.push(seconds);
  };
  const client = new RestClient({ root: ROOT, nonce: null, fetch, sleep, ...options });
  return { client, fetch, sleeps };
}

describe("Idempotency-Key", () => {
  test("each write verb carries a fresh key; reads carry none", async () => {
    const { client, fetch } = retryingClient([
      { method: "POST", url: `${URL_}?${DC}`, body: { t: 1 }, response: json(201, { id: 1 }) },
      { method: "PUT", url: `${URL_}/1?${DC}`, body: { id: 1 }, response: json(200, { id: 1 }) },
      { method: "PATCH", url: `${URL_}/1?${DC}`, body: { id: 1 }, response: json(200, { id: 1 }) },
      { method: "DELETE", url: `${URL_}/1?${DC}`, response: json(200, { deleted: true }) },
      { method: "GET", url: `${URL_}/1?${DC}`, absent: [IDEMPOTENCY_HEADER], response: json(200, { id: 1 }) },
      { method: "GET", url: `${URL_}?${DC}`, absent: [IDEMPOTENCY_HEADER], response: json(200, []) },
      { method: "POST", url: `${ROOT}batch/v1`, body: { validation: "normal", requests: [{ method: "DELETE", path: "/demo/v1/notes/2" }] }, response: json(207, { responses: [{ status: 200, body: { deleted: true } }] }) },
    ]);
    const notes = new RestProxy(URL_, { client, clock: () => CLOCK });
    const patching = new RestProxy(URL_, { client, clock: () => CLOCK, actionMethods: { update: "PATCH" } });
    await notes.create({ t: 1 });
    await notes.update({ id: 1 });
    await patching.update({ id: 1 });
    await notes.destroy({ id: 1 });
    await notes.read(1);
    await notes.readResult();
    await notes.sync({ destroy: [{ id: 2 }] }, { batch: "server" });
    assert.ok(fetch.finished());
    const keys = fetch.calls.map(keyOf);
    for (const index of [0, 1, 2, 3, 6]) assert.match(keys[index], KEY, fetch.calls[index].init.method);
    assert.deepEqual([keys[4], keys[5]], [null, null]);
    assert.equal(new Set([keys[0], keys[1], keys[2], keys[3], keys[6]]).size, 5);
  });

  test("methodOverride keeps the key of the write it overrides; request() keys writes too", async () => {
    const { client, fetch } = retryingClient(
      [
        { method: "POST", url: `${URL_}/3?${DC}`, headers: { "X-HTTP-Method-Override": "DELETE" }, response: json(200, { deleted: true }) },
        { method: "POST", url: `${URL_}?x=1`, body: { t: 1 }, response: json(201, { id: 4 }) },
        { method: "GET", url: `${URL_}?x=1`, absent: [IDEMPOTENCY_HEADER], response: json(200, []) },
      ],
      { methodOverride: true },
    );
    await client.destroy(client.proxy("demo/v1/notes", { clock: () => CLOCK }), { id: 3 });
    await client.request("post", `${URL_}?x=1`, { body: { t: 1 } });
    await client.request("GET", `${URL_}?x=1`);
    assert.match(keyOf(fetch.calls[0]), KEY);
    assert.match(keyOf(fetch.calls[1]), KEY);
    assert.ok(fetch.finished());
  });

  test("idempotencyKeys: false sends none; a key given in the headers is kept", async () => {
    const { client, fetch } = retryingClient([
      { method: "POST", url: `${URL_}?${DC}`, absent: [IDEMPOTENCY_HEADER], body: { t: 1 }, response: json(201, { id: 1 }) },
      { method: "PUT", url: `${URL_}/1?${DC}`, headers: { [IDEMPOTENCY_HEADER]: '"mine"' }, body: { id: 1 }, response: json(200, { id: 1 }) },
    ]);
    await new RestProxy(URL_, { client, clock: () => CLOCK, idempotencyKeys: false }).create({ t: 1 });
    await new RestProxy(URL_, { client, clock: () => CLOCK, headers: { "idempotency-key": '"mine"' } }).update({ id: 1 });
    assert.ok(fetch.finished());
  });

  test("the retry after a nonce refresh is a new request with a fresh key", async () => {
    const { client, fetch } = retryingClient(
      [
        { method: "POST", url: `${URL_}?${DC}`, body: { t: 1 }, response: invalidNonce },
        { method: "GET", url: `${SITE}/auth/nonce`, absent: [IDEMPOTENCY_HEADER], response: json(200, { nonce: "fresh" }) },
        { method: "POST", url: `${URL_}?${DC}`, headers: { "X-SVC-Nonce": "fresh" }, body: { t: 1 }, response: json(201, { id: 1 }) },
      ],
      { nonce: "stale" },
    );
    assert.deepEqual(await client.proxy("demo/v1/notes", { clock: () => CLOCK }).create({ t: 1 }), [{ id: 1 }]);
    const [first, , second] = fetch.calls.map(keyOf);
    assert.match(first, KEY);
    assert.match(second, KEY);
    assert.notEqual(first, second);
  });

  test("without crypto.randomUUID (an insecure context) the key comes from getRandomValues", async (t) => {
    const real = globalThis.crypto;
    const descriptor = Object.getOwnPropertyDescriptor(globalThis, "crypto");
    Object.defineProperty(globalThis, "crypto", {
      value: { getRandomValues: (bytes) => real.getRandomValues(bytes) },
      configurable: true,
    });
    try {
      const { client, fetch } = retryingClient([
        { method: "POST", url: `${URL_}?${DC}`, body: { t: 1 }, response: json(201, { id: 1 }) },
        { method: "POST", url: `${URL_}?${DC}`, body: { t: 2 }, response: json(201, { id: 2 }) },
      ]);
      await new RestProxy(URL_, { client, clock: () => CLOCK }).create({ t: 1 }, { t: 2 });
      const keys = fetch.calls.map(keyOf);
      assert.match(keys[0], KEY);
      assert.match(keys[1], KEY);
      assert.notEqual(keys[0], keys[1]);
    } finally {
      Object.defineProperty(globalThis, "crypto", descriptor);
    }
  });
});

describe("retries after 429 and 503", () => {
  test("the defaults match the Python proxy: 2 retries, at most 30 s, keys on", () => {
    assert.deepEqual([DEFAULT_MAX_RETRIES, DEFAULT_MAX_RETRY_DELAY, IDEMPOTENCY_HEADER], [2, 30, "Idempotency-Key"]);
    const notes = new RestProxy(URL_);
    assert.deepEqual([notes.maxRetries, notes.maxRetryDelay, notes.idempotencyKeys], [2, 30, true]);
    assert.deepEqual(notes.requestOptions, { headers: {}, timeout: 30, maxRetries: 2, maxRetryDelay: 30, idempotencyKeys: true });
  });

  test("bad retry options are refused", async () => {
    for (const maxRetries of [-1, 1.5, "2", Number.NaN, Infinity, null]) {
      assert.throws(() => new RestProxy(URL_, { maxRetries }), /maxRetries is a whole number >= 0/, String(maxRetries));
    }
    for (const maxRetryDelay of [-1, Infinity, Number.NaN, "30", null]) {
      assert.throws(() => new RestProxy(URL_, { maxRetryDelay }), /maxRetryDelay is a number of seconds >= 0/, String(maxRetryDelay));
    }
    const { client, fetch } = retryingClient([]);
    await assert.rejects(client.request("GET", URL_, { maxRetries: -1 }), TypeError);
    assert.equal(fetch.calls.length, 0);
  });

  test("a 429 with Retry-After: 1 is retried once, with the same key, then succeeds", async (t) => {
    t.mock.method(Math, "random", () => 0.5);
    const { client, fetch, sleeps } = retryingClient([
      { method: "POST", url: `${URL_}?${DC}`, body: { t: 1 }, response: tooMany("Slow down.", "1") },
      { method: "POST", url: `${URL_}?${DC}`, body: { t: 1 }, response: json(201, { id: 7, t: 1 }) },
    ]);
    const reported = [];
    const notes = new RestProxy(URL_, { client, clock: () => CLOCK, onException: (error) => reported.push(error) });
    assert.deepEqual(await notes.create({ t: 1 }), [{ id: 7, t: 1 }]);
    assert.deepEqual(sleeps, [1.125]); // Retry-After, plus a quarter of Math.random()
    const [first, second] = fetch.calls.map(keyOf);
    assert.match(first, KEY);
    assert.equal(second, first);
    assert.deepEqual(reported, []);
    assert.ok(fetch.finished());
  });

  test("a 503 without Retry-After backs off 0.5 s, then 1 s", async (t) => {
    t.mock.method(Math, "random", () => 0);
    const { client, fetch, sleeps } = retryingClient([
      { method: "GET", url: `${URL_}/5?${DC}`, response: unavailable() },
      { method: "GET", url: `${URL_}/5?${DC}`, response: unavailable() },
      { method: "GET", url: `${URL_}/5?${DC}`, response: json(200, { id: 5 }) },
    ]);
    assert.deepEqual(await new RestProxy(URL_, { client, clock: () => CLOCK }).read(5), { id: 5 });
    assert.deepEqual(sleeps, [0.5, 1]);
    assert.ok(fetch.finished());
  });

  test("gives up after maxRetries retries with the last error, told once to onException", async (t) => {
    t.mock.method(Math, "random", () => 0);
    const { client, fetch, sleeps } = retryingClient([
      { method: "PUT", url: `${URL_}/1?${DC}`, body: { id: 1 }, response: tooMany("first", "2") },
      { method: "PUT", url: `${URL_}/1?${DC}`, body: { id: 1 }, response: unavailable("3") },
      { method: "PUT", url: `${URL_}/1?${DC}`, body: { id: 1 }, response: tooMany("third", "4") },
    ]);
    const reported = [];
    const notes = new RestProxy(URL_, { client, clock: () => CLOCK, onException: (error) => reported.push(error) });
    const error = await notes.update({ id: 1 }).catch((caught) => caught);
    assert.ok(error instanceof ProxyError);
    assert.deepEqual([error.code, error.message, error.status], ["rest_too_many_requests", "third", 429]);
    assert.deepEqual(reported, [error]);
    assert.deepEqual(sleeps, [2, 3]);
    assert.equal(new Set(fetch.calls.map(keyOf)).size, 1);
    assert.ok(fetch.finished());
  });

  test("maxRetries: 0 switches retries off; maxRetries: 1 retries once", async () => {
    const { client, fetch, sleeps } = retryingClient([
      { method: "GET", url: `${URL_}?${DC}`, response: tooMany("once") },
      { method: "GET", url: `${URL_}?${DC}`, response: tooMany("a") },
      { method: "GET", url: `${URL_}?${DC}`, response: tooMany("b") },
    ]);
    await assert.rejects(new RestProxy(URL_, { client, clock: () => CLOCK, maxRetries: 0 }).read(), { code: "rest_too_many_requests", message: "once" });
    assert.deepEqual(sleeps, []);
    await assert.rejects(new RestProxy(URL_, { client, clock: () => CLOCK, maxRetries: 1 }).read(), { message: "b" });
    assert.equal(sleeps.length, 1);
    assert.ok(fetch.finished());
  });

  test("a long Retry-After waits maxRetryDelay at most", async (t) => {
    t.mock.method(Math, "random", () => 0.5);
    const { client, sleeps } = retryingClient([
      { method: "GET", url: `${URL_}?${DC}`, response: tooMany("later", "3600") },
      { method: "GET", url: `${URL_}?${DC}`, response: json(200, []) },
    ]);
    assert.deepEqual(await new RestProxy(URL_, { client, clock: () => CLOCK, maxRetryDelay: 5 }).read(), []);
    assert.deepEqual(sleeps, [5]);
  });

  test("Retry-After: seconds or an HTTP date; anything else backs off", (t) => {
    t.mock.method(Math, "random", () => 0);
    const client = new RestClient({ root: ROOT, nonce: null });
    const delay = (value, options = {}) =>
      client.retryDelay(0, {
        method: "GET",
        keyed: false,
        response: { status: 429, headers: new Headers(value === null ? {} : { "Retry-After": value }) },
        ...options,
      });
    assert.equal(delay("0"), 0);
    assert.equal(delay("12"), 12);
    assert.equal(delay(" 7 "), 7);
    assert.equal(delay("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
    const soon = delay(new Date(Date.now() + 10_000).toUTCString());
    assert.ok(soon > 8.9 && soon <= 10, String(soon));
    for (const unreadable of [null, "", "soon", "1.5", "-3", "2015-10-21"]) assert.equal(delay(unreadable), 0.5, String(unreadable));
    assert.equal(delay("60", { maxRetryDelay: 5 }), 5);
  });

  test("the pause is jittered by up to a quarter; other statuses and the last attempt stop", () => {
    const client = new RestClient({ root: ROOT, nonce: null });
    const refused = (status, value) => ({ status, headers: new Headers(value ? { "Retry-After": value } : {}) });
    const request = (response) => ({ method: "GET", keyed: false, response, maxRetryDelay: 5 });
    const delays = new Set(Array.from({ length: 50 }, () => client.retryDelay(0, request(refused(429, "2")))));
    assert.ok([...delays].every((delay) => delay >= 2 && delay <= 2.5), [...delays].join());
    assert.ok(delays.size > 1);
    assert.equal(client.retryDelay(1, request(refused(503, "60"))), 5);
    assert.equal(client.retryDelay(2, request(refused(503, "0"))), null);
    for (const status of [200, 400, 409, 500, 502, 504]) assert.equal(client.retryDelay(0, request(refused(status, "1"))), null, String(status));
  });

  test("a broken connection retries reads and keyed writes, never an unkeyed write", async (t) => {
    t.mock.method(Math, "random", () => 0);
    const { client, fetch, sleeps } = retryingClient([
      { method: "POST", url: `${URL_}?${DC}`, body: { t: 1 }, response: broken },
      { method: "POST", url: `${URL_}?${DC}`, body: { t: 1 }, response: json(201, { id: 8 }) },
      { method: "GET", url: `${URL_}/8?${DC}`, response: broken },
      { method: "GET", url: `${URL_}/8?${DC}`, response: json(200, { id: 8 }) },
      { method: "POST", url: `${URL_}?${DC}`, body: { t: 2 }, response: broken },
    ]);
    const notes = new RestProxy(URL_, { client, clock: () => CLOCK });
    assert.deepEqual(await notes.create({ t: 1 }), [{ id: 8 }]);
    assert.equal(keyOf(fetch.calls[1]), keyOf(fetch.calls[0]));
    assert.deepEqual(await notes.read(8), { id: 8 });
    const unkeyed = new RestProxy(URL_, { client, clock: () => CLOCK, idempotencyKeys: false });
    await assert.rejects(unkeyed.create({ t: 2 }), { name: "TypeError", message: "fetch failed" });
    assert.deepEqual(sleeps, [0.5, 0.5]);
    assert.ok(fetch.finished());
  });

  test("an unkeyed write is still retried after 429 (it did not run), as the Python proxy", async (t) => {
    t.mock.method(Math, "random", () => 0);
    const { client, fetch, sleeps } = retryingClient([
      { method: "POST", url: `${URL_}?${DC}`, absent: [IDEMPOTENCY_HEADER], body: { t: 1 }, response: tooMany("wait", "1") },
      { method: "POST", url: `${URL_}?${DC}`, absent: [IDEMPOTENCY_HEADER], body: { t: 1 }, response: json(201, { id: 9 }) },
    ]);
    assert.deepEqual(await new RestProxy(URL_, { client, clock: () => CLOCK, idempotencyKeys: false }).create({ t: 1 }), [{ id: 9 }]);
    assert.deepEqual(sleeps, [1]);
    assert.ok(fetch.finished());
  });

  test("a server batch is retried after 429 with its key; the nonce refresh is retried too", async (t) => {
    t.mock.method(Math, "random", () => 0);
    const batchBody = { validation: "normal", requests: [{ method: "DELETE", path: "/demo/v1/notes/2" }] };
    const { client, fetch, sleeps } = retryingClient(
      [
        { method: "POST", url: `${ROOT}batch/v1`, body: batchBody, response: invalidNonce },
        { method: "GET", url: `${SITE}/auth/nonce`, response: unavailable("2") },
        { method: "GET", url: `${SITE}/auth/nonce`, response: json(200, { nonce: "fresh" }) },
        { method: "POST", url: `${ROOT}batch/v1`, body: batchBody, response: tooMany("busy", "1") },
        { method: "POST", url: `${ROOT}batch/v1`, body: batchBody, response: json(207, { responses: [{ status: 200, body: { deleted: true } }] }) },
      ],
      { nonce: "stale" },
    );
    const notes = new RestProxy(URL_, { client, clock: () => CLOCK });
    assert.deepEqual(await notes.sync({ destroy: [{ id: 2 }] }, { batch: "server" }), { create: [], update: [] });
    assert.deepEqual(sleeps, [2, 1]);
    const keys = fetch.calls.map(keyOf);
    assert.deepEqual([keys[1], keys[2]], [null, null]);
    assert.equal(keys[4], keys[3]);
    assert.notEqual(keys[3], keys[0]);
    assert.ok(fetch.finished());
  });

  test("the default sleep waits with setTimeout", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    t.mock.method(Math, "random", () => 0);
    const fetch = scriptFetch([
      { method: "GET", url: `${URL_}?x=1`, response: tooMany("wait", "3") },
      { method: "GET", url: `${URL_}?x=1`, response: json(200, [1]) },
    ]);
    const client = new RestClient({ root: ROOT, nonce: null, fetch });
    const pending = client.request("GET", `${URL_}?x=1`);
    for (let i = 0; i < 20 && fetch.calls.length < 1; i += 1) await Promise.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(2999);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(fetch.calls.length, 1);
    t.mock.timers.tick(1);
    assert.deepEqual((await pending).data, [1]);
    assert.ok(fetch.finished());
  });
});

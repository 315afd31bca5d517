// svc-rest.mjs's result sets read the total of any collection: a StoreCollection
// (tests/e2e/store_site.py) behind a live `svcrest serve`. With SVCREST_STORE_COMPAT=1 the
// server runs with --wordpress-compat and sends only WordPress's X-WP-Total /
// X-WP-TotalPages, as a WordPress site does.
//
// tests/test_js_module.py starts the server on a free port with a fresh database, then runs
// this file with SVCREST_STORE_SITE set; without it the tests skip.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { RestProxy } from "../../src/svcrest/static/svc-rest.mjs";

const SITE = process.env.SVCREST_STORE_SITE;
const COMPAT = process.env.SVCREST_STORE_COMPAT === "1";
const skip = SITE ? false : "SVCREST_STORE_SITE is not set (tests/test_js_module.py sets it)";
const BOOKS = `${SITE}/svc-json/shop/v1/books`;
const TITLES = ["Emma", "Dune", "Beloved", "Carrie", "Armadale"];

describe("RestProxy against a StoreCollection", { skip }, () => {
  test("readResult and iterPages carry the collection's total", async () => {
    const proxy = new RestProxy(BOOKS, { clock: () => 1700000000000 });
    const created = await proxy.create(...TITLES.map((title, n) => ({ title, year: 1800 + n })));
    assert.deepEqual(
      created.map((book) => book.id),
      [1, 2, 3, 4, 5],
    );

    const result = await proxy.readResult(undefined, { per_page: 2, page: 2, orderby: "title" });
    assert.deepEqual(
      result.records.map((book) => book.title),
      ["Carrie", "Dune"],
    );
    assert.deepEqual([result.total, result.totalPages], [5, 3]);
    assert.equal(result.response.headers.has("X-SVC-Total"), !COMPAT);
    assert.equal(result.response.headers.get("X-WP-Total"), COMPAT ? "5" : null);

    const ext = await proxy.readResult(undefined, {
      start: 4,
      limit: 2,
      sort: '[{"property":"year","direction":"ASC"}]',
    });
    assert.deepEqual(
      [ext.records.map((book) => book.title), ext.total, ext.totalPages],
      [["Armadale"], 5, 3],
    );

    const pages = [];
    for await (const page of proxy.iterPages({ per_page: 2 })) pages.push(page);
    assert.deepEqual(
      pages.map((page) => [page.records.length, page.total, page.totalPages]),
      [
        [2, 5, 3],
        [2, 5, 3],
        [1, 5, 3],
      ],
    );
  });
});

// svc-rest.mjs's Idempotency-Key and retries against a live `svcrest serve` with the guard
// plugin (tests/e2e/guard_site.py): a route that requires a key and a rate-limited read
// (10 per hour per client address).
//
// tests/test_js_module.py starts the server on a free port with a fresh database, then runs
// this file with SVCREST_GUARD_SITE set; without it the tests skip.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { IDEMPOTENCY_HEADER, ProxyError, RestClient, RestProxy } from "../../src/svcrest/static/svc-rest.mjs";

const SITE = process.env.SVCREST_GUARD_SITE;
const skip = SITE ? false : "SVCREST_GUARD_SITE is not set (tests/test_js_module.py sets it)";
const ROOT = `${SITE}/svc-json/`;
const ITEMS = `${ROOT}guard/v1/items`;
const LIMITED = `${ROOT}guard/v1/limited`;
const KEY = /^"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"$/;

/**
 * The real fetch, recording each call's method, Idempotency-Key and answer; `loseAnswer(n)`
 * makes the n-th call (from 0) reach the server and then fail as a dropped connection does.
 */
function recordingFetch() {
  const calls = [];
  const lost = new Set();
  const recording = async (url, init = {}) => {
    const key = new Headers(init.headers ?? {}).get(IDEMPOTENCY_HEADER);
    const index = calls.length;
    const call = { method: init.method, url, key, status: null, retryAfter: null };
    calls.push(call);
    const response = await fetch(url, init);
    call.status = response.status;
    call.retryAfter = response.headers.get("Retry-After");
    if (lost.has(index)) {
      await response.arrayBuffer();
      throw new TypeError("fetch failed (the answer was lost)");
    }
    return response;
  };
  recording.calls = calls;
  recording.loseAnswer = (index) => lost.add(index);
  return recording;
}

/** A proxy of `url` over a recording fetch whose retry pauses are recorded, not waited. */
function guarded(url, options = {}) {
  const fetchImpl = recordingFetch();
  const sleeps = [];
  const client = new RestClient({
    root: ROOT,
    nonce: null,
    fetch: fetchImpl,
    sleep: async (seconds) => {
      sleeps.push(seconds);
    },
  });
  return { proxy: new RestProxy(url, { client, noCache: false, ...options }), calls: fetchImpl.calls, fetchImpl, sleeps };
}

async function rows() {
  const response = await fetch(ITEMS);
  assert.equal(response.status, 200);
  return (await response.json()).count;
}

describe("Idempotency-Key and retries against svcrest serve", { skip }, () => {
  test("a write carries the key the route requires; without keys it is refused and not retried", async () => {
    const before = await rows();
    const { proxy, calls } = guarded(ITEMS);
    const [item] = await proxy.create({ title: "keyed" });
    assert.equal(item.title, "keyed");
    assert.equal(calls.length, 1);
    assert.match(calls[0].key, KEY);
    assert.equal(calls[0].status, 201);

    const { proxy: unkeyed, calls: unkeyedCalls, sleeps } = guarded(ITEMS, { idempotencyKeys: false });
    const error = await unkeyed.create({ title: "unkeyed" }).catch((caught) => caught);
    assert.ok(error instanceof ProxyError);
    assert.deepEqual([error.code, error.status], ["rest_idempotency_key_missing", 400]);
    assert.deepEqual(
      unkeyedCalls.map((call) => [call.method, call.key, call.status]),
      [["POST", null, 400]],
    );
    assert.deepEqual(sleeps, []);
    assert.equal(await rows(), before + 1);
  });

  test("an answer lost after the commit: the retry with the same key is replayed, one row", async () => {
    const before = await rows();
    const { proxy, calls, fetchImpl, sleeps } = guarded(ITEMS);
    fetchImpl.loseAnswer(0);
    const answer = await proxy.execute({ action: "create", records: [{ title: "once" }] });
    assert.equal(answer.status, 201);
    assert.equal(answer.headers.get("Idempotent-Replayed"), "true");
    assert.deepEqual(answer.data, { id: answer.data.id, title: "once" });
    assert.deepEqual(
      calls.map((call) => [call.method, call.status]),
      [
        ["POST", 201],
        ["POST", 201],
      ],
    );
    assert.match(calls[0].key, KEY);
    assert.equal(calls[1].key, calls[0].key);
    assert.equal(sleeps.length, 1);
    assert.ok(sleeps[0] >= 0.5 && sleeps[0] <= 0.625, String(sleeps[0]));
    assert.equal(await rows(), before + 1);
  });

  test("past the rate limit: 429 with Retry-After, retried maxRetries times, the last error thrown", async () => {
    const reported = [];
    const { proxy, calls, sleeps } = guarded(LIMITED, {
      maxRetryDelay: 0.05,
      onException: (error) => reported.push(error),
    });
    for (let i = 0; i < 10; i += 1) assert.deepEqual(await proxy.read(), { ok: true });
    assert.deepEqual(sleeps, []);
    const error = await proxy.read().catch((caught) => caught);
    assert.ok(error instanceof ProxyError);
    assert.deepEqual([error.code, error.status], ["rest_too_many_requests", 429]);
    assert.deepEqual(reported, [error]);
    const refused = calls.slice(10);
    assert.deepEqual(
      refused.map((call) => [call.method, call.key, call.status]),
      [
        ["GET", null, 429],
        ["GET", null, 429],
        ["GET", null, 429],
      ],
    );
    for (const call of refused) {
      assert.match(call.retryAfter, /^[0-9]+$/);
      assert.ok(Number(call.retryAfter) >= 1 && Number(call.retryAfter) <= 3600, call.retryAfter);
    }
    // Retry-After asks for up to an hour: each pause is maxRetryDelay.
    assert.deepEqual(sleeps, [0.05, 0.05]);
  });
});

// RestClient.subscribe of src/svcrest/static/svc-rest.mjs against scripted answers: the
// long-poll transport, resumption with the last cursor, back-off, the errors that end a
// subscription, and unsubscribing (which aborts the open request); the "sse" transport with a
// scripted EventSource (what a browser's does: named events, reconnects, giving up).
// Run with `node --test tests/js/` (tests/test_js_module.py runs it under pytest).

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  CHANGE_TRANSPORTS,
  ProxyError,
  RestClient,
  STREAM_BROKEN_CODE,
  changesUrl,
  subscribe,
} from "../../src/svcrest/static/svc-rest.mjs";

const ROOT = "http://notes.test/svc-json/";
const FEED = `${ROOT}demo/v1/notes/changes`;

const json = (status, body) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
const feed = (changes, cursor) =>
  json(200, { changes: changes.map(([id, event, itemId]) => ({ id, event, data: { id: itemId } })), cursor });
const error = (status, code) => json(status, { code, message: `${code}.`, data: { status } });

/**
 * A fetch answering from `script` (a Response, "drop" for a failed connection, or "hold" for
 * a request that is never answered until aborted); records each request. When the script
 * runs out, requests hold.
 */
function scriptedFetch(script) {
  const steps = [...script];
  const sent = [];
  const fetchImpl = (url, init = {}) => {
    sent.push({ url: String(url), init });
    const step = steps.length ? steps.shift() : "hold";
    if (step === "drop") return Promise.reject(new TypeError("fetch failed"));
    if (step === "hold") {
      return new Promise((_, reject) => {
        const signal = init.signal;
        const stop = () => reject(signal.reason ?? new DOMException("aborted", "AbortError"));
        if (signal?.aborted) stop();
        else signal?.addEventListener("abort", stop, { once: true });
      });
    }
    return Promise.resolve(step);
  };
  fetchImpl.sent = sent;
  fetchImpl.sinces = () => sent.map(({ url }) => new URL(url).searchParams.get("since"));
  return fetchImpl;
}

/** A client on `fetchImpl` whose pauses are recorded and take no time. */
function clientOf(fetchImpl, nonce = "n0nce") {
  const pauses = [];
  const client = new RestClient({
    root: ROOT,
    nonce,
    fetch: fetchImpl,
    sleep: async (seconds) => {
      pauses.push(seconds);
    },
  });
  client.pauses = pauses;
  return client;
}

/** Resolves when `predicate()` holds (checked every few milliseconds, for at most 2 s). */
async function until(predicate) {
  const deadline = Date.now() + 2000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe("changesUrl", () => {
  test("adds /changes to the path and keeps the query", () => {
    assert.equal(changesUrl(`${ROOT}demo/v1/notes`), FEED);
    assert.equal(changesUrl(`${ROOT}demo/v1/notes/`), FEED);
    assert.equal(changesUrl(`${ROOT}demo/v1/notes?lang=fr#top`), `${FEED}?lang=fr`);
  });
});

describe("RestClient.subscribe over long-polling", () => {
  test("hands out each change in order and polls again from the last cursor", async () => {
    const fetchImpl = scriptedFetch([
      feed([["c1", "created", 1], ["c2", "updated", 1]], "c2"),
      feed([], "c2b"),
      feed([["c3", "deleted", 1]], "c3"),
    ]);
    const client = clientOf(fetchImpl);
    const seen = [];
    const stop = client.subscribe("demo/v1/notes", (change) => seen.push(change), { wait: 20 });
    await until(() => seen.length === 3 && fetchImpl.sent.length === 4);
    assert.deepEqual(seen, [
      { id: "c1", event: "created", data: { id: 1 } },
      { id: "c2", event: "updated", data: { id: 1 } },
      { id: "c3", event: "deleted", data: { id: 1 } },
    ]);
    assert.deepEqual(fetchImpl.sinces(), [null, "c2", "c2b", "c3"]);
    const first = fetchImpl.sent[0];
    assert.equal(first.url, `${FEED}?wait=20`);
    assert.equal(first.init.method, "GET");
    assert.equal(first.init.headers["X-SVC-Nonce"], "n0nce");
    assert.equal(first.init.credentials, "same-origin");
    assert.equal(first.init.cache, "no-store");
    assert.equal(stop.cursor, "c3");
    stop();
    await stop.done;
    assert.ok(fetchImpl.sent[3].init.signal.aborted, "unsubscribing aborts the open request");
    assert.equal(fetchImpl.sent.length, 4);
  });

  test("starts after `since`", async () => {
    const fetchImpl = scriptedFetch([feed([["c8", "created", 8]], "c8")]);
    const seen = [];
    const stop = clientOf(fetchImpl).subscribe("demo/v1/notes", (change) => seen.push(change.id), {
      since: "c7",
    });
    await until(() => seen.length === 1);
    stop();
    await stop.done;
    assert.equal(fetchImpl.sent[0].url, `${FEED}?since=c7&wait=30`);
  });

  test("resumes with the same cursor after dropped connections and 5xx, with a doubling back-off", async () => {
    const fetchImpl = scriptedFetch([
      feed([["c1", "created", 1]], "c1"),
      "drop",
      error(502, "http_error"),
      error(503, "svc_unavailable"),
      "drop",
      error(429, "rest_too_many_requests"),
      feed([["c2", "created", 2]], "c2"),
    ]);
    const client = clientOf(fetchImpl);
    const seen = [];
    const told = [];
    const stop = client.subscribe("demo/v1/notes", (change) => seen.push(change.id), {
      maxDelay: 3,
      onError: (failure, state) => told.push([failure instanceof ProxyError ? failure.status : failure.name, state.retrying]),
    });
    await until(() => seen.length === 2);
    stop();
    await stop.done;
    assert.deepEqual(seen, ["c1", "c2"]);
    assert.deepEqual(fetchImpl.sinces().slice(0, 7), [null, "c1", "c1", "c1", "c1", "c1", "c1"]);
    assert.deepEqual(told, [
      ["TypeError", true],
      [502, true],
      [503, true],
      ["TypeError", true],
      [429, true],
    ]);
    const bounds = [[0.375, 0.5], [0.75, 1], [1.5, 2], [2.25, 3], [2.25, 3]];
    assert.equal(client.pauses.length, bounds.length);
    client.pauses.forEach((pause, index) => {
      assert.ok(pause >= bounds[index][0] && pause <= bounds[index][1], `pause ${index}: ${pause}`);
    });
  });

  for (const [status, code] of [
    [410, "rest_changes_expired"],
    [401, "rest_forbidden"],
    [403, "rest_forbidden"],
  ]) {
    test(`a ${status} ends the subscription and is told to onError`, async () => {
      const fetchImpl = scriptedFetch([feed([], "c0"), error(status, code)]);
      const told = [];
      const stop = clientOf(fetchImpl).subscribe("demo/v1/notes", () => {}, {
        onError: (failure, state) => told.push([failure, state]),
      });
      await stop.done;
      assert.equal(told.length, 1);
      const [failure, state] = told[0];
      assert.ok(failure instanceof ProxyError);
      assert.equal(failure.code, code);
      assert.equal(failure.status, status);
      assert.deepEqual(state, { retrying: false });
      assert.deepEqual(fetchImpl.sinces(), [null, "c0"]);
      assert.equal(stop.cursor, "c0");
    });
  }

  test("an error thrown by onEvent ends the subscription", async () => {
    const fetchImpl = scriptedFetch([feed([["c1", "created", 1], ["c2", "created", 2]], "c2")]);
    const told = [];
    const stop = clientOf(fetchImpl).subscribe(
      "demo/v1/notes",
      (change) => {
        throw new RangeError(`cannot show ${change.id}`);
      },
      { onError: (failure, state) => told.push([failure.message, state.retrying]) },
    );
    await stop.done;
    assert.deepEqual(told, [["cannot show c1", false]]);
    assert.equal(fetchImpl.sent.length, 1);
  });

  test("unsubscribing during a back-off stops at once", async () => {
    const fetchImpl = scriptedFetch(["drop"]);
    const client = new RestClient({ root: ROOT, nonce: null, fetch: fetchImpl, sleep: () => new Promise(() => {}) });
    const stop = client.subscribe("demo/v1/notes", () => {});
    await until(() => fetchImpl.sent.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    stop();
    await stop.done;
    assert.equal(fetchImpl.sent.length, 1);
  });

  test("refuses an unknown transport, a bad wait and a missing callback", () => {
    const client = clientOf(scriptedFetch([]));
    assert.throws(() => client.subscribe("demo/v1/notes", () => {}, { transport: "event-source" }), {
      name: "TypeError",
      message: 'unknown transport "event-source": one of long-poll, sse, auto',
    });
    assert.throws(() => client.subscribe("demo/v1/notes", () => {}, { wait: 0 }), TypeError);
    assert.throws(() => client.subscribe("demo/v1/notes", () => {}, { wait: 31 }), TypeError);
    assert.throws(() => client.subscribe("demo/v1/notes", null), TypeError);
    assert.deepEqual(Object.keys(CHANGE_TRANSPORTS), ["long-poll", "sse", "auto"]);
  });

  test("the module's subscribe follows with the client given", async () => {
    const fetchImpl = scriptedFetch([feed([["c1", "created", 1]], "c1")]);
    const seen = [];
    const stop = subscribe("demo/v1/notes", (change) => seen.push(change.id), { client: clientOf(fetchImpl) });
    await until(() => seen.length === 1);
    stop();
    await stop.done;
    assert.deepEqual(seen, ["c1"]);
  });
});

/**
 * A scripted EventSource class: each instance is recorded (`url`, `withCredentials`,
 * `closed`); tests drive it as a browser would: `open()`, `send(name, id, data)`,
 * `drop()` (the stream broke: the browser reconnects, readyState CONNECTING) and `giveUp()`
 * (an error status or an answer that is not a stream: readyState CLOSED).
 */
function fakeEventSource() {
  const made = [];
  class FakeEventSource extends EventTarget {
    constructor(url, { withCredentials = false } = {}) {
      super();
      this.url = url;
      this.withCredentials = withCredentials;
      this.readyState = 0;
      this.closed = false;
      made.push(this);
    }
    close() {
      this.closed = true;
      this.readyState = 2;
    }
    open() {
      this.readyState = 1;
      this.dispatchEvent(new Event("open"));
    }
    send(name, id, data) {
      this.dispatchEvent(new MessageEvent(name, { data: JSON.stringify(data), lastEventId: id }));
    }
    drop() {
      this.readyState = 0;
      this.dispatchEvent(new Event("error"));
    }
    giveUp() {
      this.readyState = 2;
      this.dispatchEvent(new Event("error"));
    }
  }
  FakeEventSource.made = made;
  return FakeEventSource;
}

/** A client on `fetchImpl` and the fake EventSource `Source`. */
function streamingClient(fetchImpl, Source, options = {}) {
  const client = clientOf(fetchImpl);
  client.eventSourceImpl = Source;
  Object.assign(client, options);
  return client;
}

describe('RestClient.subscribe with transport "sse"', () => {
  test("reads the events of one EventSource, with the nonce as _wpnonce, in order", async () => {
    const Source = fakeEventSource();
    const fetchImpl = scriptedFetch([]);
    const seen = [];
    const stop = streamingClient(fetchImpl, Source).subscribe("demo/v1/notes", (change) => seen.push(change), {
      transport: "sse",
    });
    await until(() => Source.made.length === 1);
    const [source] = Source.made;
    assert.equal(source.url, `${FEED}?_wpnonce=n0nce`);
    assert.equal(source.withCredentials, false);
    source.open();
    source.send("created", "c1", { id: 1, title: "a" });
    source.send("updated", "c2", { id: 1, title: "b" });
    source.send("message", "cx", { id: 9 }); // not a change event: ignored
    source.send("deleted", "c3", { id: 1 });
    assert.deepEqual(seen, [
      { id: "c1", event: "created", data: { id: 1, title: "a" } },
      { id: "c2", event: "updated", data: { id: 1, title: "b" } },
      { id: "c3", event: "deleted", data: { id: 1 } },
    ]);
    assert.equal(stop.cursor, "c3");
    assert.equal(source.closed, false);
    stop();
    await stop.done;
    assert.equal(source.closed, true, "unsubscribing closes the EventSource");
    assert.equal(fetchImpl.sent.length, 0, "no long-poll while the stream works");
  });

  test("starts after `since`, sends cookies cross-origin with credentials include, no nonce without one", async () => {
    const Source = fakeEventSource();
    const client = new RestClient({ root: ROOT, nonce: null, credentials: "include", eventSource: Source, fetch: scriptedFetch([]) });
    const stop = client.subscribe("demo/v1/notes", () => {}, { transport: "sse", since: "c7" });
    await until(() => Source.made.length === 1);
    assert.equal(Source.made[0].url, `${FEED}?since=c7`);
    assert.equal(Source.made[0].withCredentials, true);
    stop();
    await stop.done;
  });

  test("a broken stream is left to the browser's reconnection and told to onError", async () => {
    const Source = fakeEventSource();
    const fetchImpl = scriptedFetch([]);
    const told = [];
    const seen = [];
    const stop = streamingClient(fetchImpl, Source).subscribe("demo/v1/notes", (change) => seen.push(change.id), {
      transport: "sse",
      onError: (failure, state) => told.push([failure.code, failure.status, state.retrying]),
    });
    await until(() => Source.made.length === 1);
    const [source] = Source.made;
    source.open();
    source.send("created", "c1", { id: 1 });
    source.drop();
    source.open();
    source.send("created", "c2", { id: 2 });
    assert.deepEqual(seen, ["c1", "c2"]);
    assert.deepEqual(told, [[STREAM_BROKEN_CODE, 0, true]]);
    assert.equal(Source.made.length, 1, "the same EventSource reconnects (with Last-Event-ID)");
    assert.equal(fetchImpl.sent.length, 0);
    stop();
    await stop.done;
  });

  for (const [status, code] of [
    [410, "rest_changes_expired"],
    [401, "rest_forbidden"],
    [403, "rest_forbidden"],
  ]) {
    test(`when the browser gives up, a long-poll probe learns the ${status} that ends it`, async () => {
      const Source = fakeEventSource();
      const fetchImpl = scriptedFetch([error(status, code)]);
      const told = [];
      const stop = streamingClient(fetchImpl, Source).subscribe("demo/v1/notes", () => {}, {
        transport: "sse",
        onError: (failure, state) => told.push([failure.code, failure.status, state.retrying]),
      });
      await until(() => Source.made.length === 1);
      Source.made[0].open();
      Source.made[0].send("created", "c1", { id: 1 });
      Source.made[0].giveUp();
      await stop.done;
      assert.deepEqual(told, [[code, status, false]]);
      assert.equal(fetchImpl.sent.length, 1);
      assert.equal(fetchImpl.sent[0].url, `${FEED}?since=c1&wait=0`);
      assert.equal(fetchImpl.sent[0].init.headers["X-SVC-Nonce"], "n0nce");
      assert.equal(Source.made.length, 1);
      assert.equal(Source.made[0].closed, true);
    });
  }

  test("after a 5xx probe it backs off and opens a new stream with since; a probe's changes are handed out", async () => {
    const Source = fakeEventSource();
    const fetchImpl = scriptedFetch([error(503, "svc_unavailable"), feed([["c2", "updated", 1]], "c2")]);
    const client = streamingClient(fetchImpl, Source);
    const seen = [];
    const stop = client.subscribe("demo/v1/notes", (change) => seen.push(change.id), { transport: "sse" });
    await until(() => Source.made.length === 1);
    Source.made[0].open();
    Source.made[0].send("created", "c1", { id: 1 });
    Source.made[0].giveUp();
    await until(() => Source.made.length === 2);
    assert.equal(client.pauses.length, 1);
    assert.equal(Source.made[1].url, `${FEED}?since=c1&_wpnonce=n0nce`);
    Source.made[1].open();
    Source.made[1].giveUp(); // e.g. a 502 of a proxy: the probe now answers
    await until(() => Source.made.length === 3);
    assert.deepEqual(fetchImpl.sinces(), ["c1", "c1"]);
    assert.deepEqual(seen, ["c1", "c2"], "the probe's changes are handed out");
    assert.equal(Source.made[2].url, `${FEED}?since=c2&_wpnonce=n0nce`);
    Source.made[2].open();
    Source.made[2].send("deleted", "c3", { id: 1 });
    assert.deepEqual(seen, ["c1", "c2", "c3"]);
    assert.deepEqual(Source.made.map((source) => source.closed), [true, true, false]);
    stop();
    await stop.done;
  });

  test("a site that never streams (a WSGI server answers JSON) is long-polled instead", async () => {
    const Source = fakeEventSource();
    const fetchImpl = scriptedFetch([feed([], "c0"), feed([["c1", "created", 1]], "c1")]);
    const seen = [];
    const stop = streamingClient(fetchImpl, Source).subscribe("demo/v1/notes", (change) => seen.push(change.id), {
      transport: "sse",
    });
    await until(() => Source.made.length === 1);
    Source.made[0].giveUp(); // 200 application/json: not a stream
    await until(() => seen.length === 1 && fetchImpl.sent.length === 3);
    assert.deepEqual(
      fetchImpl.sent.map(({ url }) => new URL(url).search),
      ["?wait=0", "?since=c0&wait=30", "?since=c1&wait=30"],
    );
    assert.equal(Source.made.length, 1);
    stop();
    await stop.done;
  });

  test("an error thrown by onEvent or an event that is not JSON ends it", async () => {
    const Source = fakeEventSource();
    const told = [];
    const stop = streamingClient(scriptedFetch([]), Source).subscribe(
      "demo/v1/notes",
      (change) => {
        throw new RangeError(`cannot show ${change.id}`);
      },
      { transport: "sse", onError: (failure, state) => told.push([failure.message, state.retrying]) },
    );
    await until(() => Source.made.length === 1);
    Source.made[0].send("created", "c1", { id: 1 });
    await stop.done;
    assert.deepEqual(told, [["cannot show c1", false]]);
    assert.equal(Source.made[0].closed, true);

    const Other = fakeEventSource();
    const codes = [];
    const ended = streamingClient(scriptedFetch([]), Other).subscribe("demo/v1/notes", () => {}, {
      transport: "sse",
      onError: (failure, state) => codes.push([failure.code, state.retrying]),
    });
    await until(() => Other.made.length === 1);
    Other.made[0].dispatchEvent(new MessageEvent("created", { data: "{not json", lastEventId: "c1" }));
    await ended.done;
    assert.deepEqual(codes, [["invalid_changes_response", false]]);
    assert.equal(ended.cursor, null);
    assert.equal(Other.made[0].closed, true);
  });

  test('"sse" without EventSource ends with a TypeError; "auto" long-polls then', async () => {
    const told = [];
    const client = clientOf(scriptedFetch([]));
    const stop = client.subscribe("demo/v1/notes", () => {}, {
      transport: "sse",
      onError: (failure, state) => told.push([failure.name, state.retrying]),
    });
    await stop.done;
    assert.deepEqual(told, [["TypeError", false]]);

    const fetchImpl = scriptedFetch([feed([["c1", "created", 1]], "c1")]);
    const seen = [];
    const auto = clientOf(fetchImpl).subscribe("demo/v1/notes", (change) => seen.push(change.id), { transport: "auto" });
    await until(() => seen.length === 1);
    auto();
    await auto.done;
    assert.equal(fetchImpl.sent[0].url, `${FEED}?wait=30`);

    const Source = fakeEventSource();
    const streamed = streamingClient(scriptedFetch([]), Source).subscribe("demo/v1/notes", () => {}, { transport: "auto" });
    await until(() => Source.made.length === 1);
    streamed();
    await streamed.done;
    assert.equal(Source.made[0].closed, true);
  });
});

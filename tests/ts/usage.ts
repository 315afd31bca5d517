// Type-checked (never run) by `tsc --noEmit` in `make test`: the uses of svc-rest.mjs that
// its declarations (src/svcrest/static/svc-rest.d.ts) must accept, and a few they must refuse.

import {
  ProxyError,
  RestClient,
  RestProxy,
  DEFAULT_MAX_RETRIES,
  IDEMPOTENCY_HEADER,
  TIMEOUT_CODE,
  nextLink,
  subscribe,
  CHANGE_TRANSPORTS,
  STREAM_BROKEN_CODE,
  CHANGES_EXPIRED_CODE,
  type ChangeEvent,
  type Unsubscribe,
  type Operation,
  type ResultSet,
  type SyncResult,
} from "/static/svc-rest.mjs";

interface Note {
  id?: number;
  title: string;
}

export async function usage(): Promise<number> {
  const api = new RestClient({ root: "/svc-json/", nonce: null });
  const notes: RestProxy<Note> = api.proxy<Note>("demo/v1/notes", {
    timeout: 10,
    headers: { "X-Trace": "usage" },
    api: { read: "/svc-json/demo/v1/notes" },
    pageParam: "page",
    limitParam: "per_page",
    onException: (error: ProxyError, operation: Operation<Note> | null) => {
      console.warn(error.code, error.status, operation?.action);
    },
  });
  const [saved] = await notes.create({ title: "Hello" });
  const first: ResultSet<Note> = await notes.readResult(undefined, { per_page: 5 });
  let count = first.records.length + (first.total ?? 0) + (first.totalPages ?? 0);
  for await (const page of notes.iterPages({ per_page: 5 })) {
    count += page.records.filter((note) => note.title.length > 0).length;
    if (page.nextUrl === null) break;
  }
  const synced: SyncResult<Note> = await notes.sync(
    { create: [{ title: "A" }], update: saved ? [saved] : [], destroy: [{ id: 3, title: "" }] },
    { batch: "server", atomic: true },
  );
  count += synced.create.length + synced.update.length;
  const url: string = notes.buildUrl({ action: "read", id: 7, sorters: ["title"] });
  const batch = notes.batchRequest([{ action: "destroy", records: [{ id: 1, title: "" }] }]);
  count += url.length + batch.body.requests.length + (nextLink(null) ?? "").length;
  try {
    await new RestProxy("/svc-json/demo/v1/notes", { timeout: null }).read(1);
  } catch (error) {
    if (error instanceof ProxyError && error.code === TIMEOUT_CODE) count += 1;
  }
  // @ts-expect-error an unknown action
  notes.buildUrl({ action: "list" });
  // @ts-expect-error batch is "server" or null
  await notes.sync({}, { batch: "client" });
  // @ts-expect-error timeout is a number of seconds
  new RestProxy("/x", { timeout: "30s" });
  const guarded = new RestProxy<Note>("/svc-json/demo/v1/notes", { conditional: true });
  const tag: string | null = guarded.ifMatch({ action: "update", records: [{ id: 1, title: "" }] });
  count += guarded.etags.size + (tag ?? "").length + (guarded.conditional ? 1 : 0);
  // @ts-expect-error conditional is a boolean
  new RestProxy("/x", { conditional: "yes" });
  const patient = new RestProxy<Note>("/svc-json/demo/v1/notes", {
    maxRetries: 4,
    maxRetryDelay: 10,
    idempotencyKeys: false,
    client: new RestClient({ sleep: (seconds: number) => new Promise((done) => setTimeout(done, seconds * 1000)) }),
  });
  const wait: number | null = patient.client.retryDelay(0, { method: "GET", keyed: false, response: null });
  count += patient.maxRetries + patient.maxRetryDelay + (wait ?? 0) + (patient.idempotencyKeys ? 1 : 0);
  await api.request("POST", "/svc-json/demo/v1/notes", { body: { title: "x" }, maxRetries: 0, idempotencyKeys: true });
  // @ts-expect-error maxRetries is a number
  new RestProxy("/x", { maxRetries: "2" });
  // @ts-expect-error idempotencyKeys is a boolean
  new RestProxy("/x", { idempotencyKeys: "on" });
  const titles: string[] = [];
  const stop: Unsubscribe = api.subscribe<Note>(
    "demo/v1/notes",
    (change: ChangeEvent<Note>) => {
      if (change.event !== "deleted") titles.push(change.data.title);
    },
    {
      since: null,
      wait: 25,
      transport: "long-poll",
      maxDelay: 5,
      onError: (error, { retrying, delay }) => {
        if (!retrying && error instanceof ProxyError && error.code === CHANGES_EXPIRED_CODE) titles.length = 0;
        count += delay ?? 0;
      },
    },
  );
  const cursor: string | null = stop.cursor;
  stop();
  await stop.done;
  const streamed = new RestClient({ root: "/svc-json/", eventSource: EventSource, credentials: "include" });
  const viaSse = streamed.subscribe("demo/v1/notes", (change) => titles.push(change.id), { transport: "sse" });
  viaSse();
  count += STREAM_BROKEN_CODE.length + (streamed.eventSourceImpl === null ? 0 : 1);
  const other = subscribe("demo/v1/notes", (change) => titles.push(change.id), { client: api });
  other();
  count += Object.keys(CHANGE_TRANSPORTS).length + (cursor ?? "").length;
  // @ts-expect-error onEvent is a function
  api.subscribe("demo/v1/notes", "log");
  // @ts-expect-error wait is a number of seconds
  api.subscribe("demo/v1/notes", () => {}, { wait: "30" });
  // @ts-expect-error the cursor is read-only
  stop.cursor = "x";
  return count + DEFAULT_MAX_RETRIES + IDEMPOTENCY_HEADER.length;
}

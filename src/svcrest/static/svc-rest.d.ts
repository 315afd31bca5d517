/**
 * TypeScript declarations of svc-rest.mjs, the browser half of svcrest's client proxy (the
 * URL rules of Ext JS's REST proxy; docs/guides/clients.md). `make test` checks them with
 * `tsc --noEmit` against tests/ts/usage.ts.
 *
 * The module is served at `/static/svc-rest.mjs`; map that specifier onto this file, e.g. with
 * `"paths": {"/static/svc-rest.mjs": ["./svc-rest.d.ts"]}` in a tsconfig.json.
 *
 * @module svc-rest
 */

/** The four actions of a proxy. */
export type Action = "create" | "read" | "update" | "destroy";

/** The four actions, in the order `sync` sends them. */
export declare const ACTIONS: readonly ["create", "read", "update", "destroy"];
/** The action → HTTP method map that `actionMethods` is merged over. */
export declare const DEFAULT_ACTION_METHODS: Readonly<Record<Action, string>>;
/** The request and response header that carries the REST nonce. */
export declare const NONCE_HEADER: "X-SVC-Nonce";
/** The error code that makes the client fetch a fresh nonce and retry once. */
export declare const INVALID_NONCE_CODE: "rest_cookie_invalid_nonce";
/** The query parameter of the grouper's direction in `simpleGroupMode`. */
export declare const GROUP_DIRECTION_PARAM: "groupDir";
/** The default `timeout` in seconds. */
export declare const DEFAULT_TIMEOUT: 30;
export declare const ETAGS_MAX: 4096;
/** The error code of a request that got no answer within `timeout` (status 0). */
export declare const TIMEOUT_CODE: "timeout";
/** The header of the key each write carries (IETF draft-ietf-httpapi-idempotency-key-header). */
export declare const IDEMPOTENCY_HEADER: "Idempotency-Key";
/** Retries of one request after a 429 or 503 answer or a broken connection (default). */
export declare const DEFAULT_MAX_RETRIES: 2;
/** The longest pause in seconds before a retry, whatever `Retry-After` asks (default). */
export declare const DEFAULT_MAX_RETRY_DELAY: 30;
/** The batch route under the REST root. */
export declare const BATCH_ROUTE: "batch/v1";
/** The default REST URL prefix. */
export declare const DEFAULT_PREFIX: "/svc-json/";
/** The response header with the number of records of the collection. */
export declare const TOTAL_HEADER: "X-SVC-Total";
/** The response header with the number of pages of the collection. */
export declare const TOTAL_PAGES_HEADER: "X-SVC-TotalPages";

/** A sorter or grouper: a property name (direction "ASC") or `{property, direction}`. */
export type SorterSpec = string | { property: string; direction?: string | null };

/** A filter: `property`, `value` (undefined means null), `operator` (left out when absent). */
export interface FilterSpec {
  property: string;
  value?: unknown;
  operator?: string | null;
}

/** Query parameters: a plain object or a Map (a Map keeps the order of integer-like keys). */
export type Params = Readonly<Record<string, unknown>> | ReadonlyMap<string, unknown>;

/** One create/read/update/destroy request of a proxy. */
export interface Operation<R = unknown> {
  action: Action;
  /** The records written; the first one's id goes in the URL. */
  records?: readonly R[];
  /** The id of a read when there are no records. */
  id?: unknown;
  params?: Params;
  page?: unknown;
  start?: unknown;
  limit?: unknown;
  sorters?: readonly SorterSpec[] | SorterSpec;
  filters?: readonly FilterSpec[] | FilterSpec;
  grouper?: SorterSpec;
}

/** Called once for each `ProxyError` a proxy throws (`operation` null for a whole batch). */
export type ExceptionHandler<R = any> = (error: ProxyError, operation: Operation<R> | null) => void;

/** The options of `RestProxy` (Ext JS's config names, camelCase). */
export interface RestProxyOptions<R = any> {
  appendId?: boolean;
  format?: string | null;
  batchActions?: boolean;
  actionMethods?: Partial<Record<Action, string>> | ReadonlyMap<Action, string> | null;
  noCache?: boolean;
  cacheString?: string | null;
  pageParam?: string | null;
  startParam?: string | null;
  limitParam?: string | null;
  sortParam?: string | null;
  filterParam?: string | null;
  groupParam?: string | null;
  directionParam?: string | null;
  simpleSortMode?: boolean;
  simpleGroupMode?: boolean;
  idParam?: string | null;
  idProperty?: string;
  extraParams?: Params | null;
  /** Milliseconds since the epoch (default `Date.now`). */
  clock?: (() => number) | null;
  /** Seconds to wait for each answer (default 30; null: forever). */
  timeout?: number | null;
  /** Sent on every request of the proxy, the nonce refresh included. */
  headers?: Readonly<Record<string, string>> | null;
  /** A URL per action, as Ext JS's `api` config; the id rules stay. */
  api?: Partial<Record<Action, string>> | null;
  onException?: ExceptionHandler<R> | null;
  /** Sends the requests (default: a new `RestClient`). */
  client?: RestClient | null;
  /** The REST root of server batches (default: the URL up to `/svc-json/`). */
  root?: string | null;
  /** Send the `ETag` last read for a record as `If-Match` on update and destroy (a 412
   * throws `ProxyError` `rest_precondition_failed`). */
  conditional?: boolean;
  /** Retries of one request after a 429 or 503 answer, or a broken connection of a read or
   * keyed write (default 2; 0: none). A whole number >= 0. */
  maxRetries?: number;
  /** The longest pause in seconds before a retry, whatever `Retry-After` asks (default 30). */
  maxRetryDelay?: number;
  /** Send a fresh `Idempotency-Key` with each write, the same one on its retries (default
   * true). */
  idempotencyKeys?: boolean;
}

/** A response of `RestClient.request`: the decoded JSON and the fetch response. */
export interface RestResponse<T = any> {
  data: T;
  status: number;
  headers: Headers;
  response: Response;
}

/** One page read by `readResult` / `iterPages`. */
export interface ResultSet<R = any> {
  records: R[];
  /** From `X-SVC-Total`, else WordPress's `X-WP-Total`; null when both are absent. */
  total: number | null;
  /** From `X-SVC-TotalPages`, else `X-WP-TotalPages`; null when both are absent. */
  totalPages: number | null;
  /** From `Link: <…>; rel="next"`; null on the last page. */
  nextUrl: string | null;
  response: Response;
}

/** The records `sync` writes. */
export interface SyncChanges<R = any> {
  create?: Iterable<R>;
  update?: Iterable<R>;
  destroy?: Iterable<R>;
}

/** How `sync` sends: one request per record (default) or one server batch. */
export interface SyncOptions {
  batch?: "server" | null;
  /** All or nothing (needs `batch: "server"`). */
  atomic?: boolean;
}

/** What `sync` returns: the saved records as the server returned them. */
export interface SyncResult<R = any> {
  create: R[];
  update: R[];
}

/** One entry of a batch request. */
export interface BatchEntry {
  method: string;
  path: string;
  body?: unknown;
  /** `If-Match` of a conditional update or destroy. */
  headers?: Record<string, string>;
}

/** The request `batchRequest` builds. */
export interface BatchRequest {
  method: "POST";
  url: string;
  body: { validation: "normal" | "atomic"; requests: BatchEntry[] };
}

/** Per-request options of `RestClient.request`. */
export interface RequestOptions {
  body?: unknown;
  headers?: Readonly<Record<string, string>> | null;
  /** Seconds (null: forever). */
  timeout?: number | null;
  /** Retries after a 429 or 503 answer or a broken connection (default 2). */
  maxRetries?: number;
  /** The longest pause in seconds before a retry (default 30). */
  maxRetryDelay?: number;
  /** A fresh `Idempotency-Key` on a write without one (default true). */
  idempotencyKeys?: boolean;
  /** Cancels the request (the promise rejects with the signal's `AbortError`). */
  signal?: AbortSignal | null;
  /** The fetch's cache mode (default: the browser's). */
  cache?: RequestCache | null;
}

/** The request `RestClient.retryDelay` decides about. */
export interface RetryRequest {
  method: string;
  /** The request carries an `Idempotency-Key`. */
  keyed: boolean;
  /** Its answer; null when the connection broke. */
  response: Pick<Response, "status" | "headers"> | null;
  maxRetries?: number;
  maxRetryDelay?: number;
}

export declare function isValidId(id: unknown): boolean;
export declare function recordId(record: unknown, idProperty: string): unknown;
export declare function operationId(operation: Operation, idProperty: string): unknown;
export declare function normalizeSorter(
  spec: SorterSpec,
  kind?: string,
): { property: string; direction: string };
export declare function normalizeFilter(spec: FilterSpec): {
  property: string;
  value: unknown;
  operator?: string;
};
/** The `rel="next"` URL of a `Link` header (resolved against `base`), or null. */
export declare function nextLink(header: string | null | undefined, base?: string): string | null;

/** The client proxy: methods and URLs with the rules of Ext JS's `Ext.data.proxy.Rest`, and
 * the requests themselves through `client`. `R` is the type of the records. */
export declare class RestProxy<R = any> {
  constructor(url: string, options?: RestProxyOptions<R>);
  url: string;
  appendId: boolean;
  format: string | null;
  batchActions: boolean;
  actionMethods: Record<Action, string>;
  noCache: boolean;
  cacheString: string | null;
  pageParam: string | null;
  startParam: string | null;
  limitParam: string | null;
  sortParam: string | null;
  filterParam: string | null;
  groupParam: string | null;
  directionParam: string | null;
  simpleSortMode: boolean;
  simpleGroupMode: boolean;
  idParam: string | null;
  idProperty: string;
  extraParams: Map<string, unknown>;
  clock: () => number;
  timeout: number | null;
  headers: Record<string, string>;
  api: Partial<Record<Action, string>>;
  onException: ExceptionHandler<R> | null;
  root: string | null;
  conditional: boolean;
  maxRetries: number;
  maxRetryDelay: number;
  idempotencyKeys: boolean;
  /** Record id (as a string) → the `ETag` of its last answer. */
  etags: Map<string, string>;
  /** The client that sends the requests (made on first use when none was given). */
  readonly client: RestClient;
  /** The `headers`, `timeout` and retry options of every request. */
  readonly requestOptions: {
    headers: Record<string, string>;
    timeout: number | null;
    maxRetries: number;
    maxRetryDelay: number;
    idempotencyKeys: boolean;
  };

  getMethod(operation: Operation<R>): string;
  actionUrl(action: Action): string;
  buildUrl(operation: Operation<R>): string;
  queryParams(operation: Operation<R>): Map<string, string>;
  requestBody(operation: Operation<R>): R | R[] | undefined;
  ifMatch(operation: Operation<R>): string | null;
  rememberEtag(
    operation: Operation<R>,
    headers: { get(name: string): string | null },
    data: unknown,
  ): void;
  operationsFor(action: "create" | "update" | "destroy", records: readonly R[]): Operation<R>[];

  execute<T = any>(operation: Operation<R>): Promise<RestResponse<T>>;
  send<T = any>(operation: Operation<R>): Promise<T>;
  create(...records: R[]): Promise<R[]>;
  read<T = any>(id?: unknown, params?: Params): Promise<T>;
  update(...records: R[]): Promise<R[]>;
  destroy(...records: R[]): Promise<void>;
  readResult(id?: unknown, params?: Params): Promise<ResultSet<R>>;
  iterPages(params?: Params): AsyncGenerator<ResultSet<R>, void, undefined>;
  sync(changes?: SyncChanges<R>, options?: SyncOptions): Promise<SyncResult<R>>;
  restRoot(): string;
  batchRequest(operations: readonly Operation<R>[], options?: { atomic?: boolean }): BatchRequest;
}

/** An error the proxy throws: an error response (status >= 400), a timeout (status 0), or an
 * answer it cannot read. */
export declare class ProxyError extends Error {
  constructor(
    code: string,
    message: string,
    status: number,
    data?: unknown,
    options?: { cause?: unknown },
  );
  name: "ProxyError";
  code: string;
  status: number;
  data: unknown;
}

/** The options of `RestClient`. */
export interface RestClientOptions {
  /** The REST root (when undefined: `window.svcApiSettings.root`). */
  root?: string;
  /** The nonce (when undefined: `window.svcApiSettings.nonce`; null: none). */
  nonce?: string | null;
  nonceUrl?: string;
  methodOverride?: boolean;
  credentials?: RequestCredentials;
  fetch?: typeof fetch;
  /** Waits before a retry (default: a `setTimeout` of that many seconds). */
  sleep?: (seconds: number) => Promise<void>;
  /** The `EventSource` constructor of the "sse" transport (default `globalThis.EventSource`). */
  eventSource?: typeof EventSource;
}

/** Sends REST requests with `fetch`, cookie credentials and the REST nonce; an
 * `Idempotency-Key` on each write and bounded, jittered retries after 429 and 503. */
export declare class RestClient {
  constructor(options?: RestClientOptions);
  root: string;
  nonce: string | null;
  nonceUrl: string | null;
  methodOverride: boolean;
  credentials: RequestCredentials;
  fetchImpl: typeof fetch | null;
  sleep: (seconds: number) => Promise<void>;
  eventSourceImpl: typeof EventSource | null;

  proxy<R = any>(route: string, options?: RestProxyOptions<R>): RestProxy<R>;
  getNonceUrl(): string;
  /** Seconds to wait before sending `request` again after its `attempt`-th try (from 0), or
   * null to stop. */
  retryDelay(attempt: number, request: RetryRequest): number | null;
  refreshNonce(options?: Omit<RequestOptions, "body">): Promise<string>;
  request<T = any>(method: string, url: string, options?: RequestOptions): Promise<RestResponse<T>>;
  execute<T = any, R = any>(proxy: RestProxy<R>, operation: Operation<R>): Promise<RestResponse<T>>;
  send<T = any, R = any>(proxy: RestProxy<R>, operation: Operation<R>): Promise<T>;
  create<R>(proxy: RestProxy<R>, ...records: R[]): Promise<R[]>;
  read<T = any, R = any>(proxy: RestProxy<R>, id?: unknown, params?: Params): Promise<T>;
  update<R>(proxy: RestProxy<R>, ...records: R[]): Promise<R[]>;
  destroy<R>(proxy: RestProxy<R>, ...records: R[]): Promise<void>;
  sync<R>(proxy: RestProxy<R>, changes?: SyncChanges<R>): Promise<SyncResult<R>>;
  /** Follow the change feed of the collection at `path` (under the root): `onEvent` for each
   * change, in order, each once; resumes with the last cursor after a broken connection or a
   * 5xx; a 410, 401 or 403 ends it (told to `onError`). */
  subscribe<T = any>(
    path: string,
    onEvent: (change: ChangeEvent<T>) => void,
    options?: SubscribeOptions,
  ): Unsubscribe;
}

/** The longest `wait` of a change feed's long-poll, in seconds. */
export declare const MAX_CHANGES_WAIT: 30;
/** The `wait` each long-poll asks for by default. */
export declare const DEFAULT_CHANGES_WAIT: 30;
/** The error code of a cursor older than the changes a site keeps (410). */
export declare const CHANGES_EXPIRED_CODE: "rest_changes_expired";

/** One change of a collection. */
export interface ChangeEvent<T = any> {
  /** The cursor just after this change. */
  id: string;
  event: "created" | "updated" | "deleted";
  /** The item as a GET of the collection shows it (`{id}` for a deletion). */
  data: T;
}

/** What a transport gets from `subscribe`. */
export interface ChangeFeed {
  readonly client: RestClient;
  readonly url: string;
  cursor: string | null;
  readonly wait: number;
  readonly timeout: number | null;
  readonly headers: Readonly<Record<string, string>> | null;
  readonly signal: AbortSignal;
  emit(change: ChangeEvent): void;
  /** Tells `onError`; the pause in seconds before trying again, or null to stop. */
  failed(error: unknown): number | null;
  pause(seconds: number): Promise<unknown>;
}

/** A way of following a feed: settles when it stops. */
export type ChangeTransport = (feed: ChangeFeed) => Promise<void>;

/** The code told to `onError` when an event stream breaks (the browser reconnects it). */
export declare const STREAM_BROKEN_CODE: "event_stream_broken";

/** The transports `subscribe` can use, by name: "long-poll" (any server), "sse" (an
 * `EventSource` with the nonce as `_wpnonce`; long-polls where the site does not stream),
 * "auto" ("sse" where `EventSource` exists, else "long-poll"). */
export declare const CHANGE_TRANSPORTS: Readonly<Record<string, ChangeTransport>>;

/** The options of `subscribe`. */
export interface SubscribeOptions {
  /** Start after this cursor (default: the end of the change log). */
  since?: string | null;
  /** Seconds each long-poll waits for a change (0 < wait <= 30; default 30). */
  wait?: number;
  /** A key of `CHANGE_TRANSPORTS`: "long-poll" (the default), "sse" or "auto". */
  transport?: string;
  /** The longest pause in seconds before trying again (default 30). */
  maxDelay?: number;
  /** Seconds an answer may take beyond `wait` (null: forever; default 30). */
  timeout?: number | null;
  headers?: Readonly<Record<string, string>> | null;
  onError?: (error: unknown, state: { retrying: boolean; delay?: number }) => void;
}

/** Stops a subscription (an open request is aborted). */
export interface Unsubscribe {
  (): void;
  /** Where the subscription would resume. */
  readonly cursor: string | null;
  /** Settled when the subscription has ended. */
  readonly done: Promise<void>;
}

/** The feed URL of a collection URL (`/changes` added to its path). */
export declare function changesUrl(collectionUrl: string): string;
/** `RestClient.subscribe` with `client` (default: a new `RestClient`). */
export declare function subscribe<T = any>(
  path: string,
  onEvent: (change: ChangeEvent<T>) => void,
  options?: SubscribeOptions & { client?: RestClient },
): Unsubscribe;

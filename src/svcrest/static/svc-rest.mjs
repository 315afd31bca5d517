/**
 * svc-rest.mjs: the browser half of svcrest's client proxy (the URL rules of Ext JS's REST proxy).
 *
 * A dependency-free ES module. `RestProxy` maps create/read/update/destroy onto HTTP methods
 * and URLs with exactly the rules of the Python `svcrest.client.RestProxy` (both are checked
 * against `tests/vectors/proxy_urls.json`); `RestClient` sends those requests with `fetch`,
 * cookie credentials and the REST nonce (`X-SVC-Nonce`), an `Idempotency-Key` on each write,
 * and retries after 429 and 503 answers as the Python proxy does (`Retry-After`, jittered
 * and bounded; docs/guides/idempotency-and-rate-limits.md).
 *
 * Where JavaScript and Python values differ, the rules are stated on the values both sides
 * see the same way: ids and parameter values are strings, integers or null. Booleans are
 * sent as `String(value)` ("true") here and `str(value)` ("True") in Python, floats as
 * `String(1.5)` / `str(1.5)` ("1" vs "1.0" for 1.0), and plain objects order integer-like
 * keys first (pass a `Map` as `params`/`extraParams` to keep another order).
 *
 * @module svc-rest
 */

/** The four actions, in the order `sync` sends them. */
export const ACTIONS = Object.freeze(["create", "read", "update", "destroy"]);

/** The action → HTTP method map that `actionMethods` is merged over. */
export const DEFAULT_ACTION_METHODS = Object.freeze({
  create: "POST",
  read: "GET",
  update: "PUT",
  destroy: "DELETE",
});

/** The request and response header that carries the REST nonce. */
export const NONCE_HEADER = "X-SVC-Nonce";

/** The error code that makes `RestClient` fetch a fresh nonce and retry once. */
export const INVALID_NONCE_CODE = "rest_cookie_invalid_nonce";

/** The query parameter of the grouper's direction in `simpleGroupMode`. */
export const GROUP_DIRECTION_PARAM = "groupDir";

/** The default `timeout` in seconds (Ext JS's proxy waits 30 s too). */
export const DEFAULT_TIMEOUT = 30;
/** How many records' ETags a proxy keeps (for `conditional`). */
export const ETAGS_MAX = 4096;

/** The error code of a request that got no answer within `timeout`. */
export const TIMEOUT_CODE = "timeout";

/** The header of the key each write carries (IETF draft-ietf-httpapi-idempotency-key-header). */
export const IDEMPOTENCY_HEADER = "Idempotency-Key";
/** Retries of one request after a 429 or 503 answer or a broken connection (default). */
export const DEFAULT_MAX_RETRIES = 2;
/** The longest pause in seconds before a retry, whatever `Retry-After` asks (default). */
export const DEFAULT_MAX_RETRY_DELAY = 30;

/** The batch route under the REST root. */
export const BATCH_ROUTE = "batch/v1";

/** The default REST URL prefix: a proxy URL holding it tells the root without `root`. */
export const DEFAULT_PREFIX = "/svc-json/";

/** The response headers with the collection's number of records and of pages. */
export const TOTAL_HEADER = "X-SVC-Total";
export const TOTAL_PAGES_HEADER = "X-SVC-TotalPages";

const SORTER_KEYS = new Set(["property", "direction"]);
const FILTER_KEYS = new Set(["property", "value", "operator"]);
const OVERRIDDEN_METHODS = new Set(["PUT", "PATCH", "DELETE"]);
const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const RETRIED_STATUSES = new Set([429, 503]);
// An HTTP date with a zone (IMF-fixdate or RFC 2822): `Date.parse` alone would also read
// "1.5" as a date.
const HTTP_DATE = /^(?:[A-Za-z]{3}, *)?\d{1,2} [A-Za-z]{3} \d{4} \d{2}:\d{2}(?::\d{2})? (?:GMT|UTC?|[+-]\d{4})$/;

/**
 * @typedef {string | {property: string, direction?: string | null}} SorterSpec
 *   A sorter or grouper: a property name (direction "ASC") or an object with `property`
 *   (required) and `direction` (null/undefined means "ASC").
 */

/**
 * @typedef {{property: string, value?: *, operator?: string | null}} FilterSpec
 *   A filter: `property` (required), `value` (undefined means null), `operator` (left out
 *   when null/undefined).
 */

/**
 * @typedef {object} Operation
 * @property {"create"|"read"|"update"|"destroy"} action
 * @property {Array<*>} [records] The records written; the first one's id goes in the URL.
 * @property {*} [id] The id of a read when there are no records.
 * @property {Object<string, *> | Map<string, *>} [params] Extra query parameters.
 * @property {*} [page]
 * @property {*} [start]
 * @property {*} [limit]
 * @property {SorterSpec[] | SorterSpec} [sorters]
 * @property {FilterSpec[] | FilterSpec} [filters]
 * @property {SorterSpec} [grouper]
 */

/**
 * True when `id` is a valid id: truthy or the number 0, never a boolean.
 * @param {*} id
 * @returns {boolean}
 */
export function isValidId(id) {
  return typeof id !== "boolean" && (Boolean(id) || id === 0);
}

const isNil = (value) => value === null || value === undefined;

const isPlainObject = (value) =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Map);

/**
 * The id of a record: `record.get(idProperty)` for a Map, else `record[idProperty]`.
 * @param {*} record
 * @param {string} idProperty
 * @returns {*}
 */
export function recordId(record, idProperty) {
  if (isNil(record)) return undefined;
  return record instanceof Map ? record.get(idProperty) : record[idProperty];
}

/**
 * The id of an operation: its first record's id when it has records, else its `id`.
 * @param {Operation} operation
 * @param {string} idProperty
 * @returns {*}
 */
export function operationId(operation, idProperty) {
  const records = operation.records;
  if (records && records.length) return recordId(records[0], idProperty);
  return operation.id;
}

function checkOperation(operation) {
  if (!operation || !ACTIONS.includes(operation.action)) {
    const action = operation ? operation.action : operation;
    throw new TypeError(`unknown action ${JSON.stringify(action)}: expected one of ${ACTIONS.join(", ")}`);
  }
}

function splitUrl(url) {
  let rest = url;
  let query = null;
  let fragment = null;
  const hash = rest.indexOf("#");
  if (hash >= 0) {
    fragment = rest.slice(hash + 1);
    rest = rest.slice(0, hash);
  }
  const mark = rest.indexOf("?");
  if (mark >= 0) {
    query = rest.slice(mark + 1);
    rest = rest.slice(0, mark);
  }
  return [rest, query, fragment];
}

function joinUrl(path, query, params, fragment) {
  const encoded = [...params]
    .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`)
    .join("&");
  if (query === null) {
    query = encoded || null;
  } else if (encoded) {
    query = query && !query.endsWith("&") ? `${query}&${encoded}` : query + encoded;
  }
  const url = query === null ? path : `${path}?${query}`;
  return fragment === null ? url : `${url}#${fragment}`;
}

function checkKeys(kind, spec, allowed) {
  const unknown = Object.keys(spec).filter((key) => !allowed.has(key)).sort();
  if (unknown.length) throw new TypeError(`${kind} has unknown keys: ${unknown.join(", ")}`);
  if (typeof spec.property !== "string" || !spec.property) {
    throw new TypeError(`${kind} needs a non-empty string 'property', got ${JSON.stringify(spec.property)}`);
  }
}

/**
 * `{property, direction}` of a sorter or grouper (see {@link SorterSpec}).
 * @param {SorterSpec} spec
 * @param {string} [kind]
 * @returns {{property: string, direction: string}}
 */
export function normalizeSorter(spec, kind = "sorter") {
  if (typeof spec === "string") spec = { property: spec };
  if (!isPlainObject(spec)) throw new TypeError(`a ${kind} is a property name or an object`);
  checkKeys(kind, spec, SORTER_KEYS);
  const direction = isNil(spec.direction) ? "ASC" : spec.direction;
  if (typeof direction !== "string") throw new TypeError(`a ${kind} direction is a string`);
  return { property: spec.property, direction };
}

/**
 * `{property, value}` plus `operator` of a filter (see {@link FilterSpec}).
 * @param {FilterSpec} spec
 * @returns {{property: string, value: *, operator?: string}}
 */
export function normalizeFilter(spec) {
  if (!isPlainObject(spec)) throw new TypeError("a filter is an object");
  checkKeys("filter", spec, FILTER_KEYS);
  const result = { property: spec.property, value: spec.value === undefined ? null : spec.value };
  if (!isNil(spec.operator)) {
    if (typeof spec.operator !== "string") throw new TypeError("a filter operator is a string");
    result.operator = spec.operator;
  }
  return result;
}

function asList(specs, kind) {
  if (isNil(specs)) return [];
  if (typeof specs === "string" || isPlainObject(specs)) return [specs];
  if (typeof specs[Symbol.iterator] !== "function") throw new TypeError(`${kind} must be a list`);
  return Array.from(specs);
}

function entriesOf(mapping) {
  if (isNil(mapping)) return [];
  return mapping instanceof Map ? [...mapping] : Object.entries(mapping);
}

function put(query, name, value) {
  if (name && !isNil(value)) query.set(name, String(value));
}

/**
 * The client proxy: HTTP method and URL of an operation, with the rules of Ext JS's
 * `Ext.data.proxy.Rest` (identical to the Python `RestProxy`).
 */
export class RestProxy {
  /**
   * @param {string} url The collection URL (absolute or relative).
   * @param {object} [options]
   * @param {boolean} [options.appendId=true] Put a valid id into the path.
   * @param {string|null} [options.format] Extension added to the path (empty: none).
   * @param {boolean} [options.batchActions=false] One request per action for all its records.
   * @param {Object<string, string>} [options.actionMethods] Merged over {@link DEFAULT_ACTION_METHODS}.
   * @param {boolean} [options.noCache=true] Add `<cacheString>=<clock()>`.
   * @param {string|null} [options.cacheString="_dc"]
   * @param {string|null} [options.pageParam="page"] A parameter name set to null is not sent.
   * @param {string|null} [options.startParam="start"]
   * @param {string|null} [options.limitParam="limit"]
   * @param {string|null} [options.sortParam="sort"]
   * @param {string|null} [options.filterParam="filter"]
   * @param {string|null} [options.groupParam="group"]
   * @param {string|null} [options.directionParam="dir"]
   * @param {boolean} [options.simpleSortMode=false] `sort=<property>&dir=<direction>` of the first sorter.
   * @param {boolean} [options.simpleGroupMode=false] `group=<property>&groupDir=<direction>`.
   * @param {string|null} [options.idParam="id"] The id query parameter.
   * @param {string} [options.idProperty="id"] The records' id key.
   * @param {Object<string, *> | Map<string, *>} [options.extraParams] Sent with every request.
   * @param {() => number} [options.clock] Milliseconds since the epoch (default `Date.now`).
   * @param {number|null} [options.timeout=30] Seconds to wait for each answer (null: forever);
   *   a request without an answer in time throws {@link ProxyError} `timeout` (status 0).
   * @param {Object<string, string>} [options.headers] Sent on every request of the proxy.
   * @param {Object<string, string>} [options.api] A URL per action, as Ext JS's `api` config.
   * @param {(error: ProxyError, operation: Operation|null) => void} [options.onException]
   *   Called once for each {@link ProxyError} the proxy throws.
   * @param {RestClient} [options.client] Sends the requests (default: a new `RestClient`).
   * @param {string|null} [options.root] The REST root of `sync(..., {batch: "server"})`
   *   (default: the URL up to `/svc-json/`).
   * @param {boolean} [options.conditional=false] Remember the `ETag` of each record read and
   *   send it as `If-Match` on update and destroy: a record changed meanwhile throws
   *   {@link ProxyError} `rest_precondition_failed` (412) instead of being overwritten.
   * @param {number} [options.maxRetries=2] Retries of one request after a 429 or 503 answer,
   *   or a broken connection of a read or keyed write (0: none); see {@link RestClient#retryDelay}.
   * @param {number} [options.maxRetryDelay=30] The longest pause in seconds before a retry.
   * @param {boolean} [options.idempotencyKeys=true] Send a fresh `Idempotency-Key` with each
   *   write (POST, PUT, PATCH, DELETE), the same one on its retries (false: none).
   */
  constructor(
    url,
    {
      appendId = true,
      format = null,
      batchActions = false,
      actionMethods = null,
      noCache = true,
      cacheString = "_dc",
      pageParam = "page",
      startParam = "start",
      limitParam = "limit",
      sortParam = "sort",
      filterParam = "filter",
      groupParam = "group",
      directionParam = "dir",
      simpleSortMode = false,
      simpleGroupMode = false,
      idParam = "id",
      idProperty = "id",
      extraParams = null,
      clock = null,
      timeout = DEFAULT_TIMEOUT,
      headers = null,
      api = null,
      onException = null,
      client = null,
      root = null,
      conditional = false,
      maxRetries = DEFAULT_MAX_RETRIES,
      maxRetryDelay = DEFAULT_MAX_RETRY_DELAY,
      idempotencyKeys = true,
    } = {},
  ) {
    checkRetryOptions(maxRetries, maxRetryDelay);
    const methods = { ...DEFAULT_ACTION_METHODS };
    for (const [action, method] of entriesOf(actionMethods)) {
      if (!ACTIONS.includes(action)) throw new TypeError(`actionMethods has an unknown action: ${action}`);
      methods[action] = method;
    }
    const urls = {};
    for (const [action, actionUrl] of entriesOf(api)) {
      if (!ACTIONS.includes(action)) throw new TypeError(`api has an unknown action: ${action}`);
      if (actionUrl) urls[action] = String(actionUrl);
    }
    this.url = url;
    this.appendId = appendId;
    this.format = format;
    this.batchActions = batchActions;
    this.actionMethods = methods;
    this.noCache = noCache;
    this.cacheString = cacheString;
    this.pageParam = pageParam;
    this.startParam = startParam;
    this.limitParam = limitParam;
    this.sortParam = sortParam;
    this.filterParam = filterParam;
    this.groupParam = groupParam;
    this.directionParam = directionParam;
    this.simpleSortMode = simpleSortMode;
    this.simpleGroupMode = simpleGroupMode;
    this.idParam = idParam;
    this.idProperty = idProperty;
    this.extraParams = new Map(entriesOf(extraParams));
    this.clock = clock ?? (() => Date.now());
    this.timeout = timeout;
    this.headers = Object.fromEntries(entriesOf(headers));
    this.api = urls;
    this.onException = onException;
    this.root = root;
    this.clientImpl = client;
    this.conditional = conditional;
    this.maxRetries = maxRetries;
    this.maxRetryDelay = maxRetryDelay;
    this.idempotencyKeys = idempotencyKeys;
    /** Record id (as a string) → the `ETag` of its last answer (the oldest go first past 4,096). */
    this.etags = new Map();
  }

  /**
   * The `If-Match` value of an operation: with `conditional`, the `ETag` last read for the
   * one record an update or destroy names; else null.
   * @param {Operation} operation
   * @returns {string|null}
   */
  ifMatch(operation) {
    if (!this.conditional || (operation.action !== "update" && operation.action !== "destroy")) return null;
    if ((operation.records ?? []).length > 1) return null;
    const id = operationId(operation, this.idProperty);
    return id === null || id === undefined ? null : (this.etags.get(String(id)) ?? null);
  }

  /**
   * Keep the `ETag` of an answer about one record (a read of an id, a create, an update);
   * a destroy forgets it.
   * @param {Operation} operation
   * @param {{get(name: string): string|null}} headers
   * @param {*} data
   */
  rememberEtag(operation, headers, data) {
    if (operation.action === "destroy") {
      this.etags.delete(String(operationId(operation, this.idProperty)));
      return;
    }
    const tag = headers.get("ETag");
    if (!tag || data === null || typeof data !== "object" || Array.isArray(data)) return;
    const id = data[this.idProperty];
    if (id === null || id === undefined) return;
    this.etags.delete(String(id));
    if (this.etags.size >= ETAGS_MAX) this.etags.delete(this.etags.keys().next().value);
    this.etags.set(String(id), tag);
  }

  /**
   * The `RestClient` that sends the proxy's requests: the one given, else one made on first use.
   * @returns {RestClient}
   */
  get client() {
    this.clientImpl ??= new RestClient();
    return this.clientImpl;
  }

  /**
   * The URL of an action: its `api` URL when set, else `url`.
   * @param {string} action
   * @returns {string}
   */
  actionUrl(action) {
    return this.api[action] || this.url;
  }

  /**
   * The HTTP method of an operation: `actionMethods[operation.action]`. Override it in a
   * subclass to choose methods another way (as Ext JS's `getMethod`).
   * @param {Operation} operation
   * @returns {string}
   */
  getMethod(operation) {
    checkOperation(operation);
    return this.actionMethods[operation.action];
  }

  /**
   * The URL of an operation: the valid id (percent-encoded) and the format inserted into the
   * path before any query string and fragment, then {@link RestProxy#queryParams}.
   * @param {Operation} operation
   * @returns {string}
   */
  buildUrl(operation) {
    return this.#buildUrl(operation, true);
  }

  #buildUrl(operation, cache) {
    checkOperation(operation);
    let [path, query, fragment] = splitUrl(this.actionUrl(operation.action));
    const id = operationId(operation, this.idProperty);
    if (this.appendId && isValidId(id)) {
      if (!path.endsWith("/")) path += "/";
      path += encodeURIComponent(String(id));
    }
    if (this.format) {
      if (!path.endsWith(".")) path += ".";
      path += this.format;
    }
    const params = this.queryParams(operation);
    if (!cache && this.noCache && this.cacheString) params.delete(this.cacheString);
    return joinUrl(path, query, params, fragment);
  }

  /**
   * The query parameters `buildUrl` appends, in order: cache buster, extra params merged with
   * the operation's params (operation values win, a key keeps its first position; the id
   * parameter dropped when the id is in the path, set for a read whose valid id is not), page,
   * start, limit, group (+ groupDir), sort, dir, filter. Values are `String(value)`; null or
   * undefined values and null/empty parameter names send nothing.
   * @param {Operation} operation
   * @returns {Map<string, string>}
   */
  queryParams(operation) {
    checkOperation(operation);
    const query = new Map();
    if (this.noCache) put(query, this.cacheString, this.clock());
    for (const [name, value] of this.#mergedParams(operation)) put(query, name, value);
    put(query, this.pageParam, operation.page);
    put(query, this.startParam, operation.start);
    put(query, this.limitParam, operation.limit);
    this.#putGrouping(query, operation);
    return query;
  }

  #mergedParams(operation) {
    const merged = new Map([...this.extraParams, ...entriesOf(operation.params)]);
    if (this.idParam) {
      const id = operationId(operation, this.idProperty);
      if (this.appendId && isValidId(id)) {
        merged.delete(this.idParam);
      } else if (operation.action === "read" && isValidId(id)) {
        merged.set(this.idParam, id);
      }
    }
    return merged;
  }

  #putGrouping(query, operation) {
    const grouper = isNil(operation.grouper) ? null : normalizeSorter(operation.grouper, "grouper");
    if (grouper !== null && this.groupParam) {
      if (this.simpleGroupMode) {
        put(query, this.groupParam, grouper.property);
        put(query, GROUP_DIRECTION_PARAM, grouper.direction);
      } else {
        put(query, this.groupParam, JSON.stringify([grouper]));
      }
    }
    const sorters = asList(operation.sorters, "sorters").map((spec) => normalizeSorter(spec));
    if (sorters.length && this.sortParam) {
      if (this.simpleSortMode) {
        put(query, this.sortParam, sorters[0].property);
        put(query, this.directionParam, sorters[0].direction);
      } else {
        put(query, this.sortParam, JSON.stringify(sorters));
      }
    }
    const filters = asList(operation.filters, "filters").map(normalizeFilter);
    if (filters.length) put(query, this.filterParam, JSON.stringify(filters));
  }

  /**
   * The JSON body of an operation, or undefined when it has none: create/update send their
   * records (one as itself, several as a list); a destroy of several records sends the list.
   * @param {Operation} operation
   * @returns {*}
   */
  requestBody(operation) {
    checkOperation(operation);
    const records = Array.from(operation.records ?? []);
    if ((operation.action === "create" || operation.action === "update") && records.length) {
      return records.length === 1 ? records[0] : records;
    }
    if (operation.action === "destroy" && records.length > 1) return records;
    return undefined;
  }

  /**
   * The operations that write `records`: one for all with `batchActions`, else one each.
   * @param {"create"|"update"|"destroy"} action
   * @param {Array<*>} records
   * @returns {Operation[]}
   */
  operationsFor(action, records) {
    if (!records.length) return [];
    if (this.batchActions) return [{ action, records: [...records] }];
    return records.map((record) => ({ action, records: [record] }));
  }

  // -- sending (through `client`) ----------------------------------------------------------

  /** The `headers`, `timeout` and retry options of every request of the proxy. */
  get requestOptions() {
    return {
      headers: this.headers,
      timeout: this.timeout,
      maxRetries: this.maxRetries,
      maxRetryDelay: this.maxRetryDelay,
      idempotencyKeys: this.idempotencyKeys,
    };
  }

  async #reported(operation, run) {
    try {
      return await run();
    } catch (error) {
      if (error instanceof ProxyError && this.onException) this.onException(error, operation);
      throw error;
    }
  }

  async #execute(operation) {
    const tag = this.ifMatch(operation);
    const options = this.requestOptions;
    const headers = tag === null ? options.headers : { ...options.headers, "If-Match": tag };
    const answer = await this.client.request(this.getMethod(operation), this.buildUrl(operation), {
      body: this.requestBody(operation),
      ...options,
      headers,
    });
    this.rememberEtag(operation, answer.headers, answer.data);
    return answer;
  }

  /**
   * Send one operation and return the whole response (`data`, `status`, `headers`, `response`).
   * @param {Operation} operation
   * @returns {Promise<RestResponse>}
   */
  execute(operation) {
    return this.#reported(operation, () => this.#execute(operation));
  }

  /**
   * Send one operation and return the decoded JSON.
   * @param {Operation} operation
   * @returns {Promise<*>}
   */
  async send(operation) {
    const { data } = await this.execute(operation);
    return data;
  }

  async #save(action, records) {
    const saved = [];
    for (const operation of this.operationsFor(action, records)) {
      const result = await this.send(operation);
      if (operation.records.length > 1 && Array.isArray(result)) saved.push(...result);
      else saved.push(result);
    }
    return saved;
  }

  /**
   * Create records; returns the saved records as the server returned them.
   * @param {...*} records
   * @returns {Promise<Array<*>>}
   */
  create(...records) {
    return this.#save("create", records);
  }

  /**
   * Read the collection, or one record when `id` is valid; returns the decoded JSON.
   * @param {*} [id]
   * @param {Object<string, *>} [params] Extra query parameters.
   * @returns {Promise<*>}
   */
  read(id = undefined, params = undefined) {
    return this.send({ action: "read", id, params });
  }

  /**
   * Update records; returns the saved records as the server returned them.
   * @param {...*} records
   * @returns {Promise<Array<*>>}
   */
  update(...records) {
    return this.#save("update", records);
  }

  /**
   * Destroy records.
   * @param {...*} records
   * @returns {Promise<void>}
   */
  async destroy(...records) {
    for (const operation of this.operationsFor("destroy", records)) await this.send(operation);
  }

  #page(operation, url) {
    return this.#reported(operation, async () => {
      const answer =
        url === null
          ? await this.#execute(operation)
          : await this.client.request("GET", url, this.requestOptions);
      return resultSet(answer);
    });
  }

  /**
   * Read, as a result set: `records` (always an array), `total` and `totalPages` (from
   * `X-SVC-Total` / `X-SVC-TotalPages` of any collection, else WordPress's `X-WP-Total` /
   * `X-WP-TotalPages`; null when absent), `nextUrl` (from `Link rel="next"`,
   * null on the last page) and the fetch `response`.
   * @param {*} [id]
   * @param {Object<string, *>} [params]
   * @returns {Promise<ResultSet>}
   */
  readResult(id = undefined, params = undefined) {
    return this.#page({ action: "read", id, params }, null);
  }

  /**
   * Every page of the collection: reads with `params`, then follows `Link rel="next"` until
   * a page has none. A next link back to a page already read throws `paging_loop`.
   * @param {Object<string, *>} [params]
   * @returns {AsyncGenerator<ResultSet, void, undefined>}
   */
  async *iterPages(params = undefined) {
    const operation = { action: "read", params };
    const followed = new Set();
    let page = await this.#page(operation, null);
    yield page;
    while (page.nextUrl !== null) {
      // A next link back to a page already read would page forever.
      if (followed.has(page.nextUrl)) {
        const error = new ProxyError(
          "paging_loop",
          `The next page link leads back to a page already read: ${page.nextUrl}`,
          page.response.status,
        );
        this.onException?.(error, operation);
        throw error;
      }
      followed.add(page.nextUrl);
      page = await this.#page(operation, page.nextUrl);
      yield page;
    }
  }

  /**
   * Create, then update, then destroy; returns `{create: [...], update: [...]}`. The first
   * error stops the sequence and throws. With `batch: "server"` all the records go in one
   * `POST {root}batch/v1` request and each answer is mapped back to its record; the first
   * failed entry throws its {@link ProxyError} (the server wrote nothing when `atomic`).
   * @param {{create?: Array<*>, update?: Array<*>, destroy?: Array<*>}} [changes]
   * @param {{batch?: "server"|null, atomic?: boolean}} [options]
   * @returns {Promise<{create: Array<*>, update: Array<*>}>}
   */
  async sync({ create = [], update = [], destroy = [] } = {}, { batch = null, atomic = false } = {}) {
    if (batch === "server") return this.#serverBatch([...create], [...update], [...destroy], atomic);
    if (batch !== null && batch !== undefined) {
      throw new TypeError(`unknown batch mode ${JSON.stringify(batch)}: expected null or "server"`);
    }
    if (atomic) throw new TypeError('atomic needs batch: "server"');
    const created = await this.#save("create", [...create]);
    const updated = await this.#save("update", [...update]);
    await this.destroy(...destroy);
    return { create: created, update: updated };
  }

  /**
   * The REST root the batch route is under: `root` when given, else the URL up to `/svc-json/`.
   * @returns {string}
   */
  restRoot() {
    const root = this.root || rootOf(this.url);
    if (!root) throw new TypeError(`cannot tell the REST root of ${JSON.stringify(this.url)}: pass root`);
    return root.endsWith("/") ? root : `${root}/`;
  }

  /**
   * The one batch request that runs `operations` (no network): `{method, url, body}`, each
   * operation an entry `{method, path, body}` (its URL after the root, without the cache
   * buster; no `body` when it has none).
   * @param {Operation[]} operations
   * @param {{atomic?: boolean}} [options]
   * @returns {{method: "POST", url: string, body: {validation: string, requests: Array<object>}}}
   */
  batchRequest(operations, { atomic = false } = {}) {
    const root = this.restRoot();
    const requests = operations.map((operation) => {
      const entry = { method: this.getMethod(operation), path: routePath(this.#buildUrl(operation, false), root) };
      const body = this.requestBody(operation);
      if (body !== undefined) entry.body = body;
      const tag = this.ifMatch(operation);
      if (tag !== null) entry.headers = { "If-Match": tag };
      return entry;
    });
    return {
      method: "POST",
      url: root + BATCH_ROUTE,
      body: { validation: atomic ? "atomic" : "normal", requests },
    };
  }

  async #serverBatch(create, update, destroy, atomic) {
    const operations = [];
    for (const [action, records] of [["create", create], ["update", update], ["destroy", destroy]]) {
      for (const record of records) operations.push({ action, records: [record] });
    }
    const result = { create: [], update: [] };
    if (!operations.length) return result;
    const { slots, failure } = await this.#reported(null, async () => {
      const { method, url, body } = this.batchRequest(operations, { atomic });
      const answer = await this.client.request(method, url, { body, ...this.requestOptions });
      return batchSlots(answer.data, operations, answer.status);
    });
    if (failure) {
      this.onException?.(failure.error, failure.operation);
      throw failure.error;
    }
    slots.forEach((slot, index) => {
      const { action } = operations[index];
      const slotHeaders = new Map(Object.entries(slot.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]));
      this.rememberEtag(operations[index], { get: (name) => slotHeaders.get(name.toLowerCase()) ?? null }, slot.body);
      if (action in result) result[action].push(slot.body ?? null);
    });
    return result;
  }
}

/**
 * @typedef {object} ResultSet A page read by `readResult` / `iterPages`.
 * @property {Array<*>} records
 * @property {number|null} total From `X-SVC-Total` (else WordPress's `X-WP-Total`).
 * @property {number|null} totalPages From `X-SVC-TotalPages` (else `X-WP-TotalPages`).
 * @property {string|null} nextUrl From `Link: <…>; rel="next"`.
 * @property {Response} response The fetch response (its body already read).
 */

function headerInt(headers, name) {
  const value = (headers.get(name) ?? "").trim();
  return /^[0-9]{1,19}$/.test(value) ? Number(value) : null;
}

// svcrest's paging header, else WordPress's name for it (a WordPress site sends only those).
function totalOf(headers, name, wordpressName) {
  return headerInt(headers, name) ?? headerInt(headers, wordpressName);
}

/**
 * The URL of the `Link` header's `rel="next"` entry, resolved against `base`; null if none.
 * @param {string|null} header
 * @param {string} [base]
 * @returns {string|null}
 */
export function nextLink(header, base = undefined) {
  for (const match of (header ?? "").matchAll(/<([^>]*)>([^,]*)/g)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;]+))/i.exec(match[2]);
    const rels = rel ? (rel[1] ?? rel[2]).toLowerCase().split(/\s+/) : [];
    if (rels.includes("next")) return base ? new URL(match[1], base).href : match[1];
  }
  return null;
}

function resultSet({ data, headers, response }) {
  let records = [];
  if (Array.isArray(data)) records = data;
  else if (data !== null && data !== undefined) records = [data];
  return {
    records,
    total: totalOf(headers, TOTAL_HEADER, "X-WP-Total"),
    totalPages: totalOf(headers, TOTAL_PAGES_HEADER, "X-WP-TotalPages"),
    nextUrl: nextLink(headers.get("Link"), response?.url || undefined),
    response,
  };
}

function rootOf(url) {
  const [path] = splitUrl(url);
  const index = path.indexOf(DEFAULT_PREFIX);
  return index < 0 ? null : path.slice(0, index + DEFAULT_PREFIX.length);
}

function routePath(url, root) {
  if (!url.startsWith(root)) {
    throw new TypeError(`the URL ${JSON.stringify(url)} is not under the REST root ${JSON.stringify(root)}`);
  }
  const [rest, query] = splitUrl(url.slice(root.length));
  const path = `/${rest.replace(/^\/+/, "")}`;
  return query ? `${path}?${query}` : path;
}

function slotError(slot) {
  return errorFromBody(slot.body, slot.status, `HTTP ${slot.status}`);
}

function batchSlots(answer, operations, status) {
  const slots = answer && typeof answer === "object" ? answer.responses : undefined;
  const wellFormed =
    Array.isArray(slots) &&
    slots.length === operations.length &&
    slots.every((slot) => slot && typeof slot === "object" && Number.isInteger(slot.status));
  if (!wellFormed) {
    throw new ProxyError("invalid_batch_response", "The batch answer is not a list of responses.", status);
  }
  const index = slots.findIndex((slot) => slot.status >= 400);
  const failure = index < 0 ? null : { error: slotError(slots[index]), operation: operations[index] };
  return { slots, failure };
}

/** An error response (HTTP status >= 400): `code`, `message`, `status`, `data`. */
export class ProxyError extends Error {
  /**
   * @param {string} code The body's `code`, or "http_error" for a body without one.
   * @param {string} message The body's `message`, or the status text.
   * @param {number} status The HTTP status.
   * @param {*} [data] The body's `data`.
   * @param {{cause?: *}} [options] The error's `cause`.
   */
  constructor(code, message, status, data = null, options = undefined) {
    super(message, options);
    this.name = "ProxyError";
    this.code = code;
    this.status = status;
    this.data = data;
  }
}

function readSettings() {
  const settings = typeof window !== "undefined" ? window.svcApiSettings : undefined;
  return settings && typeof settings === "object" ? settings : {};
}

function joinRoute(root, route) {
  if (!root) return route;
  return (root.endsWith("/") ? root : `${root}/`) + route.replace(/^\/+/, "");
}

function errorFrom(response, data) {
  return errorFromBody(data, response.status, response.statusText);
}

/** The ProxyError of an error answer's body; `fallback` when it has no string `message`. */
function errorFromBody(body, status, fallback) {
  if (body && typeof body === "object" && !Array.isArray(body) && typeof body.code === "string") {
    const message = typeof body.message === "string" ? body.message : fallback;
    return new ProxyError(body.code, message, status, body.data ?? null);
  }
  return new ProxyError("http_error", fallback, status);
}

async function readJson(response) {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    if (response.status >= 400) return undefined;
    throw new ProxyError("invalid_json", "The response body is not valid JSON.", response.status);
  }
}

function checkRetryOptions(maxRetries, maxRetryDelay) {
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new TypeError(`maxRetries is a whole number >= 0, got ${String(maxRetries)}`);
  }
  if (typeof maxRetryDelay !== "number" || !Number.isFinite(maxRetryDelay) || maxRetryDelay < 0) {
    throw new TypeError(`maxRetryDelay is a number of seconds >= 0, got ${String(maxRetryDelay)}`);
  }
}

function hasHeader(headers, name) {
  const wanted = name.toLowerCase();
  return Object.keys(headers).some((key) => key.toLowerCase() === wanted);
}

/**
 * A fresh idempotency key: a random (version 4) UUID as a structured-field string, from
 * `crypto.randomUUID` where the page has it (secure contexts), else `crypto.getRandomValues`.
 */
function newIdempotencyKey() {
  const cryptoImpl = globalThis.crypto;
  if (typeof cryptoImpl?.randomUUID === "function") return `"${cryptoImpl.randomUUID()}"`;
  const bytes = new Uint8Array(16);
  if (typeof cryptoImpl?.getRandomValues === "function") cryptoImpl.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i += 1) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
  return `"${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}"`;
}

/** `Retry-After` in seconds from now (delay-seconds or an HTTP date), null when absent or unreadable. */
function retryAfterSeconds(value) {
  const text = (value ?? "").trim();
  if (/^[0-9]+$/.test(text)) return Number(text);
  if (!HTTP_DATE.test(text)) return null;
  const when = Date.parse(text);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}

const realSleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

/**
 * @typedef {object} RestResponse
 * @property {*} data The decoded JSON body (null when empty).
 * @property {number} status
 * @property {Headers} headers Includes `X-SVC-Total` / `X-SVC-TotalPages` for lists.
 * @property {Response} response The fetch response (its body already read).
 */

/**
 * Sends REST requests with `fetch`: cookie credentials, the nonce in `X-SVC-Nonce` (from
 * `window.svcApiSettings` unless given), a fresh nonce adopted from every response's
 * `X-SVC-Nonce` header, and one nonce refresh plus one retry on `rest_cookie_invalid_nonce`.
 *
 * Each write (POST, PUT, PATCH, DELETE) carries a fresh `Idempotency-Key` unless its headers
 * have one or `idempotencyKeys` is false; a 429 or 503 answer, or a broken connection of a
 * read or keyed write, sends the same request again (the same key) up to `maxRetries` times,
 * after `Retry-After` or a backoff, jittered and at most `maxRetryDelay` seconds (see
 * {@link RestClient#retryDelay}).
 */
export class RestClient {
  /**
   * @param {object} [options]
   * @param {string} [options.root] The REST root (when undefined: `svcApiSettings.root`), used
   *   by `proxy()`.
   * @param {string|null} [options.nonce] The nonce (when undefined: `svcApiSettings.nonce`;
   *   null: none).
   * @param {string} [options.nonceUrl] Where to fetch a fresh nonce (default `/auth/nonce` at
   *   the origin of `root`, or of the page when `root` is relative).
   * @param {boolean} [options.methodOverride=false] Send PUT/PATCH/DELETE as POST with
   *   `X-HTTP-Method-Override`.
   * @param {RequestCredentials} [options.credentials="same-origin"]
   * @param {typeof fetch} [options.fetch] The fetch function (default `globalThis.fetch`).
   * @param {(seconds: number) => Promise<void>} [options.sleep] Waits before a retry (default:
   *   a `setTimeout` of that many seconds).
   * @param {typeof EventSource} [options.eventSource] The `EventSource` constructor of the
   *   "sse" transport of {@link RestClient#subscribe} (default `globalThis.EventSource`).
   */
  constructor({ root, nonce, nonceUrl, methodOverride = false, credentials = "same-origin", fetch, sleep, eventSource } = {}) {
    const settings = readSettings();
    this.root = (root === undefined ? settings.root : root) ?? "";
    this.nonce = (nonce === undefined ? settings.nonce : nonce) ?? null;
    this.nonceUrl = nonceUrl ?? null;
    this.methodOverride = methodOverride;
    this.credentials = credentials;
    this.fetchImpl = fetch ?? null;
    this.sleep = sleep ?? realSleep;
    this.eventSourceImpl = eventSource ?? null;
  }

  /**
   * A `RestProxy` for a route under the root (`root` + `route`).
   * @param {string} route For example `"demo/v1/notes"`.
   * @param {object} [options] `RestProxy` options.
   * @returns {RestProxy}
   */
  proxy(route, options = {}) {
    return new RestProxy(joinRoute(this.root, route), { client: this, ...options });
  }

  /**
   * The URL a fresh nonce is fetched from.
   * @returns {string}
   */
  getNonceUrl() {
    if (this.nonceUrl) return this.nonceUrl;
    const base = /^[a-z][a-z0-9+.-]*:/i.test(this.root) ? this.root : globalThis.location?.href;
    return base ? new URL("/auth/nonce", base).href : "/auth/nonce";
  }

  /**
   * Seconds to wait before sending a request again after its `attempt`-th try (from 0), or
   * null to stop. `response` is the answer (null: the connection broke); `keyed` tells that
   * the request carries an `Idempotency-Key`.
   *
   * A 429 or 503 is retried after its `Retry-After` (seconds or an HTTP date), else after an
   * exponential backoff from 0.5 s; a broken connection only for a read or a keyed write (an
   * unkeyed write may have run: sending it again could run it twice). The pause is jittered
   * (up to a quarter more, so clients refused together do not come back together), never
   * longer than `maxRetryDelay`, and there are at most `maxRetries` retries.
   * @param {number} attempt
   * @param {{method: string, keyed: boolean, response: Response|null, maxRetries?: number,
   *   maxRetryDelay?: number}} request
   * @returns {number|null}
   */
  retryDelay(
    attempt,
    { method, keyed, response, maxRetries = DEFAULT_MAX_RETRIES, maxRetryDelay = DEFAULT_MAX_RETRY_DELAY },
  ) {
    if (!(attempt < maxRetries)) return null;
    let wait = null;
    if (response === null || response === undefined) {
      if (WRITES.has(method.toUpperCase()) && !keyed) return null;
    } else if (RETRIED_STATUSES.has(response.status)) {
      wait = retryAfterSeconds(response.headers.get("Retry-After"));
    } else {
      return null;
    }
    const base = wait === null ? 0.5 * 2 ** attempt : wait;
    return Math.min(base * (1 + Math.random() * 0.25), maxRetryDelay);
  }

  /**
   * Send one request with its idempotency key, again after a 429 or 503 answer or a broken
   * connection as {@link RestClient#retryDelay} decides; the last answer or error wins.
   */
  async #send(method, url, body, options) {
    const {
      headers = null,
      timeout = null,
      maxRetries = DEFAULT_MAX_RETRIES,
      maxRetryDelay = DEFAULT_MAX_RETRY_DELAY,
      idempotencyKeys = true,
      signal = null,
      cache = null,
    } = options;
    checkRetryOptions(maxRetries, maxRetryDelay);
    const verb = method.toUpperCase();
    const sentHeaders = Object.fromEntries(entriesOf(headers));
    if (idempotencyKeys && WRITES.has(verb) && !hasHeader(sentHeaders, IDEMPOTENCY_HEADER)) {
      sentHeaders[IDEMPOTENCY_HEADER] = newIdempotencyKey();
    }
    const keyed = hasHeader(sentHeaders, IDEMPOTENCY_HEADER);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const retry = { method: verb, keyed, maxRetries, maxRetryDelay };
    for (let attempt = 0; ; attempt += 1) {
      let answer = null;
      let delay;
      try {
        answer = await this.#fetch(verb, url, payload, sentHeaders, timeout, { signal, cache });
      } catch (error) {
        // fetch rejects with a TypeError when the connection fails (no answer).
        if (!(error instanceof TypeError)) throw error;
        delay = this.retryDelay(attempt, { ...retry, response: null });
        if (delay === null) throw error;
      }
      if (answer !== null) {
        delay = this.retryDelay(attempt, { ...retry, response: answer.response });
        if (delay === null) return answer;
      }
      await this.sleep(delay);
    }
  }

  /**
   * Send one request and read its JSON body, within `timeout` seconds when given; `signal`
   * (an AbortSignal) cancels it (the fetch rejects with its `AbortError`); `cache` is the
   * fetch's cache mode when given.
   */
  async #fetch(method, url, payload, headers, timeout, { signal = null, cache = null } = {}) {
    const sentHeaders = { Accept: "application/json", ...headers };
    if (this.nonce) sentHeaders[NONCE_HEADER] = this.nonce;
    let sent = method;
    if (this.methodOverride && OVERRIDDEN_METHODS.has(sent)) {
      sentHeaders["X-HTTP-Method-Override"] = sent;
      sent = "POST";
    }
    const init = { method: sent, headers: sentHeaders, credentials: this.credentials };
    if (cache) init.cache = cache;
    if (payload !== undefined) {
      sentHeaders["Content-Type"] = "application/json";
      init.body = payload;
    }
    const controller = isNil(timeout) ? null : new AbortController();
    if (controller) init.signal = controller.signal;
    const timer = controller ? setTimeout(() => controller.abort(), timeout * 1000) : null;
    if (signal) init.signal = controller ? AbortSignal.any([signal, controller.signal]) : signal;
    try {
      const fetchImpl = this.fetchImpl ?? globalThis.fetch;
      const response = await fetchImpl(url, init);
      const fresh = response.headers.get(NONCE_HEADER);
      if (fresh) this.nonce = fresh;
      return { response, data: await readJson(response) };
    } catch (error) {
      if (controller?.signal.aborted && !signal?.aborted) {
        throw new ProxyError(TIMEOUT_CODE, `No answer within ${timeout} seconds.`, 0, null, { cause: error });
      }
      throw error;
    } finally {
      if (timer !== null) clearTimeout(timer);
    }
  }

  /**
   * Fetch a fresh nonce from {@link RestClient#getNonceUrl} and keep it.
   * @param {{headers?: Object<string, string>, timeout?: number|null, maxRetries?: number,
   *   maxRetryDelay?: number}} [options] Extra request headers; seconds to wait (null:
   *   forever); the retry options of {@link RestClient#request}.
   * @returns {Promise<string>}
   */
  async refreshNonce(options = {}) {
    const { response, data } = await this.#send("GET", this.getNonceUrl(), undefined, options);
    if (response.status >= 400) throw errorFrom(response, data);
    const nonce = data && typeof data === "object" ? data.nonce : undefined;
    if (typeof nonce !== "string" || !nonce) {
      throw new ProxyError("invalid_nonce_response", "The nonce endpoint did not return a nonce.", response.status);
    }
    this.nonce = nonce;
    return nonce;
  }

  /**
   * Send one request; on `rest_cookie_invalid_nonce` refresh the nonce once and retry once
   * (with a fresh `Idempotency-Key`: the refused request ran nothing). A 429 or 503 answer is
   * retried as {@link RestClient#retryDelay} says. An error response (status >= 400) throws
   * {@link ProxyError}.
   * @param {string} method
   * @param {string} url
   * @param {{body?: *, headers?: Object<string, string>, timeout?: number|null,
   *   maxRetries?: number, maxRetryDelay?: number, idempotencyKeys?: boolean,
   *   signal?: AbortSignal|null, cache?: RequestCache|null}} [options]
   *   `body` is sent as JSON when not undefined; `headers` go on the request (and on a nonce
   *   refresh); `timeout` is in seconds (a request without an answer in time throws
   *   {@link ProxyError} `timeout`, status 0, and is not retried); `maxRetries` (default 2),
   *   `maxRetryDelay` (seconds, default 30) and `idempotencyKeys` (default true) as the
   *   {@link RestProxy} options of those names; `signal` (an AbortSignal) cancels the
   *   request (the promise rejects with the signal's `AbortError`); `cache` is the fetch's
   *   cache mode (a `RequestCache` such as "no-store"; default: the browser's).
   * @returns {Promise<RestResponse>}
   */
  async request(
    method,
    url,
    {
      body,
      headers = null,
      timeout = null,
      maxRetries = DEFAULT_MAX_RETRIES,
      maxRetryDelay = DEFAULT_MAX_RETRY_DELAY,
      idempotencyKeys = true,
      signal = null,
      cache = null,
    } = {},
  ) {
    const options = { headers, timeout, maxRetries, maxRetryDelay, idempotencyKeys, signal, cache };
    let { response, data } = await this.#send(method, url, body, options);
    if (response.status >= 400) {
      const error = errorFrom(response, data);
      if (error.code !== INVALID_NONCE_CODE) throw error;
      try {
        await this.refreshNonce(options);
      } catch (failure) {
        error.cause = failure;
        throw error;
      }
      ({ response, data } = await this.#send(method, url, body, options));
      if (response.status >= 400) throw errorFrom(response, data);
    }
    return { data, status: response.status, headers: response.headers, response };
  }

  /**
   * Send one operation of `proxy` (method, URL and body from the proxy) and return the whole
   * response: use it to read paging headers such as `X-SVC-Total`.
   * @param {RestProxy} proxy
   * @param {Operation} operation
   * @returns {Promise<RestResponse>}
   */
  execute(proxy, operation) {
    return this.request(proxy.getMethod(operation), proxy.buildUrl(operation), {
      body: proxy.requestBody(operation),
      ...proxy.requestOptions,
    });
  }

  /**
   * Send one operation of `proxy` and return the decoded JSON.
   * @param {RestProxy} proxy
   * @param {Operation} operation
   * @returns {Promise<*>}
   */
  async send(proxy, operation) {
    const { data } = await this.execute(proxy, operation);
    return data;
  }

  async #save(proxy, action, records) {
    const saved = [];
    for (const operation of proxy.operationsFor(action, records)) {
      const result = await this.send(proxy, operation);
      if (operation.records.length > 1 && Array.isArray(result)) saved.push(...result);
      else saved.push(result);
    }
    return saved;
  }

  /**
   * Create records; returns the saved records as the server returned them.
   * @param {RestProxy} proxy
   * @param {...*} records
   * @returns {Promise<Array<*>>}
   */
  create(proxy, ...records) {
    return this.#save(proxy, "create", records);
  }

  /**
   * Read the collection, or one record when `id` is valid.
   * @param {RestProxy} proxy
   * @param {*} [id]
   * @param {Object<string, *>} [params] Extra query parameters.
   * @returns {Promise<*>}
   */
  read(proxy, id = undefined, params = undefined) {
    return this.send(proxy, { action: "read", id, params });
  }

  /**
   * Update records; returns the saved records as the server returned them.
   * @param {RestProxy} proxy
   * @param {...*} records
   * @returns {Promise<Array<*>>}
   */
  update(proxy, ...records) {
    return this.#save(proxy, "update", records);
  }

  /**
   * Destroy records.
   * @param {RestProxy} proxy
   * @param {...*} records
   * @returns {Promise<void>}
   */
  async destroy(proxy, ...records) {
    for (const operation of proxy.operationsFor("destroy", records)) {
      await this.send(proxy, operation);
    }
  }

  /**
   * Follow the change feed of a collection: call `onEvent({id, event, data})` for each change
   * (`event` is "created", "updated" or "deleted"; `data` the item as a GET of the collection
   * shows it, `{id}` for a deletion; `id` the cursor just after it), in order, each once.
   *
   * The feed is read with the `transport` (see {@link CHANGE_TRANSPORTS}): "long-poll", the
   * default, is `GET <root><path>/changes?since=<cursor>&wait=<seconds>` with the nonce and
   * cookies of every request, on any server; "sse" one `EventSource` (Server-Sent Events, from
   * an ASGI server) with the nonce as `_wpnonce` in its URL, the cookies of the page's origin
   * (of any origin with `credentials: "include"`), and no other header; "auto" is "sse" where
   * the browser has `EventSource`. It starts after `since`, else at the end of the change log. A
   * broken connection, a time-out, a 429 or a 5xx answer is retried with the last cursor
   * after a jittered back-off (0.5 s doubling, at most `maxDelay` seconds), so no change is
   * lost or repeated; each failure is told to `onError(error, {retrying: true, delay})`. A
   * 410 `rest_changes_expired` (the cursor is older than the changes the site keeps: read
   * the collection again), a 401 or 403 (the session ended), any other error answer, or an
   * error thrown by `onEvent` ends the subscription and is told to
   * `onError(error, {retrying: false})`.
   * @param {string} path The collection's route under the root, e.g. "demo/v1/notes".
   * @param {(change: ChangeEvent) => void} onEvent
   * @param {SubscribeOptions} [options]
   * @returns {Unsubscribe} Call it to stop (an open request is aborted); its `cursor` is where
   *   the subscription would resume, its `done` a promise settled when it has ended.
   */
  subscribe(path, onEvent, options = {}) {
    if (typeof onEvent !== "function") throw new TypeError("onEvent is a function");
    const {
      since = null,
      wait = DEFAULT_CHANGES_WAIT,
      transport = "long-poll",
      maxDelay = DEFAULT_MAX_RETRY_DELAY,
      timeout = DEFAULT_TIMEOUT,
      headers = null,
      onError = null,
    } = options;
    const follow = CHANGE_TRANSPORTS[transport];
    if (!Object.hasOwn(CHANGE_TRANSPORTS, transport) || typeof follow !== "function") {
      throw new TypeError(`unknown transport ${JSON.stringify(transport)}: one of ${Object.keys(CHANGE_TRANSPORTS).join(", ")}`);
    }
    if (typeof wait !== "number" || !(wait > 0 && wait <= MAX_CHANGES_WAIT)) {
      throw new TypeError(`wait is seconds > 0 and <= ${MAX_CHANGES_WAIT}, got ${String(wait)}`);
    }
    if (typeof maxDelay !== "number" || !(maxDelay >= 0)) {
      throw new TypeError(`maxDelay is seconds >= 0, got ${String(maxDelay)}`);
    }
    const controller = new AbortController();
    const feed = {
      client: this,
      url: changesUrl(joinRoute(this.root, path)),
      cursor: since,
      wait,
      timeout,
      headers,
      signal: controller.signal,
      emit: onEvent,
      failures: 0,
      /** Tell onError of a failure; the pause before trying again, or null to stop. */
      failed(error) {
        this.failures += 1;
        const retrying = !this.signal.aborted && isTransient(error);
        const delay = retrying
          ? Math.min(0.5 * 2 ** (this.failures - 1), maxDelay) * (0.75 + Math.random() * 0.25)
          : null;
        if (onError) onError(error, retrying ? { retrying, delay } : { retrying });
        return delay;
      },
      /** Wait `seconds` (cut short by the unsubscription). */
      pause(seconds) {
        return Promise.race([this.client.sleep(seconds), aborted(this.signal)]);
      },
    };
    const done = follow(feed).catch((error) => {
      if (!controller.signal.aborted && onError) onError(error, { retrying: false });
    });
    const unsubscribe = () => controller.abort();
    Object.defineProperty(unsubscribe, "cursor", { get: () => feed.cursor });
    unsubscribe.done = done;
    return unsubscribe;
  }

  /**
   * Create, then update, then destroy; the first error stops and throws.
   * @param {RestProxy} proxy
   * @param {{create?: Array<*>, update?: Array<*>, destroy?: Array<*>}} changes
   * @returns {Promise<{create: Array<*>, update: Array<*>}>}
   */
  async sync(proxy, { create = [], update = [], destroy = [] } = {}) {
    const created = await this.#save(proxy, "create", Array.from(create));
    const updated = await this.#save(proxy, "update", Array.from(update));
    await this.destroy(proxy, ...destroy);
    return { create: created, update: updated };
  }
}

/** The longest `wait` of a change feed's long-poll, in seconds (the server's limit). */
export const MAX_CHANGES_WAIT = 30;
/** The `wait` each long-poll of {@link RestClient#subscribe} asks for, by default. */
export const DEFAULT_CHANGES_WAIT = 30;
/** The error code of a cursor older than the changes a site keeps. */
export const CHANGES_EXPIRED_CODE = "rest_changes_expired";

/** The feed URL of a collection URL: `/changes` added to its path, its query kept. */
export function changesUrl(collectionUrl) {
  const [path, query] = splitUrl(collectionUrl);
  return joinUrl(`${path.replace(/\/+$/, "")}/changes`, query, [], null);
}

/** Whether a failed poll is tried again: no answer (fetch's TypeError), a time-out, 429, 5xx. */
function isTransient(error) {
  if (error instanceof ProxyError) return error.status === 0 || error.status === 429 || error.status >= 500;
  return error instanceof TypeError;
}

/** A promise that settles (undefined) when `signal` aborts. */
function aborted(signal) {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(undefined);
    else signal.addEventListener("abort", () => resolve(undefined), { once: true });
  });
}

/** One long-poll of the feed from its cursor: `GET <feed>?since=<cursor>&wait=<wait>`. */
function pollOnce(feed, wait) {
  const params = feed.cursor === null ? [] : [["since", feed.cursor]];
  params.push(["wait", String(wait)]);
  const [path, query] = splitUrl(feed.url);
  return feed.client.request("GET", joinUrl(path, query, params, null), {
    headers: feed.headers,
    timeout: feed.timeout === null ? null : wait + feed.timeout,
    maxRetries: 0,
    signal: feed.signal,
    // Not "default": Chromium lets one request of a URL at a time into its cache, so two
    // tabs polling the same feed would wait for each other.
    cache: "no-store",
  });
}

/**
 * Hand out the changes of a long-poll's answer and move the cursor; false (the failure told)
 * when the answer is not a change feed's or the subscription ended meanwhile.
 */
function deliver(feed, answer) {
  const { changes, cursor } = answer.data ?? {};
  if (!Array.isArray(changes) || typeof cursor !== "string" || !cursor || changes.some((entry) => typeof entry?.id !== "string")) {
    feed.failed(new ProxyError("invalid_changes_response", "The answer is not a change feed's long-poll.", answer.status));
    return false;
  }
  for (const { id, event, data } of changes) {
    if (feed.signal.aborted) return false;
    feed.cursor = id;
    feed.emit({ id, event, data });
  }
  if (changes.length === 0) feed.cursor = cursor;
  return true;
}

/** The long-poll transport: `GET <feed>?since=<cursor>&wait=<s>` again and again. */
async function followLongPoll(feed) {
  while (!feed.signal.aborted) {
    let answer;
    try {
      answer = await pollOnce(feed, feed.wait);
    } catch (error) {
      if (feed.signal.aborted) return;
      const delay = feed.failed(error);
      if (delay === null) return;
      await feed.pause(delay);
      continue;
    }
    feed.failures = 0;
    if (!deliver(feed, answer)) return;
  }
}

/** The events of a change feed's stream. */
const CHANGE_EVENTS = ["created", "updated", "deleted"];
/** `EventSource.CLOSED`: the browser gave up and does not reconnect. */
const EVENT_SOURCE_CLOSED = 2;
/** The code told to `onError` when an event stream breaks and the browser reconnects. */
export const STREAM_BROKEN_CODE = "event_stream_broken";

/** The `EventSource` constructor of `client`, or null where there is none. */
function eventSourceOf(client) {
  const Source = client.eventSourceImpl ?? globalThis.EventSource;
  return typeof Source === "function" ? Source : null;
}

/**
 * Read one `EventSource` of the feed from its cursor until it is closed: by the
 * unsubscription, a failure that ends the subscription (`{stop: true}`), or the browser,
 * which gave up on an answer that is not a stream or has an error status (`{stop: false,
 * opened}`: whether a stream was ever read). Rejects with the error `onEvent` threw.
 */
function readEventSource(feed, Source) {
  const params = feed.cursor === null ? [] : [["since", feed.cursor]];
  // SECURITY: EventSource sends no header of its own, so the nonce goes in the query
  // (`_wpnonce`, as WordPress reads it); the site's access log redacts it.
  if (feed.client.nonce) params.push(["_wpnonce", feed.client.nonce]);
  const [path, query] = splitUrl(feed.url);
  const source = new Source(joinUrl(path, query, params, null), {
    withCredentials: feed.client.credentials === "include",
  });
  return new Promise((resolve, reject) => {
    let opened = false;
    let settled = false;
    const finish = (outcome, error = null) => {
      if (settled) return;
      settled = true;
      source.close();
      feed.signal.removeEventListener("abort", stop);
      if (error === null) resolve(outcome);
      else reject(error);
    };
    const stop = () => finish({ stop: true });
    if (feed.signal.aborted) return stop();
    feed.signal.addEventListener("abort", stop, { once: true });
    source.addEventListener("open", () => {
      opened = true;
      feed.failures = 0;
    });
    for (const name of CHANGE_EVENTS) {
      source.addEventListener(name, (message) => {
        if (settled) return;
        let data;
        try {
          data = JSON.parse(message.data);
        } catch {
          feed.failed(new ProxyError("invalid_changes_response", "An event of the stream is not JSON.", 200));
          return finish({ stop: true });
        }
        if (message.lastEventId) feed.cursor = message.lastEventId;
        try {
          feed.emit({ id: message.lastEventId, event: name, data });
        } catch (error) {
          finish(null, error);
        }
      });
    }
    source.addEventListener("error", () => {
      if (settled) return;
      if (source.readyState === EVENT_SOURCE_CLOSED) return finish({ stop: false, opened });
      // The stream broke: the browser reconnects by itself with `Last-Event-ID`.
      feed.failed(new ProxyError(STREAM_BROKEN_CODE, "The event stream broke; reconnecting.", 0));
    });
  });
}

/**
 * The "sse" transport: `GET <feed>?since=<cursor>&_wpnonce=<nonce>` as an `EventSource`
 * (Server-Sent Events). The browser reconnects a broken stream itself, resuming with
 * `Last-Event-ID`. An `EventSource` cannot see an answer's status: when the browser gives
 * up (an error status, or an answer that is not a stream), one long-poll without waiting
 * (`wait=0`) asks the same question, so a 410, 401 or 403 ends the subscription, a 5xx or
 * broken connection is retried after the back-off, an expired nonce is refreshed, and its
 * changes are handed out; then the stream is opened again from the cursor, or, when no
 * stream was ever read (a WSGI server answers the long-poll to every request; or all of
 * the site's streams are taken), the subscription goes on long-polling.
 */
async function followEventSource(feed) {
  const Source = eventSourceOf(feed.client);
  if (Source === null) throw new TypeError("the \"sse\" transport needs EventSource: use \"long-poll\"");
  while (!feed.signal.aborted) {
    const outcome = await readEventSource(feed, Source);
    if (outcome.stop || feed.signal.aborted) return;
    let answer;
    try {
      answer = await pollOnce(feed, 0);
    } catch (error) {
      if (feed.signal.aborted) return;
      const delay = feed.failed(error);
      if (delay === null) return;
      await feed.pause(delay);
      continue;
    }
    if (!deliver(feed, answer)) return;
    if (!outcome.opened) return followLongPoll(feed);
  }
}

/** The "auto" transport: "sse" where `EventSource` exists, else "long-poll". */
function followAuto(feed) {
  return eventSourceOf(feed.client) === null ? followLongPoll(feed) : followEventSource(feed);
}

/**
 * The transports {@link RestClient#subscribe} can follow a feed with, by name. Each takes
 * the subscription's feed (`client`, `url`, `cursor`, `wait`, `signal`, `emit(change)`,
 * `failed(error)` → pause or null, `pause(seconds)`) and returns a promise settled when it
 * stops. "long-poll" works on every server (WSGI too). "sse" reads Server-Sent Events with
 * an `EventSource` (one request per subscription on an ASGI server; it falls back to
 * long-polling where the site does not stream). "auto" is "sse" where `EventSource`
 * exists, else "long-poll".
 */
export const CHANGE_TRANSPORTS = Object.freeze({
  "long-poll": followLongPoll,
  sse: followEventSource,
  auto: followAuto,
});

/**
 * Follow a collection's change feed with `client` (default: a new {@link RestClient} from
 * `window.svcApiSettings`); see {@link RestClient#subscribe}.
 * @param {string} path
 * @param {(change: ChangeEvent) => void} onEvent
 * @param {SubscribeOptions & {client?: RestClient}} [options]
 * @returns {Unsubscribe}
 */
export function subscribe(path, onEvent, { client = null, ...options } = {}) {
  return (client ?? new RestClient()).subscribe(path, onEvent, options);
}

/**
 * @typedef {object} ChangeEvent
 * @property {string} id The cursor just after this change.
 * @property {string} event "created", "updated" or "deleted".
 * @property {*} data The item as a GET of the collection shows it (`{id}` for a deletion).
 */

/**
 * @typedef {object} SubscribeOptions
 * @property {string|null} [since] Start after this cursor (default: the end of the log).
 * @property {number} [wait=30] Seconds each long-poll waits for a change (0 < wait <= 30).
 * @property {string} [transport="long-poll"] A key of {@link CHANGE_TRANSPORTS}: "long-poll",
 *   "sse" or "auto".
 * @property {number} [maxDelay=30] The longest pause in seconds before trying again.
 * @property {number|null} [timeout=30] Seconds an answer may take beyond `wait` (null: forever).
 * @property {Object<string, string>} [headers] Sent with every poll (not with an `EventSource`,
 *   which sends none).
 * @property {(error: *, state: {retrying: boolean, delay?: number}) => void} [onError]
 */

/**
 * @typedef {(() => void) & {readonly cursor: string|null, done: Promise<void>}} Unsubscribe
 */

/**
 * svc-rest.mjs: the browser half of svcrest's client proxy (the URL rules of Ext JS's REST proxy).
 *
 * A dependency-free ES module. `RestProxy` maps create/read/update/destroy onto HTTP methods
 * and URLs with exactly the rules of the Python `svcrest.client.RestProxy` (both are checked
 * against `tests/vectors/proxy_urls.json`); `RestClient` sends those requests with `fetch`,
 * cookie credentials and the REST nonce (`X-SVC-Nonce`).
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

const SORTER_KEYS = new Set(["property", "direction"]);
const FILTER_KEYS = new Set(["property", "value", "operator"]);
const OVERRIDDEN_METHODS = new Set(["PUT", "PATCH", "DELETE"]);

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
    } = {},
  ) {
    const methods = { ...DEFAULT_ACTION_METHODS };
    for (const [action, method] of entriesOf(actionMethods)) {
      if (!ACTIONS.includes(action)) throw new TypeError(`actionMethods has an unknown action: ${action}`);
      methods[action] = method;
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
    checkOperation(operation);
    let [path, query, fragment] = splitUrl(this.url);
    const id = operationId(operation, this.idProperty);
    if (this.appendId && isValidId(id)) {
      if (!path.endsWith("/")) path += "/";
      path += encodeURIComponent(String(id));
    }
    if (this.format) {
      if (!path.endsWith(".")) path += ".";
      path += this.format;
    }
    return joinUrl(path, query, this.queryParams(operation), fragment);
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
}

/** An error response (HTTP status >= 400): `code`, `message`, `status`, `data`. */
export class ProxyError extends Error {
  /**
   * @param {string} code The body's `code`, or "http_error" for a body without one.
   * @param {string} message The body's `message`, or the status text.
   * @param {number} status The HTTP status.
   * @param {*} [data] The body's `data`.
   */
  constructor(code, message, status, data = null) {
    super(message);
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
  if (data && typeof data === "object" && !Array.isArray(data) && typeof data.code === "string") {
    const message = typeof data.message === "string" ? data.message : response.statusText;
    return new ProxyError(data.code, message, response.status, data.data ?? null);
  }
  return new ProxyError("http_error", response.statusText, response.status);
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

/**
 * @typedef {object} RestResponse
 * @property {*} data The decoded JSON body (null when empty).
 * @property {number} status
 * @property {Headers} headers Includes `X-SVC-Total` / `X-SVC-TotalPages` for lists.
 */

/**
 * Sends REST requests with `fetch`: cookie credentials, the nonce in `X-SVC-Nonce` (from
 * `window.svcApiSettings` unless given), a fresh nonce adopted from every response's
 * `X-SVC-Nonce` header, and one nonce refresh plus one retry on `rest_cookie_invalid_nonce`.
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
   */
  constructor({ root, nonce, nonceUrl, methodOverride = false, credentials = "same-origin", fetch } = {}) {
    const settings = readSettings();
    this.root = (root === undefined ? settings.root : root) ?? "";
    this.nonce = (nonce === undefined ? settings.nonce : nonce) ?? null;
    this.nonceUrl = nonceUrl ?? null;
    this.methodOverride = methodOverride;
    this.credentials = credentials;
    this.fetchImpl = fetch ?? null;
  }

  /**
   * A `RestProxy` for a route under the root (`root` + `route`).
   * @param {string} route For example `"demo/v1/notes"`.
   * @param {object} [options] `RestProxy` options.
   * @returns {RestProxy}
   */
  proxy(route, options = {}) {
    return new RestProxy(joinRoute(this.root, route), options);
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

  async #fetch(method, url, body) {
    const headers = { Accept: "application/json" };
    if (this.nonce) headers[NONCE_HEADER] = this.nonce;
    let sent = method.toUpperCase();
    if (this.methodOverride && OVERRIDDEN_METHODS.has(sent)) {
      headers["X-HTTP-Method-Override"] = sent;
      sent = "POST";
    }
    const init = { method: sent, headers, credentials: this.credentials };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const fetchImpl = this.fetchImpl ?? globalThis.fetch;
    const response = await fetchImpl(url, init);
    const fresh = response.headers.get(NONCE_HEADER);
    if (fresh) this.nonce = fresh;
    return response;
  }

  /**
   * Fetch a fresh nonce from {@link RestClient#getNonceUrl} and keep it.
   * @returns {Promise<string>}
   */
  async refreshNonce() {
    const response = await this.#fetch("GET", this.getNonceUrl(), undefined);
    const data = await readJson(response);
    if (response.status >= 400) throw errorFrom(response, data);
    const nonce = data && typeof data === "object" ? data.nonce : undefined;
    if (typeof nonce !== "string" || !nonce) {
      throw new ProxyError("invalid_nonce_response", "The nonce endpoint did not return a nonce.", response.status);
    }
    this.nonce = nonce;
    return nonce;
  }

  /**
   * Send one request; on `rest_cookie_invalid_nonce` refresh the nonce once and retry once.
   * An error response (status >= 400) throws {@link ProxyError}.
   * @param {string} method
   * @param {string} url
   * @param {{body?: *}} [options] `body` is sent as JSON when not undefined.
   * @returns {Promise<RestResponse>}
   */
  async request(method, url, { body } = {}) {
    let response = await this.#fetch(method, url, body);
    let data = await readJson(response);
    if (response.status >= 400) {
      const error = errorFrom(response, data);
      if (error.code !== INVALID_NONCE_CODE) throw error;
      try {
        await this.refreshNonce();
      } catch (failure) {
        error.cause = failure;
        throw error;
      }
      response = await this.#fetch(method, url, body);
      data = await readJson(response);
      if (response.status >= 400) throw errorFrom(response, data);
    }
    return { data, status: response.status, headers: response.headers };
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

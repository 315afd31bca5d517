/**
 * demo.js: the notes UI of the svcrest demo home page (served at /static/demo.js).
 *
 * Built on svc-rest.mjs: a `RestClient` (cookie credentials + the nonce of
 * `window.svcApiSettings`) and its `RestProxy` for `demo/v1/notes`. The page markup comes from
 * `svcrest.demo.home`; this module fills the list, the pager and the forms.
 *
 * Paging: `?per_page=N` (1–100, default 5) and `?page=N` in the page URL; the current page is
 * kept in the URL so that a reload shows the same page. Each page is read with the proxy's
 * `readResult`: "Page X of Y" comes from its `totalPages` (the `X-SVC-TotalPages` header).
 * While a page loads, `#notes-loading` ("Loading notes…") shows and the list is `aria-busy`.
 *
 * Live: the page follows the notes' change feed (`RestClient.subscribe`, long-polling
 * `demo/v1/notes/changes`), so a note created, edited or deleted in another tab or by another
 * user shows here within a second or so: the current page is read again (after the open edit
 * form, if any, is saved or cancelled). A feed that expired (the tab slept past the site's
 * retention) starts again from now.
 *
 * A page that was logged in (it has `window.svcApiSettings`) and then gets a 401 or 403 has
 * lost its session (the cookie expired or was removed): it says "Your session ended — log in
 * again" with a link to the login page, instead of the server's "not allowed" message.
 *
 * SECURITY: note data is only ever written with `textContent` or form `.value`, never as HTML.
 */

import { ProxyError, RestClient } from "./svc-rest.mjs";

const DEFAULT_PER_PAGE = 5;
const MAX_PER_PAGE = 100;

/**
 * A positive integer query parameter of the page URL, or `fallback`.
 * @param {URLSearchParams} params
 * @param {string} name
 * @param {number} fallback
 * @param {number} max
 * @returns {number}
 */
function intParam(params, name, fallback, max) {
  const raw = params.get(name);
  if (raw === null || !/^\d+$/.test(raw)) return fallback;
  const value = Number.parseInt(raw, 10);
  return value >= 1 ? Math.min(value, max) : fallback;
}

/**
 * An element with optional class name and text (text is set with textContent).
 * @param {string} tag
 * @param {{className?: string, text?: string, attrs?: Object<string, string>}} [options]
 * @returns {HTMLElement}
 */
function el(tag, { className, text, attrs } = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, value);
  return node;
}

/**
 * A button.
 * @param {string} text
 * @param {string} [className]
 * @param {string} [type]
 * @returns {HTMLButtonElement}
 */
function button(text, className = "", type = "button") {
  return /** @type {HTMLButtonElement} */ (el("button", { className, text, attrs: { type } }));
}

/**
 * "2024-05-01T12:30:00" → "2024-05-01 12:30".
 * @param {string} date
 * @returns {string}
 */
function shortDate(date) {
  return typeof date === "string" ? date.replace("T", " ").slice(0, 16) : "";
}

/** The notes UI bound to the page's `#notes-app` element. */
class NotesApp {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.canEdit = root.dataset.canEdit === "true";
    const settings = window.svcApiSettings;
    // A logged-in page has svcApiSettings (its nonce); a logged-out one reads anonymously.
    // The root and the nonce URL are the page's own paths (data-root, data-nonce-url), not
    // svcApiSettings.root: an absolute URL naming another host name of the same site
    // (127.0.0.1 for a page opened as localhost) would be another origin to the browser.
    this.client = new RestClient({
      root: root.dataset.root,
      nonce: settings ? settings.nonce : null,
      nonceUrl: root.dataset.nonceUrl,
    });
    this.loggedIn = Boolean(settings);
    this.sessionEnded = false;
    this.proxy = this.client.proxy(root.dataset.route, {
      onException: (error) => this.noticeSessionEnd(error),
    });
    const params = new URLSearchParams(window.location.search);
    this.perPage = intParam(params, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE);
    this.page = intParam(params, "page", 1, Number.MAX_SAFE_INTEGER);
    this.totalPages = 0;
    this.loads = 0;
    this.route = root.dataset.route;
    this.unsubscribe = null;
    this.stale = false;
    this.reloadTimer = null;
    this.shown = "";
    this.list = /** @type {HTMLOListElement} */ (document.getElementById("notes-list"));
    this.empty = document.getElementById("notes-empty");
    this.total = document.getElementById("notes-total");
    this.message = document.getElementById("notes-message");
    this.pager = document.querySelector(".pager");
    this.prev = /** @type {HTMLButtonElement} */ (document.getElementById("page-prev"));
    this.next = /** @type {HTMLButtonElement} */ (document.getElementById("page-next"));
    this.info = document.getElementById("page-info");
    this.loading = el("p", { className: "loading muted", text: "Loading notes…", attrs: { id: "notes-loading" } });
    this.loading.hidden = true;
    this.list.before(this.loading);
  }

  /** Wire the controls and load the first page. */
  start() {
    this.prev.addEventListener("click", () => this.goTo(this.page - 1));
    this.next.addEventListener("click", () => this.goTo(this.page + 1));
    const form = /** @type {HTMLFormElement | null} */ (document.getElementById("note-create"));
    if (form) form.addEventListener("submit", (event) => this.onCreate(event, form));
    const login = /** @type {HTMLAnchorElement | null} */ (document.getElementById("login-link"));
    if (login) {
      const url = new URL(login.href);
      url.searchParams.set("redirect_to", window.location.href);
      login.href = url.href;
    }
    this.follow();
    return this.load();
  }

  /** Follow the notes' changes from now on: each one makes the page read its notes again. */
  follow() {
    this.unsubscribe = this.client.subscribe(this.route, () => this.changed(), {
      onError: (error, { retrying }) => {
        if (retrying) return;
        if (error instanceof ProxyError && error.code === "rest_changes_expired") {
          this.follow(); // changes were missed: start again from now, and read the page
          this.changed();
        }
      },
    });
  }

  /** A note changed elsewhere: read the page again soon (once for a burst of changes), or
   * after the open edit form is done with. */
  changed() {
    if (this.list.querySelector("form.edit")) {
      this.stale = true;
      return;
    }
    if (this.reloadTimer !== null) return;
    this.reloadTimer = setTimeout(() => {
      this.reloadTimer = null;
      this.load({ quiet: true });
    }, 50);
  }

  /** The edit form closed: catch up with changes made meanwhile. */
  editDone() {
    if (!this.stale) return;
    this.stale = false;
    this.changed();
  }

  /**
   * Show a status line.
   * @param {string} text
   * @param {"info" | "error"} [kind]
   */
  say(text, kind = "info") {
    this.message.textContent = text;
    this.message.dataset.kind = kind;
    this.message.setAttribute("role", kind === "error" ? "alert" : "status");
  }

  /**
   * Remember that the session ended: a 401 or 403 on a page that was logged in.
   * @param {ProxyError} error
   */
  noticeSessionEnd(error) {
    if (this.loggedIn && (error.status === 401 || error.status === 403)) this.sessionEnded = true;
  }

  /** The login page, coming back to this page once logged in. */
  loginUrl() {
    const url = new URL(this.root.dataset.login || "/login", window.location.href);
    url.searchParams.set("redirect_to", window.location.href);
    return url.href;
  }

  /**
   * Report a failed request; once the session ended, say so with a link to log in again.
   * @param {string} what
   * @param {*} error
   */
  fail(what, error) {
    if (error instanceof ProxyError && this.sessionEnded) {
      const link = el("a", { text: "log in again", attrs: { id: "login-again", href: this.loginUrl() } });
      this.message.replaceChildren("Your session ended — ", link, ".");
      this.message.dataset.kind = "error";
      this.message.setAttribute("role", "alert");
      return;
    }
    const detail = error && typeof error.message === "string" ? error.message : String(error);
    this.say(`${what}: ${detail}`, "error");
  }

  /**
   * Show or hide the loading state.
   * @param {boolean} busy
   */
  setLoading(busy) {
    this.loading.hidden = !busy;
    this.list.setAttribute("aria-busy", String(busy));
  }

  /** @param {number} page */
  goTo(page) {
    if (page < 1 || (this.totalPages && page > this.totalPages)) return Promise.resolve();
    this.page = page;
    return this.load();
  }

  /** Keep `page` in the URL (so that a reload shows the same page). */
  syncUrl() {
    const url = new URL(window.location.href);
    if (this.page > 1) url.searchParams.set("page", String(this.page));
    else url.searchParams.delete("page");
    window.history.replaceState(null, "", url.href);
  }

  /**
   * Fetch and show the current page.
   * @param {{quiet?: boolean}} [options] `quiet`: no loading state (a live update).
   */
  async load({ quiet = false } = {}) {
    const ticket = ++this.loads;
    if (!quiet) this.setLoading(true);
    let result;
    try {
      result = await this.proxy.readResult(undefined, { per_page: this.perPage, page: this.page });
    } catch (error) {
      if (ticket !== this.loads) return;
      if (error.code === "rest_invalid_page_number" && this.page > 1) {
        this.page = 1; // the page went away (notes deleted elsewhere): start over
        await this.load();
        return;
      }
      this.setLoading(false);
      this.fail("Could not load the notes", error);
      return;
    }
    if (ticket !== this.loads) return; // a newer load is on its way
    const total = result.total ?? 0;
    this.totalPages = result.totalPages ?? 0;
    const notes = result.records;
    if (!notes.length && this.page > 1 && this.totalPages) {
      this.page = Math.min(this.page - 1, this.totalPages);
      await this.load();
      return;
    }
    this.render(notes, total);
  }

  /**
   * @param {Array<*>} notes
   * @param {number} total
   */
  render(notes, total) {
    // The page reads its notes again after each change, its own included: when nothing it
    // shows changed, the cards (and a delete button armed on one) are left as they are.
    const shown = JSON.stringify([this.page, this.perPage, total, this.totalPages, notes]);
    if (shown === this.shown && this.list.childElementCount === notes.length) {
      this.setLoading(false);
      return;
    }
    this.shown = shown;
    this.list.replaceChildren(...notes.map((note) => this.noteItem(note)));
    this.empty.hidden = notes.length > 0;
    this.total.textContent = total === 1 ? "1 note" : `${total} notes`;
    const pages = Math.max(this.totalPages, 1);
    this.pager.hidden = total === 0;
    this.info.textContent = `Page ${this.page} of ${pages}`;
    this.prev.disabled = this.page <= 1;
    this.next.disabled = this.page >= pages;
    this.setLoading(false);
    this.syncUrl();
  }

  /**
   * The card of one note.
   * @param {*} note
   * @returns {HTMLLIElement}
   */
  noteItem(note) {
    const item = /** @type {HTMLLIElement} */ (el("li", { className: "card note" }));
    item.dataset.id = String(note.id);
    this.showNote(item, note);
    return item;
  }

  /**
   * Fill a card with the note's text and its actions.
   * @param {HTMLLIElement} item
   * @param {*} note
   */
  showNote(item, note) {
    const title = el("h3", { className: "note-title", text: String(note.title ?? "") });
    const body = el("p", { className: "note-content", text: String(note.content ?? "") });
    const meta = el("p", { className: "note-meta" });
    const time = el("time", { text: shortDate(note.date) });
    if (typeof note.date_gmt === "string") time.setAttribute("datetime", `${note.date_gmt}Z`);
    meta.append(`#${note.id} · `, time);
    const foot = el("div", { className: "note-foot" });
    foot.append(meta);
    item.replaceChildren(title, body, foot);
    if (!body.textContent) body.hidden = true;
    if (!this.canEdit) return;
    const actions = el("div", { className: "actions" });
    const edit = button("Edit");
    const remove = button("Delete", "danger");
    const keep = button("Keep", "quiet");
    keep.hidden = true;
    edit.addEventListener("click", () => this.editNote(item, note));
    remove.addEventListener("click", () => this.onDelete(item, note, remove, keep));
    keep.addEventListener("click", () => {
      remove.textContent = "Delete";
      remove.classList.remove("armed");
      keep.hidden = true;
    });
    actions.append(keep, edit, remove);
    foot.append(actions);
  }

  /**
   * Replace a card's text by an edit form.
   * @param {HTMLLIElement} item
   * @param {*} note
   */
  editNote(item, note) {
    const form = /** @type {HTMLFormElement} */ (el("form", { className: "note-form edit" }));
    const titleLabel = el("label", { text: "Title " });
    const title = /** @type {HTMLInputElement} */ (el("input", { attrs: { name: "title" } }));
    title.required = true;
    title.maxLength = 255;
    title.value = String(note.title ?? "");
    titleLabel.append(title);
    const contentLabel = el("label", { text: "Content " });
    const content = /** @type {HTMLTextAreaElement} */ (el("textarea", { attrs: { name: "content", rows: "3" } }));
    content.value = String(note.content ?? "");
    contentLabel.append(content);
    const actions = el("div", { className: "actions" });
    const save = button("Save", "primary", "submit");
    const cancel = button("Cancel", "quiet");
    actions.append(save, cancel);
    form.append(titleLabel, contentLabel, actions);
    cancel.addEventListener("click", () => {
      this.showNote(item, note);
      this.editDone();
    });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      save.disabled = true;
      try {
        const [saved] = await this.proxy.update({
          id: note.id,
          title: title.value,
          content: content.value,
        });
        this.showNote(item, saved);
        this.say("Note saved.");
        this.editDone();
      } catch (error) {
        save.disabled = false;
        this.fail("Could not save the note", error);
      }
    });
    item.replaceChildren(form);
    title.focus();
  }

  /**
   * Delete with a two-click confirmation: the first click arms the button.
   * @param {HTMLLIElement} item
   * @param {*} note
   * @param {HTMLButtonElement} remove
   * @param {HTMLButtonElement} keep
   */
  async onDelete(item, note, remove, keep) {
    if (!remove.classList.contains("armed")) {
      remove.classList.add("armed");
      remove.textContent = "Confirm delete";
      keep.hidden = false;
      return;
    }
    remove.disabled = true;
    keep.hidden = true;
    try {
      await this.proxy.destroy({ id: note.id });
    } catch (error) {
      remove.disabled = false;
      this.fail("Could not delete the note", error);
      return;
    }
    this.say("Note deleted.");
    await this.load();
  }

  /**
   * Create a note from the composer form, then show the first page (newest first).
   * @param {SubmitEvent} event
   * @param {HTMLFormElement} form
   */
  async onCreate(event, form) {
    event.preventDefault();
    const submit = /** @type {HTMLButtonElement} */ (form.querySelector("button[type=submit]"));
    const title = /** @type {HTMLInputElement} */ (form.elements.namedItem("title"));
    const content = /** @type {HTMLTextAreaElement} */ (form.elements.namedItem("content"));
    submit.disabled = true;
    try {
      await this.proxy.create({ title: title.value, content: content.value });
    } catch (error) {
      this.fail("Could not create the note", error);
      return;
    } finally {
      submit.disabled = false;
    }
    form.reset();
    title.focus();
    this.say("Note created.");
    this.page = 1;
    await this.load();
  }
}

const root = document.getElementById("notes-app");
if (root) {
  window.notesApp = new NotesApp(root);
  window.notesApp.start();
}

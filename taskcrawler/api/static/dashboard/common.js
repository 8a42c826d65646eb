// Shared by every page: constants, DOM helpers, the API key, API calls, polling.

const KEY_STORAGE = "taskcrawler.apiKey";
export const JOBS = "/api/v1/jobs";
export const POLL_MS = 1500;
export const CHART_MS = 4000;
export const PAGE_SIZE = 50;
export const CHART_SAMPLE = 500; // the API's largest page
export const BATCH = 1000; // the batch endpoint's limit
export const FINISHED = new Set(["COMPLETED", "FAILED", "CANCELLED"]);
export const STATUSES = ["PENDING", "PROCESSING", "COMPLETED", "FAILED", "CANCELLED"];
const SVG_NS = "http://www.w3.org/2000/svg";
// What a job or crawl may extract (the API's formats), and those a new one asks by default.
const FORMATS = ["metadata", "markdown", "text", "html", "links", "chunks", "screenshot"];
const DEFAULT_FORMATS = new Set(["metadata", "markdown"]);

export const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------ DOM helpers

function build(ns, tag, attrs, children) {
  const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children || []) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
export const el = (tag, attrs, ...children) => build(null, tag, attrs, children);
export const svg = (tag, attrs, ...children) => build(SVG_NS, tag, attrs, children);

export function badge(status) {
  return el("span", { class: `badge s-${status}`, text: status });
}

export function time(iso) {
  if (!iso) return el("span", { class: "muted", text: "—" });
  const date = new Date(iso);
  const today = new Date().toDateString() === date.toDateString();
  const text = today ? date.toLocaleTimeString() : date.toLocaleString();
  return el("time", { datetime: iso, title: iso, text });
}

export function duration(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

export const between = (from, to) => (from && to ? Date.parse(to) - Date.parse(from) : null);

// A checkbox per format in the fieldset ``id``, the defaults checked. Returns a function giving
// the checked formats, or undefined (the API's default) when none is.
export function formatPicker(id) {
  const fieldset = $(id);
  for (const name of FORMATS) {
    const box = el("input", { type: "checkbox", name: "formats", value: name, checked: DEFAULT_FORMATS.has(name) });
    fieldset.append(el("label", {}, box, name));
  }
  return () => {
    const checked = [...fieldset.querySelectorAll("input:checked")].map((box) => box.value);
    return checked.length ? checked : undefined;
  };
}

export function showAlert(message) {
  const box = $("alert");
  if (!box) return;
  box.textContent = message || "";
  box.hidden = !message;
}

// ------------------------------------------------------------------ API key

function getKey() {
  try {
    return localStorage.getItem(KEY_STORAGE) || "";
  } catch {
    return "";
  }
}

function setKey(key) {
  try {
    if (key) localStorage.setItem(KEY_STORAGE, key);
    else localStorage.removeItem(KEY_STORAGE);
  } catch {
    /* storage disabled: the key lasts until the page is reloaded */
  }
  showKeyState();
}

function showKeyState() {
  const key = getKey();
  $("key-status").textContent = key ? `Key ${key.split("_").slice(0, 2).join("_")}…` : "No API key";
  $("key-button").textContent = key ? "Change key" : "Set API key";
}

let askedFor = null; // the key (or its absence) we already asked about: ask once, not every poll

function openKeyDialog(reason) {
  const dialog = $("key-dialog");
  if (dialog.open) return;
  if (reason) $("key-reason").textContent = reason;
  $("key-input").value = getKey();
  dialog.showModal();
  $("key-input").focus();
}

export function setUpKeyDialog(onChange) {
  const dialog = $("key-dialog");
  $("key-button").addEventListener("click", () => openKeyDialog(null));
  dialog.addEventListener("close", () => {
    if (dialog.returnValue === "save") setKey($("key-input").value.trim());
    else if (dialog.returnValue === "clear") setKey("");
    else return;
    askedFor = null;
    showAlert("");
    onChange();
  });
  showKeyState();
}

// ------------------------------------------------------------------ API calls

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function describe(status, data, retryAfter) {
  let detail = data && data.detail;
  if (Array.isArray(detail)) {
    detail = detail
      .map((d) => {
        const where = (d.loc || []).filter((part) => part !== "body").join(".");
        return where ? `${where}: ${d.msg}` : d.msg;
      })
      .join("; ");
  }
  if (!detail) detail = `HTTP ${status}`;
  if (status === 429 && retryAfter) detail += ` (try again in ${retryAfter} s)`;
  return `${status}: ${detail}`;
}

export async function request(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, `Cannot reach the API (${error.message}); retrying…`);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message = describe(response.status, data, response.headers.get("Retry-After"));
    if (response.status === 401 && askedFor !== getKey()) {
      askedFor = getKey();
      openKeyDialog(`The server needs a valid API key (${message}).`);
    }
    throw new ApiError(response.status, message);
  }
  return { status: response.status, data };
}

export const api = async (method, path, body) => (await request(method, path, body)).data;

export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.append(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** Run `task` now and every `ms` while the tab is visible; never two at once. */
export function poll(task, ms) {
  let timer = null;
  let running = false;
  let again = false; // asked for while a run was under way: it runs once more, at once
  async function tick() {
    clearTimeout(timer);
    if (running) {
      again = true;
      return;
    }
    if (!document.hidden) {
      running = true;
      try {
        do {
          again = false;
          await task();
        } while (again);
      } catch (error) {
        showAlert(error.message);
      } finally {
        running = false;
      }
    }
    timer = setTimeout(tick, ms);
  }
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) tick();
  });
  tick();
  return tick; // call it to refresh at once
}

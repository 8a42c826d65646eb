/* TaskCrawler dashboard. Plain JavaScript, no dependencies, no build step.
 *
 * The pages are static; everything on them comes from the JSON API (/api/v1/jobs...), polled while
 * the tab is visible. The API key, if the server wants one, lives in localStorage and is sent as
 * "Authorization: Bearer". Text from scraped pages is untrusted: it only ever reaches the DOM as
 * textContent or an attribute value, never as HTML.
 */
"use strict";

(() => {
  const KEY_STORAGE = "taskcrawler.apiKey";
  const JOBS = "/api/v1/jobs";
  const POLL_MS = 1500;
  const CHART_MS = 4000;
  const PAGE_SIZE = 50;
  const CHART_SAMPLE = 500; // the API's largest page
  const BATCH = 1000; // the batch endpoint's limit
  const FINISHED = new Set(["COMPLETED", "FAILED", "CANCELLED"]);
  const STATUSES = ["PENDING", "PROCESSING", "COMPLETED", "FAILED", "CANCELLED"];
  const SVG_NS = "http://www.w3.org/2000/svg";
  // What a job or crawl may extract (the API's formats), and those a new one asks by default.
  const FORMATS = ["metadata", "markdown", "text", "html", "links", "chunks", "screenshot"];
  const DEFAULT_FORMATS = new Set(["metadata", "markdown"]);

  const $ = (id) => document.getElementById(id);

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
  const el = (tag, attrs, ...children) => build(null, tag, attrs, children);
  const svg = (tag, attrs, ...children) => build(SVG_NS, tag, attrs, children);

  function badge(status) {
    return el("span", { class: `badge s-${status}`, text: status });
  }

  function time(iso) {
    if (!iso) return el("span", { class: "muted", text: "—" });
    const date = new Date(iso);
    const today = new Date().toDateString() === date.toDateString();
    const text = today ? date.toLocaleTimeString() : date.toLocaleString();
    return el("time", { datetime: iso, title: iso, text });
  }

  function duration(ms) {
    if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
    if (ms < 0) ms = 0;
    if (ms < 1000) return `${Math.round(ms)} ms`;
    const s = ms / 1000;
    if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
    return `${Math.floor(m / 60)} h ${m % 60} min`;
  }

  const between = (from, to) => (from && to ? Date.parse(to) - Date.parse(from) : null);

  // A checkbox per format in the fieldset ``id``, the defaults checked. Returns a function giving
  // the checked formats, or undefined (the API's default) when none is.
  function formatPicker(id) {
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

  function showAlert(message) {
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

  function setUpKeyDialog(onChange) {
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

  async function request(method, path, body) {
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

  const api = async (method, path, body) => (await request(method, path, body)).data;

  function query(params) {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) {
      if (value !== null && value !== undefined && value !== "") search.append(name, String(value));
    }
    const text = search.toString();
    return text ? `?${text}` : "";
  }

  /** Run `task` now and every `ms` while the tab is visible; never two at once. */
  function poll(task, ms) {
    let timer = null;
    let running = false;
    async function tick() {
      clearTimeout(timer);
      if (running) return;
      if (!document.hidden) {
        running = true;
        try {
          await task();
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

  // ------------------------------------------------------------------ charts (inline SVG)

  function niceMax(value) {
    if (value <= 4) return 4;
    const magnitude = 10 ** Math.floor(Math.log10(value));
    for (const step of [1, 2, 2.5, 5, 10]) {
      if (step * magnitude >= value) return step * magnitude;
    }
    return 10 * magnitude;
  }

  function emptyChart(message, label) {
    return svg(
      "svg",
      { viewBox: "0 0 600 150", role: "img", "aria-label": label || message },
      svg("text", { x: 300, y: 80, "text-anchor": "middle", class: "empty", text: message }),
    );
  }

  /** Jobs finished per minute over the last `minutes`, stacked completed / failed. */
  function throughputChart(jobs, minutes = 30) {
    const now = Date.now();
    const bucketMs = 60000;
    const end = Math.ceil(now / bucketMs) * bucketMs;
    const start = end - minutes * bucketMs;
    const ok = new Array(minutes).fill(0);
    const failed = new Array(minutes).fill(0);
    for (const job of jobs) {
      if (!job.finished_at || job.status === "CANCELLED") continue;
      const t = Date.parse(job.finished_at);
      if (t < start || t >= end) continue;
      const i = Math.floor((t - start) / bucketMs);
      if (job.status === "FAILED") failed[i] += 1;
      else ok[i] += 1;
    }
    const totalOk = ok.reduce((a, b) => a + b, 0);
    const totalFailed = failed.reduce((a, b) => a + b, 0);
    const lastMinute = ok[minutes - 1] + failed[minutes - 1];
    const label =
      `${totalOk + totalFailed} jobs finished in the last ${minutes} minutes ` +
      `(${totalFailed} failed); ${lastMinute} in the current minute.`;
    if (totalOk + totalFailed === 0) return emptyChart(`No job finished in the last ${minutes} minutes`, label);

    const W = 600, H = 170, left = 34, right = 8, top = 8, bottom = 22;
    const plotW = W - left - right, plotH = H - top - bottom;
    const max = niceMax(Math.max(...ok.map((v, i) => v + failed[i])));
    const y = (v) => top + plotH - (v / max) * plotH;
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label });
    root.append(svg("title", { text: label }));
    for (const v of [0, max / 2, max]) {
      root.append(svg("line", { x1: left, x2: W - right, y1: y(v), y2: y(v), class: "gridline" }));
      root.append(svg("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end", text: Math.round(v) }));
    }
    const slot = plotW / minutes;
    for (let i = 0; i < minutes; i += 1) {
      const x = left + i * slot + 1;
      const w = Math.max(1, slot - 2);
      const at = new Date(start + i * bucketMs).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
      const group = svg("g", {}, svg("title", { text: `${at}: ${ok[i]} completed, ${failed[i]} failed` }));
      if (ok[i]) group.append(svg("rect", { x, y: y(ok[i]), width: w, height: y(0) - y(ok[i]), class: "bar-ok" }));
      if (failed[i]) {
        const base = y(ok[i]);
        group.append(svg("rect", { x, y: base - (y(0) - y(failed[i])), width: w, height: y(0) - y(failed[i]), class: "bar-failed" }));
      }
      root.append(group);
    }
    for (const [i, text] of [[0, `-${minutes} min`], [minutes / 2, `-${minutes / 2} min`], [minutes, "now"]]) {
      const anchor = i === 0 ? "start" : i === minutes ? "end" : "middle";
      root.append(svg("text", { x: left + i * slot, y: H - 6, "text-anchor": anchor, text }));
    }
    return root;
  }

  /** Failed jobs by error code, largest first. */
  function failureChart(jobs) {
    const counts = new Map();
    for (const job of jobs) {
      if (job.status !== "FAILED") continue;
      const code = job.error_code || "unknown";
      counts.set(code, (counts.get(code) || 0) + 1);
    }
    const rows = [...counts.entries()].sort((a, b) => b[1] - a[1]);
    const total = rows.reduce((sum, [, n]) => sum + n, 0);
    if (!total) return emptyChart("No failed jobs", "No failed jobs among those shown.");
    const shown = rows.slice(0, 7);
    if (rows.length > shown.length) {
      shown.push(["other", rows.slice(7).reduce((sum, [, n]) => sum + n, 0)]);
    }
    const label = `${total} failed jobs: ` + shown.map(([code, n]) => `${code} ${n}`).join(", ") + ".";
    const W = 600, rowH = 22, top = 6, left = 190, right = 40;
    const H = Math.max(150, top * 2 + shown.length * rowH);
    const max = shown[0][1];
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label });
    root.append(svg("title", { text: label }));
    shown.forEach(([code, n], i) => {
      const yTop = top + i * rowH;
      const width = Math.max(2, ((W - left - right) * n) / max);
      root.append(
        svg(
          "g",
          {},
          svg("title", { text: `${code}: ${n}` }),
          svg("text", { x: left - 8, y: yTop + 15, "text-anchor": "end", text: code }),
          svg("rect", { x: left, y: yTop + 3, width, height: rowH - 7, rx: 2, class: "bar-failed" }),
          svg("text", { x: left + width + 6, y: yTop + 15, text: n }),
        ),
      );
    });
    return root;
  }

  // ------------------------------------------------------------------ jobs page

  function jobsPage() {
    const params = new URLSearchParams(location.search);
    const state = {
      status: params.get("status") || "",
      host: params.get("host") || "",
      cursor: null,
      previous: [], // cursors of the pages before this one
      next: null,
      signature: "",
    };
    $("filter-status").value = state.status;
    $("filter-host").value = state.host;

    function row(job) {
      const took = FINISHED.has(job.status) ? duration(between(job.created_at, job.finished_at)) : "—";
      const detail = job.status === "FAILED" || (job.error_log && !FINISHED.has(job.status))
        ? el("td", { class: "title error", text: job.error_log || "" })
        : el("td", { class: "title", text: job.scraped_title || "" });
      return el(
        "tr",
        { "data-job-id": job.id, "data-status": job.status },
        el("td", {}, badge(job.status)),
        el("td", { class: "url" }, el("a", { href: `/jobs/${job.id}`, text: job.url })),
        detail,
        el("td", { class: "num", text: job.retry_count }),
        el("td", {}, time(job.created_at)),
        el("td", { class: "num", text: took }),
      );
    }

    async function refreshTable() {
      const page = await api("GET", JOBS + query({
        status: state.status, host: state.host, limit: PAGE_SIZE, cursor: state.cursor,
      }));
      showAlert("");
      state.next = page.next_cursor;
      $("older").disabled = !state.next;
      $("newest").disabled = state.cursor === null;
      $("updated").textContent = `Updated ${new Date().toLocaleTimeString()}`;
      const signature = JSON.stringify(page.jobs.map((j) => [j.id, j.status, j.retry_count, j.finished_at, j.scraped_title, j.error_log]));
      if (signature === state.signature) return;
      state.signature = signature;
      const body = $("jobs-body");
      if (!page.jobs.length) {
        const filtered = state.status || state.host;
        body.replaceChildren(el("tr", {}, el("td", { colspan: 6, class: "muted", text: filtered ? "No job matches these filters." : "No jobs yet: submit a URL above." })));
        return;
      }
      body.replaceChildren(...page.jobs.map(row));
    }

    async function refreshCharts() {
      const page = await api("GET", JOBS + query({ host: state.host, limit: CHART_SAMPLE }));
      const jobs = page.jobs;
      for (const status of STATUSES) {
        $(`count-${status}`).textContent = jobs.filter((j) => j.status === status).length;
      }
      $("sample-note").textContent = page.next_cursor
        ? `newest ${jobs.length} jobs${state.host ? ` on ${state.host}` : ""}`
        : `all ${jobs.length} jobs${state.host ? ` on ${state.host}` : ""}`;
      $("throughput-chart").replaceChildren(throughputChart(jobs));
      $("failure-chart").replaceChildren(failureChart(jobs));
    }

    const tableNow = poll(refreshTable, POLL_MS);
    const chartsNow = poll(refreshCharts, CHART_MS);
    const refresh = () => {
      state.signature = "";
      tableNow();
      chartsNow();
    };

    $("filters").addEventListener("submit", (event) => {
      event.preventDefault();
      state.status = $("filter-status").value;
      state.host = $("filter-host").value.trim();
      state.cursor = null;
      state.previous = [];
      history.replaceState(null, "", location.pathname + query({ status: state.status, host: state.host }));
      refresh();
    });
    $("filter-status").addEventListener("change", () => $("filters").requestSubmit());
    $("older").addEventListener("click", () => {
      if (!state.next) return;
      state.previous.push(state.cursor);
      state.cursor = state.next;
      refresh();
    });
    $("newest").addEventListener("click", () => {
      state.cursor = null;
      state.previous = [];
      refresh();
    });

    const submitFormats = formatPicker("submit-formats");
    $("submit-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      const output = $("submit-result");
      const formats = submitFormats();
      const urls = $("urls").value.split(/\r?\n/).map((line) => line.trim()).filter((line) => line && !line.startsWith("#"));
      output.classList.remove("error");
      if (!urls.length) {
        output.classList.add("error");
        output.textContent = "Enter at least one URL.";
        $("urls").focus();
        return;
      }
      const button = $("submit-button");
      button.disabled = true;
      let created = 0;
      let existing = 0;
      try {
        if (urls.length === 1) {
          const answer = await request("POST", JOBS, { url: urls[0], formats });
          if (answer.status === 201) created += 1;
          else existing += 1;
        } else {
          for (let i = 0; i < urls.length; i += BATCH) {
            output.textContent = `Submitting ${i + 1}–${Math.min(i + BATCH, urls.length)} of ${urls.length}…`;
            const answer = await api("POST", `${JOBS}/batch`, { urls: urls.slice(i, i + BATCH), formats });
            created += answer.created;
            existing += answer.existing;
          }
        }
        output.textContent = `Submitted ${urls.length} URL${urls.length === 1 ? "" : "s"}: ${created} new, ${existing} already known.`;
        $("urls").value = "";
        state.cursor = null;
        state.previous = [];
        refresh();
      } catch (error) {
        output.classList.add("error");
        const done = created + existing;
        output.textContent = (done ? `Submitted ${done}, then: ` : "Not submitted: ") + error.message;
      } finally {
        button.disabled = false;
      }
    });

    return refresh;
  }

  // ------------------------------------------------------------------ job page

  function jobPage(id) {
    let resultText = null;
    let runsSignature = null;

    function fill(list, pairs) {
      list.replaceChildren(...pairs.flatMap(([term, value]) => [
        el("dt", { text: term }),
        el("dd", {}, value === null || value === undefined || value === "" ? el("span", { class: "muted", text: "—" }) : value),
      ]));
    }

    function link(url) {
      return url ? el("a", { href: url, rel: "noreferrer noopener", text: url }) : null;
    }

    function timeline(job) {
      const wait = between(job.created_at, job.started_at || (FINISHED.has(job.status) ? job.finished_at : new Date().toISOString()));
      const run = job.started_at ? between(job.started_at, job.finished_at || new Date().toISOString()) : 0;
      const total = (wait || 0) + (run || 0);
      const label = `${duration(wait)} from creation to the start of the last attempt, which ran ${duration(run)}.`;
      if (!total) return emptyChart("No timing yet", label);
      const W = 900, H = 50, left = 0;
      const scale = (W - 2) / total;
      const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label });
      root.append(svg("title", { text: label }));
      const waitW = Math.max(wait ? 2 : 0, (wait || 0) * scale);
      root.append(svg("rect", { x: left, y: 4, width: waitW, height: 22, rx: 3, class: "span-wait" }, svg("title", { text: `created → last attempt ${duration(wait)}` })));
      if (run) root.append(svg("rect", { x: left + waitW, y: 4, width: Math.max(2, W - 2 - waitW), height: 22, rx: 3, class: "span-run" }, svg("title", { text: `last attempt ${duration(run)}` })));
      root.append(svg("text", { x: 0, y: 44, text: `created → last attempt: ${duration(wait)}` }));
      root.append(svg("text", { x: W, y: 44, "text-anchor": "end", text: `last attempt: ${duration(run)}` }));
      return root;
    }

    function renderJob(job) {
      document.title = `${job.scraped_title || job.url} · ${job.status} · TaskCrawler`;
      const status = $("job-status");
      status.className = `badge s-${job.status}`;
      status.textContent = job.status;
      $("retry-button").hidden = !FINISHED.has(job.status);
      $("cancel-button").hidden = !["PENDING", "PROCESSING"].includes(job.status);
      fill($("job-meta"), [
        ["URL", link(job.url)],
        ["Final URL", job.final_url && job.final_url !== job.url ? link(job.final_url) : null],
        ["Title", job.scraped_title],
        ["HTTP status", job.http_status],
        ["Content type", job.content_type],
        ["Retries", String(job.retry_count)],
        ["Earlier runs", String(job.run_count)],
        ["Formats", (job.formats || []).join(", ")],
        ["Unchanged (304)", job.unchanged ? "yes: the last run kept the previous result" : null],
      ]);
      fill($("job-timings"), [
        ["Created", time(job.created_at)],
        ["Last attempt started", job.started_at ? time(job.started_at) : null],
        ["Finished", job.finished_at ? time(job.finished_at) : null],
        ["Next attempt", job.next_attempt_at && !FINISHED.has(job.status) ? time(job.next_attempt_at) : null],
        ["Created → last attempt", job.started_at ? duration(between(job.created_at, job.started_at)) : null],
        ["Last attempt (fetch and extract)", job.started_at && job.finished_at ? duration(between(job.started_at, job.finished_at)) : null],
        ["Created → finished", job.finished_at ? duration(between(job.created_at, job.finished_at)) : null],
      ]);
      $("timeline").replaceChildren(timeline(job));
      $("error-card").hidden = !job.error_log;
      $("error-code").textContent = job.error_code || "";
      $("error-log").textContent = job.error_log || "";
      const text = job.result ? JSON.stringify(job.result, null, 2) : "No result yet.";
      if (text !== resultText) {
        resultText = text;
        $("job-result").textContent = text;
      }
    }

    function renderRuns(runs) {
      const body = $("runs-body");
      if (!runs.length) {
        body.replaceChildren(el("tr", {}, el("td", { colspan: 7, class: "muted", text: "No earlier runs: this is the first." })));
        return;
      }
      body.replaceChildren(...runs.map((run) => el(
        "tr",
        {},
        el("td", { class: "num", text: run.run }),
        el("td", {}, badge(run.status)),
        el("td", { class: "num", text: run.http_status ?? "—" }),
        el("td", { class: "num", text: run.retry_count }),
        run.error_log
          ? el("td", { class: "title error", text: run.error_log })
          : el("td", { class: "title", text: run.scraped_title || "" }),
        el("td", {}, time(run.started_at)),
        el("td", {}, time(run.finished_at)),
      )));
    }

    async function refresh() {
      let job;
      try {
        job = await api("GET", `${JOBS}/${id}`);
      } catch (error) {
        if (error.status === 404) {
          showAlert("No job with this id, or not one this API key may see.");
          return;
        }
        throw error;
      }
      showAlert("");
      renderJob(job);
      const signature = `${job.run_count}`;
      if (signature !== runsSignature) {
        renderRuns(await api("GET", `${JOBS}/${id}/runs`));
        runsSignature = signature;
      }
    }

    const now = poll(refresh, POLL_MS);

    async function act(method, path) {
      try {
        await api(method, path);
        showAlert("");
      } catch (error) {
        showAlert(error.message);
      }
      now();
    }
    $("retry-button").addEventListener("click", () => act("POST", `${JOBS}/${id}/retry`));
    $("cancel-button").addEventListener("click", () => act("DELETE", `${JOBS}/${id}`));
    return now;
  }

  // ------------------------------------------------------------------ search

  function searchPage() {
    const results = $("search-results");
    async function search() {
      const q = $("search-q").value.trim();
      if (!q) return;
      const params = { q, mode: $("search-mode").value, k: $("search-k").value };
      try {
        const data = await api("GET", `/api/v1/search${query(params)}`);
        showAlert("");
        results.replaceChildren(
          ...data.results.map((found) =>
            el(
              "li",
              { class: "result" },
              el(
                "p",
                null,
                el("a", { href: `/jobs/${found.job_id}`, text: found.title || found.url }),
                " ",
                el("span", { class: "muted small", text: `${found.url} · chunk ${found.chunk_index} · score ${found.score.toFixed(3)}` }),
              ),
              el("p", { class: "chunk", text: found.text }),
            ),
          ),
        );
        if (!data.results.length) results.replaceChildren(el("li", { class: "muted", text: "Nothing found." }));
      } catch (error) {
        showAlert(error.message);
      }
    }
    $("search-form").addEventListener("submit", (event) => {
      event.preventDefault();
      search();
    });
    return search;
  }

  // ------------------------------------------------------------------ monitors

  const MONITORS = "/api/v1/monitors";

  function monitorBadge(monitor) {
    return el("span", { class: `badge s-${monitor.status === "ACTIVE" ? "COMPLETED" : "CANCELLED"}`, text: monitor.status });
  }

  function monitorsPage() {
    let signature = "";
    async function refresh() {
      const page = await api("GET", MONITORS + query({ limit: PAGE_SIZE }));
      showAlert("");
      $("updated").textContent = `Updated ${new Date().toLocaleTimeString()}`;
      const now = JSON.stringify(page.monitors.map((m) => [m.id, m.status, m.rounds, m.next_run_at]));
      if (now === signature) return;
      signature = now;
      const body = $("monitors-body");
      if (!page.monitors.length) {
        body.replaceChildren(el("tr", {}, el("td", { colspan: 5, class: "muted", text: "No monitors yet." })));
        return;
      }
      body.replaceChildren(...page.monitors.map((monitor) => el(
        "tr",
        { "data-monitor-id": monitor.id },
        el("td", {}, monitorBadge(monitor)),
        el("td", { class: "url" }, el("a", { href: `/monitors/${monitor.id}`, text: monitorTarget(monitor) })),
        el("td", { class: "num", text: `${monitor.interval_seconds} s` }),
        el("td", { class: "num", text: monitor.rounds }),
        el("td", {}, time(monitor.next_run_at)),
      )));
    }
    return poll(refresh, POLL_MS);
  }

  /** A unified diff, each line marked by what it does (added, removed, a hunk header). */
  function diffView(text) {
    const lines = text.split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    return el("pre", { class: "diff" }, ...lines.map((line) => {
      const kind = line.startsWith("+++") || line.startsWith("---") ? "file"
        : line.startsWith("@@") ? "hunk"
        : line.startsWith("+") ? "add"
        : line.startsWith("-") ? "del" : "ctx";
      return el("span", { class: `line ${kind}`, text: `${line}\n` });
    }));
  }

  /** What a monitor watches: its URLs, or the site its crawl starts from. */
  function monitorTarget(monitor) {
    return monitor.crawl ? `site: ${monitor.crawl.url}` : monitor.urls.join(", ");
  }

  function monitorPage(id) {
    let changesSignature = "";
    function renderMonitor(monitor) {
      const status = $("monitor-status");
      status.replaceWith(Object.assign(monitorBadge(monitor), { id: "monitor-status" }));
      $("pause-button").hidden = monitor.status !== "ACTIVE";
      $("resume-button").hidden = monitor.status === "ACTIVE";
      const meta = $("monitor-meta");
      const pairs = [
        ...(monitor.crawl ? [["Site", monitor.crawl.url]] : []),
        ["Every", `${monitor.interval_seconds} s`],
        ["Runs", String(monitor.rounds)],
        ["Last run", time(monitor.last_run_at)],
        ["Next run", time(monitor.next_run_at)],
        ["Ignored", monitor.ignore_selectors.join(", ") || "—"],
        ["Webhook", monitor.callback_url || "—"],
      ];
      meta.replaceChildren(...pairs.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", {}, value)]));
      $("monitor-pages").replaceChildren(...monitor.pages.map((page) => el(
        "li", {}, el("a", { href: `/jobs/${page.job_id}`, text: page.url }),
      )));
    }
    function changeLabel(change) {
      if (change.kind !== "changed") return ` ${change.kind}`;
      // A site's pages are jobs of each crawl: its change is between two crawls, not two runs.
      if (change.previous_job_id && change.previous_job_id !== change.job_id) return " changed since the last crawl";
      return ` run ${change.previous_run} → ${change.run}`;
    }
    function renderChanges(changes) {
      const box = $("changes");
      if (!changes.length) {
        box.replaceChildren(el("p", { class: "muted", text: "No change yet: the first run is the baseline." }));
        return;
      }
      box.replaceChildren(...changes.map((change) => el(
        "article",
        { class: "change", "data-change-id": change.id },
        el("h3", {}, time(change.detected_at), " ", el("span", { class: "url", text: change.url }),
          el("span", { class: "muted small", text: changeLabel(change) })),
        ...Object.entries(change.metadata || {}).map(([name, values]) => el(
          "p", { class: "small" }, `${name}: `, el("del", { text: values.old ?? "—" }), " → ", el("ins", { text: values.new ?? "—" }),
        )),
        change.diff ? diffView(change.diff) : null,
        change.diff_complete === false ? el("p", { class: "muted small", text: "The diff was cut at its size limit." }) : null,
      )));
    }
    async function refresh() {
      let monitor;
      try {
        monitor = await api("GET", `${MONITORS}/${id}`);
      } catch (error) {
        if (error.status === 404) {
          showAlert("No monitor with this id, or not one this API key may see.");
          return;
        }
        throw error;
      }
      showAlert("");
      renderMonitor(monitor);
      const page = await api("GET", `${MONITORS}/${id}/changes` + query({ limit: 20 }));
      const signature = JSON.stringify(page.changes.map((c) => c.id));
      if (signature !== changesSignature) {
        changesSignature = signature;
        renderChanges(page.changes);
      }
    }
    const now = poll(refresh, POLL_MS);
    async function setPaused(paused) {
      try {
        await api("PATCH", `${MONITORS}/${id}`, { paused });
        showAlert("");
      } catch (error) {
        showAlert(error.message);
      }
      now();
    }
    $("pause-button").addEventListener("click", () => setPaused(true));
    $("resume-button").addEventListener("click", () => setPaused(false));
    return now;
  }

  // ------------------------------------------------------------------ crawls

  const CRAWLS = "/api/v1/crawls";

  function crawlsPage() {
    let signature = "";
    async function refresh() {
      const page = await api("GET", CRAWLS + query({ limit: PAGE_SIZE }));
      showAlert("");
      $("updated").textContent = `Updated ${new Date().toLocaleTimeString()}`;
      const now = JSON.stringify(page.crawls.map((c) => [c.id, c.status, c.discovered, c.pending, c.completed, c.failed]));
      if (now === signature) return;
      signature = now;
      const body = $("crawls-body");
      if (!page.crawls.length) {
        body.replaceChildren(el("tr", {}, el("td", { colspan: 7, class: "muted", text: "No crawls yet: start one above." })));
        return;
      }
      body.replaceChildren(...page.crawls.map((crawl) => el(
        "tr",
        { "data-crawl-id": crawl.id },
        el("td", {}, badge(crawl.status)),
        el("td", { class: "url" }, el("a", { href: `/crawls/${crawl.id}`, text: crawl.url })),
        el("td", { class: "num", "data-count": "discovered", text: crawl.discovered }),
        el("td", { class: "num", "data-count": "pending", text: crawl.pending }),
        el("td", { class: "num", "data-count": "completed", text: crawl.completed }),
        el("td", { class: "num", "data-count": "failed", text: crawl.failed }),
        el("td", {}, time(crawl.created_at)),
      )));
    }
    const now = poll(refresh, POLL_MS);

    const crawlFormats = formatPicker("crawl-formats");
    $("crawl-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      const output = $("crawl-result");
      output.classList.remove("error");
      const url = $("crawl-url").value.trim();
      if (!url) {
        output.classList.add("error");
        output.textContent = "Enter the start URL.";
        $("crawl-url").focus();
        return;
      }
      const body = { url, formats: crawlFormats() };
      for (const [id, name] of [["crawl-limit", "limit"], ["crawl-depth", "max_depth"]]) {
        const value = $(id).value.trim();
        if (value !== "") body[name] = Number(value);
      }
      const button = $("crawl-button");
      button.disabled = true;
      try {
        const crawl = await api("POST", CRAWLS, body);
        output.replaceChildren("Started: ", el("a", { href: `/crawls/${crawl.id}`, text: crawl.url }));
        $("crawl-url").value = "";
        signature = "";
        now();
      } catch (error) {
        output.classList.add("error");
        output.textContent = `Not started: ${error.message}`;
      } finally {
        button.disabled = false;
      }
    });
    return now;
  }

  function crawlPage(id) {
    let jobsSignature = "";
    // The crawl's jobs are paged with the API's cursor, as the jobs list is: a page stays put
    // while new pages of the crawl are found (they sort before the first one).
    const pages = { cursor: null, previous: [], next: null };
    function renderCrawl(crawl) {
      $("crawl-status").replaceWith(Object.assign(badge(crawl.status), { id: "crawl-status" }));
      $("cancel-crawl").hidden = crawl.status !== "RUNNING";
      const finished = crawl.completed + crawl.failed + crawl.cancelled;
      const progress = $("crawl-progress");
      progress.max = Math.max(crawl.discovered, 1);
      progress.value = finished;
      $("crawl-progress-text").textContent = `${finished} of ${crawl.discovered} pages finished`;
      const pairs = [
        ["Start URL", crawl.url],
        ["Discovered", String(crawl.discovered)],
        ["Pending", String(crawl.pending)],
        ["Processing", String(crawl.processing)],
        ["Completed", String(crawl.completed)],
        ["Failed", String(crawl.failed)],
        ["Cancelled", String(crawl.cancelled)],
        ["Limit", String(crawl.limit)],
        ["Max depth", crawl.max_depth === null ? "—" : String(crawl.max_depth)],
        ["Formats", (crawl.formats || []).join(", ") || "—"],
        ["Render", crawl.render || "never"],
        ["Started", time(crawl.created_at)],
        ["Finished", time(crawl.finished_at)],
      ];
      $("crawl-meta").replaceChildren(...pairs.flatMap(([name, value]) => [
        el("dt", { text: name }),
        el("dd", { "data-field": name.toLowerCase().replace(" ", "_") }, value),
      ]));
    }
    function renderJobs(jobs) {
      const body = $("crawl-jobs-body");
      if (!jobs.length) {
        body.replaceChildren(el("tr", {}, el("td", { colspan: 4, class: "muted", text: "No page yet." })));
        return;
      }
      body.replaceChildren(...jobs.map((job) => el(
        "tr",
        { "data-job-id": job.id },
        el("td", {}, badge(job.status)),
        el("td", { class: "url" }, el("a", { href: `/jobs/${job.id}`, text: job.url })),
        el("td", { class: "num", text: job.depth ?? "—" }),
        el("td", {}, time(job.finished_at)),
      )));
    }
    async function refresh() {
      let crawl;
      try {
        crawl = await api("GET", `${CRAWLS}/${id}`);
      } catch (error) {
        if (error.status === 404) {
          showAlert("No crawl with this id, or not one this API key may see.");
          return;
        }
        throw error;
      }
      showAlert("");
      $("updated").textContent = `Updated ${new Date().toLocaleTimeString()}`;
      renderCrawl(crawl);
      const page = await api("GET", `${CRAWLS}/${id}/jobs` + query({ limit: PAGE_SIZE, cursor: pages.cursor }));
      pages.next = page.next_cursor;
      $("crawl-older").disabled = !pages.next;
      $("crawl-newer").disabled = pages.cursor === null;
      $("crawl-newest").disabled = pages.cursor === null;
      const first = pages.previous.length * PAGE_SIZE + 1;
      $("crawl-jobs-range").textContent = page.jobs.length
        ? `${first}–${first + page.jobs.length - 1} of ${crawl.discovered}`
        : "";
      const signature = JSON.stringify(page.jobs.map((j) => [j.id, j.status]));
      if (signature !== jobsSignature) {
        jobsSignature = signature;
        renderJobs(page.jobs);
      }
    }
    const now = poll(refresh, POLL_MS);
    function turn(cursor, previous) {
      pages.cursor = cursor;
      pages.previous = previous;
      jobsSignature = "";
      now();
    }
    $("crawl-older").addEventListener("click", () => {
      if (pages.next) turn(pages.next, [...pages.previous, pages.cursor]);
    });
    $("crawl-newer").addEventListener("click", () => {
      const previous = pages.previous.slice(0, -1);
      turn(pages.previous.length ? pages.previous[pages.previous.length - 1] : null, previous);
    });
    $("crawl-newest").addEventListener("click", () => turn(null, []));
    $("cancel-crawl").addEventListener("click", async () => {
      if (!window.confirm("Cancel this crawl? Its pending pages are cancelled.")) return;
      try {
        await api("DELETE", `${CRAWLS}/${id}`);
        showAlert("");
      } catch (error) {
        showAlert(error.message);
      }
      now();
    });
    return now;
  }

  // ------------------------------------------------------------------ start

  document.addEventListener("DOMContentLoaded", () => {
    const page = document.body.dataset.page;
    let refresh = () => {};
    setUpKeyDialog(() => refresh());
    if (page === "jobs") refresh = jobsPage();
    else if (page === "job") refresh = jobPage(document.body.dataset.jobId);
    else if (page === "search") refresh = searchPage();
    else if (page === "monitors") refresh = monitorsPage();
    else if (page === "monitor") refresh = monitorPage(document.body.dataset.monitorId);
    else if (page === "crawls") refresh = crawlsPage();
    else if (page === "crawl") refresh = crawlPage(document.body.dataset.crawlId);
  });
})();

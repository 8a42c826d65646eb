// One job's page: metadata, error, timings and its runs.

import { emptyChart } from "./charts.js";
import {
  $,
  FINISHED,
  JOBS,
  POLL_MS,
  api,
  badge,
  between,
  duration,
  el,
  poll,
  showAlert,
  svg,
  time,
} from "./common.js";

// ------------------------------------------------------------------ job page

export function jobPage(id) {
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

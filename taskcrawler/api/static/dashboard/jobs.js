// The jobs page: the table, filters, the submit form and charts.

import { failureChart, throughputChart } from "./charts.js";
import {
  $,
  BATCH,
  CHART_MS,
  CHART_SAMPLE,
  FINISHED,
  JOBS,
  PAGE_SIZE,
  POLL_MS,
  STATUSES,
  api,
  badge,
  between,
  duration,
  el,
  formatPicker,
  poll,
  query,
  request,
  showAlert,
  time,
} from "./common.js";

// ------------------------------------------------------------------ jobs page

export function jobsPage() {
  const params = new URLSearchParams(location.search);
  const state = {
    status: params.get("status") || "",
    host: params.get("host") || "",
    cursor: null,
    previous: [], // cursors of the pages before this one
    next: null,
    signature: "",
    turns: 0, // filter changes and page turns: an answer asked for before the last is dropped
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
    const asked = state.turns;
    const page = await api("GET", JOBS + query({
      status: state.status, host: state.host, limit: PAGE_SIZE, cursor: state.cursor,
    }));
    if (asked !== state.turns) return; // the poll asks again at once, for what is shown now
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
    state.turns += 1;
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
    state.next = null; // known again once this page's answer is in: Older waits for it
    $("older").disabled = true;
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

// One monitor's page: its pages and changes.

import { $, POLL_MS, api, el, poll, query, showAlert, time } from "./common.js";
import { MONITORS, monitorBadge } from "./monitors.js";

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

export function monitorPage(id) {
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

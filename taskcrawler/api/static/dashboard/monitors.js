// The monitors page.

import { $, PAGE_SIZE, POLL_MS, api, badge, el, poll, query, showAlert, time } from "./common.js";

// ------------------------------------------------------------------ monitors

export const MONITORS = "/api/v1/monitors";

export function monitorBadge(monitor) {
  return el("span", { class: `badge s-${monitor.status === "ACTIVE" ? "COMPLETED" : "CANCELLED"}`, text: monitor.status });
}

export function monitorsPage() {
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

/** What a monitor watches: its URLs, or the site its crawl starts from. */
function monitorTarget(monitor) {
  return monitor.crawl ? `site: ${monitor.crawl.url}` : monitor.urls.join(", ");
}

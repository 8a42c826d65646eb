// The crawls page.

import {
  $,
  PAGE_SIZE,
  POLL_MS,
  api,
  badge,
  el,
  formatPicker,
  poll,
  query,
  showAlert,
  time,
} from "./common.js";

// ------------------------------------------------------------------ crawls

export const CRAWLS = "/api/v1/crawls";

export function crawlsPage() {
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

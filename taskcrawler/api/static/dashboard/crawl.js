// One crawl's page: its counts, progress and pages.

import { $, PAGE_SIZE, POLL_MS, api, badge, el, poll, query, showAlert, time } from "./common.js";
import { CRAWLS } from "./crawls.js";

export function crawlPage(id) {
  let jobsSignature = "";
  // The crawl's jobs are paged with the API's cursor, as the jobs list is: a page stays put
  // while new pages of the crawl are found (they sort before the first one).
  // ``turns`` counts the page turns: an answer asked for before the last turn is dropped, or
  // it would show another page's jobs (and its cursor) under this page's place.
  const pages = { cursor: null, previous: [], next: null, turns: 0 };
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
    const asked = pages.turns;
    const page = await api("GET", `${CRAWLS}/${id}/jobs` + query({ limit: PAGE_SIZE, cursor: pages.cursor }));
    if (asked !== pages.turns) return; // turned meanwhile: the poll asks again at once
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
    pages.turns += 1;
    pages.next = null; // known again once this page's answer is in: Older waits for it
    $("crawl-older").disabled = true;
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

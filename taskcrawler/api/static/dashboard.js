/* TaskCrawler dashboard. Plain JavaScript, no dependencies, no build step: native ES modules,
 * one per page in dashboard/ (common.js and charts.js are shared), loaded from this one.
 *
 * The pages are static; everything on them comes from the JSON API (/api/v1/jobs...), polled while
 * the tab is visible. The API key, if the server wants one, lives in localStorage and is sent as
 * "Authorization: Bearer". Text from scraped pages is untrusted: it only ever reaches the DOM as
 * textContent or an attribute value, never as HTML.
 */

import { setUpKeyDialog } from "./dashboard/common.js";
import { crawlPage } from "./dashboard/crawl.js";
import { crawlsPage } from "./dashboard/crawls.js";
import { jobPage } from "./dashboard/job.js";
import { jobsPage } from "./dashboard/jobs.js";
import { monitorPage } from "./dashboard/monitor.js";
import { monitorsPage } from "./dashboard/monitors.js";
import { searchPage } from "./dashboard/search.js";

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
  // The page's forms are wired: what a script driving it (a browser test) waits for.
  document.documentElement.dataset.ready = "true";
});

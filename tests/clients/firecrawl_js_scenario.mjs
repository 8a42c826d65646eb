// @mendable/firecrawl-js against TaskCrawler, used as its README shows: node
// firecrawl_js_scenario.mjs CONFIG_JSON (api_url, site, tls, hook). Prints one JSON object: what
// each call returned (the fields the test reads), or the error it raised.
import { createRequire } from "node:module";
import Firecrawl from "@mendable/firecrawl-js";

const require = createRequire(import.meta.url);
const config = JSON.parse(process.argv[2]);
const { site, tls, hook } = config;
const app = new Firecrawl({ apiKey: "fc-YOUR-API-KEY", apiUrl: config.api_url });
const out = { version: require("@mendable/firecrawl-js/package.json").version };
// Pages of its own: one job per URL and key, and the other clients run at the same time.
const mine = "c=js";
// How long the scrape with actions may take, above the test deployment's render deadline
// (RENDER_SECONDS in tests/e2e/test_firecrawl_clients.py) so that deadline is what bounds it.
const ACTIONS_TIMEOUT_MS = 120000;

async function run(name, call) {
  try {
    out[name] = await call();
  } catch (error) {
    out[name] = { raised: String(error && error.message ? error.message : error) };
  }
}

await run("scrape_defaults", () => app.scrape(`${site}/article?${mine}`));
await run("scrape_whole_page", () =>
  app.scrape(`${site}/article?whole&${mine}`, {
    formats: ["markdown", "html", "rawHtml", "images"],
    onlyMainContent: false,
    maxAge: 0,
  }),
);
await run("scrape_tags", () =>
  app.scrape(`${site}/article?tags&${mine}`, { excludeTags: [".advert"], maxAge: 0 }),
);
await run("scrape_pdf", () => app.scrape(`${site}/doc.pdf?${mine}`, { parsers: ["pdf"] }));
await run("scrape_tls_skipped", () =>
  app.scrape(`${tls}/article?${mine}`, { skipTlsVerification: true, maxAge: 0 }),
);
await run("scrape_actions", () =>
  app.scrape(`${site}/article?actions&${mine}`, {
    formats: ["markdown"],
    actions: [
      { type: "executeJavascript", script: "document.title" },
      { type: "screenshot", fullPage: true },
      { type: "pdf", format: "A4" },
      { type: "scrape" },
    ],
    timeout: ACTIONS_TIMEOUT_MS,
  }),
);
await run("extract", () =>
  app.extract({
    urls: [`${site}/article?extract&${mine}`],
    schema: {
      type: "object",
      properties: { title: { type: "string" }, words: { type: "integer" } },
      required: ["title"],
    },
    pollInterval: 1,
  }),
);
await run("mapped", () => app.map(`${site}/crawl/0`, { sitemap: "skip" }));
let crawlId = null;
await run("crawl", async () => {
  const job = await app.crawl(`${site}/crawl/0`, {
    limit: 3,
    scrapeOptions: { formats: ["markdown"] },
    webhook: { url: `${hook}/crawl-js-${config.mode}`, events: ["page", "completed"] },
    pollInterval: 1,
  });
  crawlId = job.id;
  return { id: job.id, status: job.status, completed: job.completed, total: job.total };
});
await run("batch", async () => {
  const job = await app.batchScrape([`${site}/crawl/1?${mine}`, `${site}/crawl/2?${mine}`], {
    options: { formats: ["markdown"] },
    pollInterval: 1,
  });
  return { status: job.status, completed: job.completed, total: job.total };
});
await run("activeCrawls", () => app.getActiveCrawls());
await run("concurrency", () => app.getConcurrency());
await run("creditUsage", () => app.getCreditUsage());
if (crawlId) await run("crawlErrors", () => app.getCrawlErrors(crawlId));
console.log(JSON.stringify(out));

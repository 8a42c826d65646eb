// @mendable/firecrawl-js's scrape against a TaskCrawler whose route fails: node
// firecrawl_js_error.mjs CONFIG_JSON (api_url). Prints one JSON object: the error it raised.
import Firecrawl from "@mendable/firecrawl-js";

const config = JSON.parse(process.argv[2]);
const app = new Firecrawl({ apiKey: "fc-YOUR-API-KEY", apiUrl: config.api_url });
try {
  await app.scrape("https://example.com/");
  console.log(JSON.stringify({ raised: null }));
} catch (error) {
  console.log(JSON.stringify({ raised: String(error && error.message ? error.message : error) }));
}

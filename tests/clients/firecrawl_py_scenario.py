"""firecrawl-py's v2 client against TaskCrawler, used as its docs show: each call with the SDK's
defaults, then with the options users send. Run as a script (so that two releases of the SDK can
be tried, each from its own directory on PYTHONPATH):

    python firecrawl_py_scenario.py CONFIG_JSON

CONFIG_JSON has ``mode`` (the service's, for the webhooks' names), ``api_url``, ``site`` (the
local site's base URL), ``tls`` (its HTTPS base URL) and ``hook`` (a webhook receiver's URL). Prints
one JSON object: what each call returned (the fields the test reads) or the error it raised.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import firecrawl
from firecrawl import Firecrawl
from firecrawl.v2.types import (
    ExecuteJavascriptAction,
    Location,
    PDFAction,
    PDFParser,
    ScrapeAction,
    ScrapeOptions,
    ScreenshotAction,
    WebhookConfig,
)

#: How long the scrape with actions may take, above the test deployment's render deadline
#: (RENDER_SECONDS in tests/e2e/test_firecrawl_clients.py) so that deadline is what bounds it.
ACTIONS_TIMEOUT_MS = 120_000
#: What /v2/extract is asked for (the test's fake model answers it).
EXTRACT_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "words": {"type": "integer"}},
    "required": ["title"],
}


def _doc(doc: Any) -> dict[str, Any]:
    metadata = doc.metadata
    return {
        "markdown": doc.markdown,
        "html": doc.html,
        "raw_html": doc.raw_html,
        "links": doc.links,
        "images": getattr(doc, "images", None),
        "title": metadata.title if metadata else None,
        "status_code": metadata.status_code if metadata else None,
        "scrape_id": getattr(metadata, "scrape_id", None) if metadata else None,
        "error": getattr(metadata, "error", None) if metadata else None,
        "change_tracking": _plain(getattr(doc, "change_tracking", None)),
    }


def _acted(doc: Any) -> dict[str, Any]:
    return {**_doc(doc), "actions": _plain(doc.actions)}


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


def run(results: dict[str, Any], name: str, call: Callable[[], Any]) -> None:
    try:
        results[name] = call()
    except Exception as exc:
        results[name] = {"raised": f"{type(exc).__name__}: {exc}"}


def main() -> None:
    config = json.loads(sys.argv[1])
    site, tls, hook = config["site"], config["tls"], config["hook"]
    run_name = f"{config['mode']}-{firecrawl.__version__}"
    # Each client scrapes pages of its own (one job per URL and key: the clients run at once).
    mine = f"c=py-{firecrawl.__version__}"
    # Firecrawl's docs use a placeholder key; TaskCrawler without keys takes it as anonymous.
    fc = Firecrawl(api_key="fc-YOUR-API-KEY", api_url=config["api_url"])
    out: dict[str, Any] = {"version": firecrawl.__version__}

    run(out, "scrape_defaults", lambda: _doc(fc.scrape(f"{site}/article?{mine}")))
    run(
        out,
        "scrape_whole_page",
        lambda: _doc(
            fc.scrape(
                f"{site}/article?whole&{mine}",
                formats=["markdown", "html", "rawHtml", "links", "images"],
                only_main_content=False,
                remove_base64_images=False,
                max_age=0,
            )
        ),
    )
    run(
        out,
        "scrape_tags",
        lambda: _doc(
            fc.scrape(
                f"{site}/article?tags&{mine}",
                formats=["markdown", "html"],
                include_tags=["article"],
                exclude_tags=[".advert", "figure"],
                max_age=0,
            )
        ),
    )
    run(
        out,
        "scrape_headers",
        lambda: _doc(
            fc.scrape(
                f"{site}/headers?sdk={firecrawl.__version__}",
                headers={"X-Secret": "s3cret-value", "Cookie": "session=abc123"},
                location=Location(country="DE", languages=["de-DE", "en"]),
                max_age=0,
            )
        ),
    )
    run(
        out,
        "scrape_redirect",
        lambda: _doc(
            fc.scrape(
                f"{site}/redirect-away?sdk={firecrawl.__version__}",
                headers={"X-Secret": "s3cret-value"},
                max_age=0,
            )
        ),
    )
    run(out, "scrape_tls_defaults", lambda: _doc(fc.scrape(f"{tls}/article?{mine}", max_age=0)))
    run(
        out,
        "scrape_tls_skipped",
        lambda: _doc(fc.scrape(f"{tls}/article?{mine}", skip_tls_verification=True, max_age=0)),
    )
    run(out, "scrape_pdf", lambda: _doc(fc.scrape(f"{site}/doc.pdf?{mine}", max_age=0)))
    run(
        out,
        "scrape_pdf_one_page",
        lambda: _doc(
            fc.scrape(f"{site}/doc.pdf?one&{mine}", parsers=[PDFParser(max_pages=1)], max_age=0)
        ),
    )
    tracked = ["markdown", {"type": "changeTracking", "modes": ["git-diff"]}]
    for page in ("tick", "static", "once"):
        url = f"{site}/changing/{page}-{firecrawl.__version__}"
        run(out, f"track_{page}_1", lambda url=url: _doc(fc.scrape(url, formats=tracked)))
        run(out, f"track_{page}_2", lambda url=url: _doc(fc.scrape(url, formats=tracked)))
    run(
        out,
        "scrape_block_ads",
        lambda: _doc(fc.scrape(f"{site}/article?ads&{mine}", block_ads=True)),
    )
    run(
        out,
        "scrape_actions",
        lambda: _acted(
            fc.scrape(
                f"{site}/article?actions&{mine}",
                formats=["markdown"],
                actions=[
                    ExecuteJavascriptAction(script="document.title"),
                    ScreenshotAction(full_page=True),
                    PDFAction(format="A4"),
                    ScrapeAction(),
                ],
                timeout=ACTIONS_TIMEOUT_MS,
            )
        ),
    )
    run(
        out,
        "extract",
        lambda: _plain(
            fc.extract(
                [f"{site}/article?extract&{mine}"],
                schema=EXTRACT_SCHEMA,
                poll_interval=1,
                timeout=60,
            )
        ),
    )
    run(
        out,
        "crawl",
        lambda: _crawl(
            fc.crawl(
                f"{site}/crawl/0",
                limit=5,
                delay=1,
                max_concurrency=2,
                scrape_options=ScrapeOptions(
                    formats=["markdown"],
                    only_main_content=False,
                    headers={"X-Run": f"delay-{run_name}"},
                ),
                webhook=WebhookConfig(
                    url=f"{hook}/crawl-{run_name}",
                    headers={"X-Receiver-Token": "rt-1"},
                    metadata={"run": run_name},
                ),
                poll_interval=1,
            )
        ),
    )
    run(
        out,
        "crawl_one_at_a_time",
        lambda: _crawl(
            fc.crawl(
                f"{site}/crawl/0?one-{run_name}",
                limit=5,
                max_concurrency=1,
                scrape_options=ScrapeOptions(
                    formats=["markdown"], headers={"X-Run": f"one-{run_name}", "X-Slow": "0.3"}
                ),
                poll_interval=1,
            )
        ),
    )
    run(
        out,
        "batch",
        lambda: _crawl(
            fc.batch_scrape(
                [f"{site}/crawl/1?{mine}", f"{site}/crawl/2?{mine}"],
                formats=["markdown", "links"],
                webhook=WebhookConfig(url=f"{hook}/batch-{run_name}", events=["page", "completed"]),
                poll_interval=1,
            )
        ),
    )
    run(out, "active_crawls", lambda: _plain(fc.get_active_crawls()))
    run(out, "concurrency", lambda: _plain(fc.get_concurrency()))
    run(out, "credit_usage", lambda: _plain(fc.get_credit_usage()))
    run(out, "token_usage", lambda: _plain(fc.get_token_usage()))
    run(out, "queue_status", lambda: _plain(fc.get_queue_status()))
    if isinstance(out.get("crawl"), dict) and "id" in out["crawl"]:
        run(out, "crawl_errors", lambda: _plain(fc.get_crawl_errors(out["crawl"]["id"])))
    print(json.dumps(out))


def _crawl(job: Any) -> dict[str, Any]:
    return {
        "id": getattr(job, "id", None),
        "status": job.status,
        "completed": job.completed,
        "total": job.total,
        "documents": [_doc(doc) for doc in job.data],
    }


if __name__ == "__main__":
    main()

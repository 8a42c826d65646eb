"""Scrapy fetching and extracting the same pages: ``python -m bench.scrapy_run --target URL``.

The spider extracts what TaskCrawler's metadata extraction does in spirit (title, description,
keywords, OpenGraph, canonical, links) and drops the items (no feed export), so only fetching and
extracting is measured. Prints one JSON line. Scrapy is a benchmark-only dependency (``.[bench]``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", required=True)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--max-seconds", type=float, default=300.0)
    args = parser.parse_args()

    import scrapy
    from scrapy.crawler import CrawlerProcess

    state: dict[str, Any] = {"items": 0, "first": None, "last": None}

    class PagesSpider(scrapy.Spider):
        name = "bench_pages"

        async def start(self) -> AsyncIterator[scrapy.Request]:
            # One seed; its callback enqueues the rest at once, the way a crawl discovers links
            # (Scrapy pulls start requests lazily, which would cap the requests in flight).
            yield scrapy.Request(f"{args.target}/robots.txt", callback=self.seed)

        def seed(self, response: Any) -> Iterator[scrapy.Request]:
            for n in range(args.start, args.start + args.count):
                yield scrapy.Request(f"{args.target}/p/{n}", callback=self.parse)

        def parse(self, response: Any) -> Iterator[dict[str, Any]]:
            if state["first"] is None:
                state["first"] = time.perf_counter()
            item = {
                "url": response.url,
                "title": response.css("title::text").get(),
                "description": response.css('meta[name="description"]::attr(content)').get(),
                "keywords": response.css('meta[name="keywords"]::attr(content)').get(),
                "og": dict(
                    zip(
                        response.css("meta[property^='og:']::attr(property)").getall(),
                        response.css("meta[property^='og:']::attr(content)").getall(),
                        strict=False,
                    )
                ),
                "canonical": response.css('link[rel="canonical"]::attr(href)').get(),
                "links": [response.urljoin(h) for h in response.css("a::attr(href)").getall()],
            }
            state["items"] += 1
            state["last"] = time.perf_counter()
            yield item

    process = CrawlerProcess(
        settings={
            "LOG_LEVEL": "ERROR",
            "ROBOTSTXT_OBEY": False,
            "CONCURRENT_REQUESTS": args.concurrency,
            # Scrapy 2.13+ starts CONCURRENT_ITEMS asyncio tasks for each callback output; with
            # one item a page, the default 100 costs more than the page itself.
            "CONCURRENT_ITEMS": 1,
            "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
            "DOWNLOAD_DELAY": 0,
            "COOKIES_ENABLED": False,
            "TELNETCONSOLE_ENABLED": False,
            "REMOTE_CONTROL_ENABLED": False,
            "CLOSESPIDER_TIMEOUT": args.max_seconds,
            "HTTPCACHE_ENABLED": False,
            "AUTOTHROTTLE_ENABLED": False,
        }
    )
    process.crawl(PagesSpider)
    started = time.perf_counter()
    process.start()
    elapsed = time.perf_counter() - started
    print(
        json.dumps(
            {
                "pages": state["items"],
                "seconds": elapsed,
                "per_second": state["items"] / elapsed if elapsed else 0.0,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()

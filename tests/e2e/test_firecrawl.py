"""The official ``firecrawl-py`` SDK (v2 and v1) against a running TaskCrawler on a local site:
Firecrawl's shapes, statuses and error bodies, TaskCrawler keys as Firecrawl keys."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.support.firecrawl_sdk import v1_client, v2_client
from tests.support.served import Served
from tests.support.target import TargetServer


async def test_the_v2_sdk_scrapes_and_maps(firecrawl_served: Served, target: TargetServer) -> None:
    key = await firecrawl_served.new_key("firecrawl")
    fc = v2_client(key, firecrawl_served.base_url)
    url = target.url("/title/Firecrawled")

    doc = await asyncio.to_thread(fc.scrape, url, formats=["markdown", "html", "rawHtml", "links"])
    assert "Firecrawled" in doc.markdown
    assert doc.raw_html and "<title>Firecrawled</title>" in doc.raw_html
    # html is the cleaned HTML of what the Markdown holds; rawHtml the page as fetched.
    assert doc.html and "<h1>Firecrawled</h1>" in doc.html and "<title>" not in doc.html
    assert doc.metadata.title == "Firecrawled"
    assert doc.metadata.status_code == 200 and doc.metadata.source_url == url
    assert isinstance(doc.links, list)

    again = await asyncio.to_thread(fc.scrape, url, formats=["markdown"], max_age=0)
    assert again.markdown == doc.markdown  # scraped afresh, same page

    missing = await asyncio.to_thread(fc.scrape, target.url("/status/404"), formats=["markdown"])
    assert missing.metadata.status_code == 404 and missing.metadata.error

    site = await asyncio.to_thread(fc.map, target.url("/page/1"), sitemap="skip", limit=10)
    assert target.url("/page/2") in [link.url for link in site.links]


# The v1 SDK still calls pydantic's v1-style .dict().
@pytest.mark.filterwarnings("ignore:The `dict` method is deprecated:DeprecationWarning")
async def test_the_v1_sdk_scrapes_and_maps(firecrawl_served: Served, target: TargetServer) -> None:
    key = await firecrawl_served.new_key("firecrawl-v1")
    app = v1_client(key, firecrawl_served.base_url)
    url = target.url("/title/Version1")
    doc = await asyncio.to_thread(app.scrape_url, url, formats=["markdown", "links"])
    assert "Version1" in doc.markdown and doc.metadata["title"] == "Version1"
    mapped = await asyncio.to_thread(app.map_url, target.url("/page/1"), ignore_sitemap=True)
    assert target.url("/page/2") in mapped.links


@pytest.mark.filterwarnings("ignore:The `dict` method is deprecated:DeprecationWarning")
async def test_the_sdks_batch_scrape_and_read_the_status(
    firecrawl_served: Served, target: TargetServer
) -> None:
    key = await firecrawl_served.new_key("batch")
    urls = [target.url(f"/title/Batch{n}") for n in range(3)]
    fc = v2_client(key, firecrawl_served.base_url)
    job = await asyncio.to_thread(fc.batch_scrape, urls, formats=["markdown"], poll_interval=1)
    assert job.status == "completed" and (job.completed, job.total) == (3, 3)
    titles = sorted(doc.metadata.title for doc in job.data)
    assert titles == ["Batch0", "Batch1", "Batch2"]
    assert all(f"{doc.metadata.title}" in doc.markdown for doc in job.data)

    with_invalid = await asyncio.to_thread(
        fc.start_batch_scrape, [urls[0], "http://example.com:0/"], ignore_invalid_urls=True
    )
    assert with_invalid.invalid_urls == ["http://example.com:0/"]

    app = v1_client(key, firecrawl_served.base_url)
    v1 = await asyncio.to_thread(
        app.batch_scrape_urls, urls[:2], formats=["markdown"], poll_interval=1
    )
    assert v1.status == "completed" and len(v1.data) == 2

    async with httpx.AsyncClient(base_url=firecrawl_served.base_url, timeout=30) as http:
        other = await firecrawl_served.new_key("other")
        hidden = await http.get(
            f"/v2/batch/scrape/{with_invalid.id}", headers={"Authorization": f"Bearer {other}"}
        )
        assert hidden.status_code == 404 and hidden.json()["success"] is False
        refused = await http.post(
            "/v2/batch/scrape",
            json={"urls": [urls[0], "http://example.com:0/"]},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert refused.status_code == 400 and "urls[1]" in refused.json()["error"]


async def test_unsupported_fields_and_bad_keys_are_firecrawl_errors(
    firecrawl_served: Served, target: TargetServer
) -> None:
    key = await firecrawl_served.new_key("firecrawl-errors")
    headers = {"Authorization": f"Bearer {key}"}
    url = target.url("/page/3")
    async with httpx.AsyncClient(
        base_url=firecrawl_served.base_url, headers=headers, timeout=30
    ) as http:
        for version in ("v1", "v2"):
            for body, named in [
                ({"url": url, "formats": ["pdfText"]}, "pdfText"),
                ({"url": url, "formats": ["json"]}, "jsonOptions: needs a schema, a prompt"),
                ({"url": url, "formats": ["summary"]}, "TASKCRAWLER_LLM_URL"),
                ({"url": url, "includeTags": ["p:nth-child(2)"]}, "includeTags[0]"),
                ({"url": url, "headers": {"Host": "evil.test"}}, "headers['Host']"),
                ({"url": url, "actions": [{"type": "click"}]}, "actions"),
                ({"url": url, "waitFor": 60_001}, "waitFor"),
                ({"url": url, "waitFor": -1}, "waitFor"),
                ({"url": url, "formats": ["screenshot", "screenshot@fullPage"]}, "one screenshot"),
                ({"url": url, "formats": [{"type": "screenshot", "quality": 80}]}, "quality"),
                ({"url": url, "formats": [{"type": "screenshot", "fullPage": 1}]}, "fullPage"),
                ({"url": url, "formats": [{"type": "screenshot", "zoom": 2}]}, "zoom"),
                (
                    {"url": url, "formats": [{"type": "screenshot", "viewport": {"width": 10}}]},
                    "formats[0].viewport",
                ),
                (
                    {
                        "url": url,
                        "formats": [
                            "markdown",
                            {"type": "screenshot", "viewport": {"width": 99, "height": 800}},
                        ],
                    },
                    "formats[1].viewport: width and height must be between 200",
                ),
                ({"url": url, "frobnicate": 1}, "frobnicate"),
                ({"url": "ftp://example.com/"}, "url"),
            ]:
                refused = await http.post(f"/{version}/scrape", json=body)
                assert refused.status_code == 400, (version, body, refused.text)
                answer = refused.json()
                assert answer["success"] is False and named in answer["error"], answer
        fc = v2_client(key, firecrawl_served.base_url)
        with pytest.raises(Exception, match="includeTags"):
            await asyncio.to_thread(fc.scrape, url, include_tags=["a:hover"])

        anonymous = await http.post("/v2/scrape", json={"url": url}, headers={"Authorization": ""})
    assert anonymous.status_code == 401
    assert anonymous.json() == {"success": False, "error": anonymous.json()["error"]}
    assert "API key" in anonymous.json()["error"]
    assert anonymous.headers["www-authenticate"] == "Bearer"

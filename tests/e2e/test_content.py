"""Formats beyond metadata: content as Markdown/text/HTML, links, backlinks, on both modes."""

import uuid

from tests.e2e.harness import Service


async def _scrape(service: Service, url: str, formats: list[str]) -> dict:
    response = await service.client.post("/api/v1/jobs", json={"url": url, "formats": formats})
    assert response.status_code == 201, response.text
    return await service.wait_for(response.json()["id"])


async def test_metadata_and_markdown_by_default(service: Service, target) -> None:
    job = await service.scrape(target.url("/page/3"))
    assert job["formats"] == ["metadata", "markdown"]
    metadata = job["result"]["metadata"]
    assert metadata["title"] == "Page 3"
    assert set(metadata) >= {"description", "canonical_url", "open_graph", "links", "word_count"}
    markdown = await service.client.get(f"/api/v1/jobs/{job['id']}/content")
    assert markdown.status_code == 200 and "page 3 of the test target" in markdown.text
    for fmt in ("text", "html"):
        response = await service.client.get(
            f"/api/v1/jobs/{job['id']}/content", params={"format": fmt}
        )
        assert response.status_code == 409
        assert (
            "submit its URL again (POST /api/v1/jobs) with formats including it"
            in (response.json()["detail"])
        )


async def test_markdown_text_and_html_when_asked(service: Service, target) -> None:
    job = await _scrape(service, target.url("/page/4"), ["metadata", "markdown", "text", "html"])
    assert job["status"] == "COMPLETED"
    markdown = await service.client.get(f"/api/v1/jobs/{job['id']}/content")
    assert markdown.status_code == 200
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.text.strip()
    text = await service.client.get(f"/api/v1/jobs/{job['id']}/content", params={"format": "text"})
    assert text.headers["content-type"].startswith("text/plain")
    html = await service.client.get(f"/api/v1/jobs/{job['id']}/content", params={"format": "html"})
    assert "<title>Page 4</title>" in html.text


async def test_links_and_backlinks(service: Service, target) -> None:
    source = await _scrape(service, target.url("/page/5"), ["links"])
    page = await service.client.get(f"/api/v1/jobs/{source['id']}/links", params={"limit": 1000})
    assert page.status_code == 200
    links = page.json()["links"]
    assert links, "the target's pages link to other pages"
    assert all(link["url"].startswith("http") for link in links)
    first = links[0]["url"]
    back = await service.client.get("/api/v1/links", params={"target": first})
    assert back.status_code == 200
    assert source["id"] in {link["job_id"] for link in back.json()["links"]}
    assert back.json()["links"][0]["source_url"] == target.url("/page/5")
    # Another tenant sees no backlinks and cannot read the links.
    other = await service.new_key("other")
    assert (
        await service.client.get("/api/v1/links", params={"target": first}, headers=other)
    ).json()["links"] == []
    hidden = await service.client.get(f"/api/v1/jobs/{source['id']}/links", headers=other)
    assert hidden.status_code == 404


async def test_content_of_unknown_job_is_404(service: Service) -> None:
    response = await service.client.get(f"/api/v1/jobs/{uuid.uuid4()}/content")
    assert response.status_code == 404


async def test_unknown_format_is_422(service: Service) -> None:
    response = await service.client.post(
        "/api/v1/jobs", json={"url": "http://x.invalid/", "formats": ["pdf"]}
    )
    assert response.status_code == 422


async def test_a_rescrape_replaces_the_links_and_texts(service: Service, target) -> None:
    url = target.url("/page/8")
    first = await _scrape(service, url, ["markdown", "links"])
    links = f"/api/v1/jobs/{first['id']}/links"
    before = (await service.client.get(links, params={"limit": 1000})).json()["links"]
    stale = await service.client.post(
        "/api/v1/jobs", json={"url": url, "formats": ["markdown", "links"], "max_age": 0}
    )
    assert stale.json()["run_count"] == 1
    rerun = await service.wait_for(first["id"])
    assert rerun["status"] == "COMPLETED", rerun
    after = (await service.client.get(links, params={"limit": 1000})).json()["links"]
    assert [link["url"] for link in after] == [link["url"] for link in before]
    markdown = await service.client.get(f"/api/v1/jobs/{first['id']}/content")
    assert markdown.status_code == 200 and markdown.text.strip()

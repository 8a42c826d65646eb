"""A Firecrawl route asked with a method it does not take is a 405 naming the ones it takes,
not the 404 that says TaskCrawler does not offer the route at all."""

from __future__ import annotations

import httpx

from taskcrawler.api import create_app
from taskcrawler.settings import Settings


async def test_a_route_offered_with_another_method_is_a_405(sqlite_url: str) -> None:
    app = create_app(Settings(_env_file=None, database_url=sqlite_url))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            scrape = await http.get("/v2/scrape")
            crawl = await http.put("/v1/crawl/00000000-0000-4000-8000-000000000000")
            agent = await http.post("/v2/agent")
    assert scrape.status_code == 405 and scrape.headers["allow"] == "POST"
    assert scrape.json()["success"] is False and "POST" in scrape.json()["error"]
    assert crawl.status_code == 405 and crawl.headers["allow"] == "DELETE, GET"
    assert agent.status_code == 404 and "does not offer" in agent.json()["error"]

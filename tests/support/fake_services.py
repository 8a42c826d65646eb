"""Local fakes of the servers an operator configures: an OpenAI-compatible chat endpoint
that also misbehaves, an OpenAI-compatible embeddings endpoint, and a SearXNG instance. All
run in the test's event loop.

The fake model's behaviour is chosen by a word in the request's last user message (the page's
Markdown holds its title, so a page titled ``llm-slow`` makes the model slow):

``llm-slow`` sleeps past any deadline; ``llm-429`` answers 429 with ``Retry-After: 0`` once
per request, then answers; ``llm-5xx`` always answers 503; ``llm-garbage`` answers a body that
is not JSON; ``llm-prose`` answers text that is not JSON; ``llm-breaks`` answers JSON that
breaks the schema; ``llm-fixes`` breaks it once, then answers right; ``llm-endless`` streams a
body without end. Anything else is answered ``{"title": <the page's title word>, "words": 2}``
(or, for a summary, a sentence). ``refuse_structured`` makes it answer 400 to
``response_format``, as a server without structured output does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

_TITLE = re.compile(r"\b(llm-[a-z0-9]+|page-[a-z0-9-]+)\b")


@dataclass
class FakeLLM:
    refuse_structured: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    _seen: dict[str, int] = field(default_factory=dict)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        asked = body["messages"][-1]["content"]
        page = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        found = _TITLE.search(page)
        word = found.group(1) if found else "untitled"
        if self.refuse_structured and "response_format" in body:
            return web.json_response({"error": "response_format is not supported"}, status=400)
        count = self._seen[asked] = self._seen.get(asked, 0) + 1
        if word == "llm-slow":
            await asyncio.sleep(30)
        if word == "llm-429" and count == 1:
            return web.json_response({"error": "busy"}, status=429, headers={"Retry-After": "0"})
        if word == "llm-toolong":  # a 400 that is not about response_format
            error = {"message": "This model's maximum context length is 4096 tokens"}
            return web.json_response({"error": error}, status=400)
        if word == "llm-5xx":
            return web.json_response({"error": "down"}, status=503)
        if word == "llm-garbage":
            return web.Response(text="<html>gateway</html>", content_type="text/html")
        if word == "llm-endless":
            return await _endless(request)
        summary = "summar" in body["messages"][0]["content"].lower()
        answer = _answer(word, summary=summary, again=asked.startswith("That answer"))
        return web.json_response(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}],
            }
        )


def _answer(word: str, *, summary: bool, again: bool) -> str:
    if summary:
        return f"A page about {word}."
    if word == "llm-prose":
        return "Sure! The title is probably something like the heading."
    if word == "llm-breaks" or (word == "llm-fixes" and not again):
        return json.dumps({"title": 42})
    return "```json\n" + json.dumps({"title": word, "words": 2}) + "\n```"


async def _endless(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    await response.write(b'{"choices": [{"message": {"content": "')
    with contextlib.suppress(ConnectionError, asyncio.CancelledError):
        while True:
            await response.write(b"x" * 65536)
            await asyncio.sleep(0)
    return response


@dataclass
class FakeSearxng:
    """``GET /search?format=json``: ten results a page for any query, pointing at ``site``
    (its ``/title/...`` pages), plus one unfetchable URL the results must drop. A query
    ``searx-down`` answers 500; ``searx-html`` answers HTML (the JSON format disabled)."""

    site: str = "http://127.0.0.1:9/"
    pages: int = 3
    requests: list[dict[str, str]] = field(default_factory=list)
    #: From this page on, answer 500 (``"fail"``) or never (``"stall"``).
    broken_from: int | None = None
    breakage: str = "fail"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        params = dict(request.query)
        self.requests.append(params)
        query = params.get("q", "")
        if query == "searx-down":
            return web.json_response({"error": "down"}, status=500)
        if query == "searx-html" or params.get("format") != "json":
            return web.Response(text="<html>403</html>", content_type="text/html", status=200)
        page = int(params.get("pageno", "1"))
        if self.broken_from is not None and page >= self.broken_from:
            if self.breakage == "stall":
                await asyncio.Event().wait()
            return web.json_response({"error": "down"}, status=500)
        if page > self.pages:
            return web.json_response({"query": query, "results": []})
        results: list[dict[str, Any]] = [{"url": "javascript:alert(1)", "title": "bad"}]
        for n in range(10):
            number = (page - 1) * 10 + n
            results.append(
                {
                    "url": f"{self.site}title/page-{number}",
                    "title": f"  Result   {number} ",
                    "content": f"About result {number}",
                    "publishedDate": "2026-12-01T00:00:00",
                    "img_src": f"{self.site}image-{number}.png",
                }
            )
        return web.json_response({"query": query, "number_of_results": 30, "results": results})


@dataclass
class FakeEmbeddings:
    """An OpenAI-compatible ``/v1/embeddings``: each request gets the next scripted answer
    (``"ok"`` by default; a status code; ``"slow"``; ``"hang"``, until :attr:`released`), and
    is recorded."""

    script: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)
    #: What a ``"hang"`` answer waits for: it answers only once this is set.
    released: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self.authorizations.append(request.headers.get("Authorization"))
        answer = self.script.pop(0) if self.script else "ok"
        if answer == "slow":
            await asyncio.sleep(5)
        if answer == "hang":
            await self.released.wait()
        if answer.isdigit():
            return web.json_response(
                {"error": "scripted"}, status=int(answer), headers={"Retry-After": "0"}
            )
        inputs = body["input"]
        if answer == "short":
            inputs = inputs[:-1]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(text)), 3.0, 4.0]}
            for i, text in reversed(list(enumerate(inputs)))  # any order: "index" says
        ]
        if answer == "empty":
            data[0]["embedding"] = []
        return web.json_response({"object": "list", "data": data, "model": body["model"]})


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """``app`` on a free port of 127.0.0.1: its base URL."""
    # A slow or endless answer still in flight is cut at once when the fake stops.
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def fake_llm(**options: Any) -> AsyncIterator[tuple[FakeLLM, str]]:
    """A fake model and its base URL (``…/v1``)."""
    fake = FakeLLM(**options)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", fake.handle)
    async with serving(app) as url:
        yield fake, f"{url}/v1"


@contextlib.asynccontextmanager
async def fake_searxng(site: str) -> AsyncIterator[tuple[FakeSearxng, str]]:
    fake = FakeSearxng(site)
    app = web.Application()
    app.router.add_get("/search", fake.handle)
    async with serving(app) as url:
        yield fake, url


@contextlib.asynccontextmanager
async def fake_embeddings() -> AsyncIterator[tuple[FakeEmbeddings, str]]:
    """A fake OpenAI-compatible embeddings server and its base URL (``…/v1``)."""
    fake = FakeEmbeddings()
    app = web.Application()
    app.router.add_post("/v1/embeddings", fake.handle)
    async with serving(app) as url:
        yield fake, f"{url}/v1"

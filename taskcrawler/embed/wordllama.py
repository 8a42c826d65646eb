"""WordLlama: a static embedding model (256 dimensions) whose weights ship in its wheel.

It is loaded from the package's own folder with downloads disabled: its default ``load()``
looks for the tokenizer's configuration elsewhere and would try the network. Embedding runs in
one thread of its own, one batch at a time, under a deadline: the tokenizer and numpy release
the GIL for most of the work, so the event loop keeps fetching meanwhile.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from taskcrawler.embed import EmbedderConfig, EmbeddingFailed, Vector

MODEL_CONFIG = "l2_supercat"
DIMENSIONS = 256


class WordLlamaEmbedder:
    def __init__(self, config: EmbedderConfig) -> None:
        self._config = config
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return f"wordllama/{MODEL_CONFIG}-{DIMENSIONS}"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from pathlib import Path

                import wordllama

                self._model = wordllama.WordLlama.load(
                    config=MODEL_CONFIG,
                    cache_dir=Path(wordllama.__file__).parent,
                    dim=DIMENSIONS,
                    disable_download=True,
                )
            return self._model

    def _embed(self, texts: list[str]) -> list[Vector]:
        vectors = self._load().embed(texts, norm=True, batch_size=self._config.batch_size)
        return [list(map(float, row)) for row in vectors.tolist()]

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(
                loop.run_in_executor(self._executor, self._embed, list(texts)),
                self._config.timeout_seconds,
            )
        except TimeoutError:
            raise EmbeddingFailed(
                f"embedding {len(texts)} texts took over {self._config.timeout_seconds:g}s",
                transient=True,
            ) from None

    async def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

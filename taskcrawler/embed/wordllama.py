"""WordLlama: a static embedding model (256 dimensions) whose weights ship in its wheel.

It is loaded from the package's own folder with downloads disabled: its default ``load()``
looks for the tokenizer's configuration elsewhere and would try the network. It runs in a child
process of its own (:class:`~taskcrawler.common.processes.ProcessPool`), one batch at a time under
a deadline, a batch that overruns it killing only that child: in a thread of the worker it held
the GIL long enough to make a 10 ms timer on the event loop fire up to 156 ms late, which is
what every fetch in flight would have felt. The model's memory is the child's, not the worker's.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

from taskcrawler.common.processes import CallTimeout, ChildDied, ProcessPool
from taskcrawler.embed.base import EmbedderConfig, EmbeddingFailed, Purpose, Vector

MODEL_CONFIG = "l2_supercat"
DIMENSIONS = 256
#: The child is replaced once it holds more than this (the model itself is about 80 MiB).
RECYCLE_ABOVE_MB = 1024

_model: Any = None


def _load() -> Any:
    global _model  # one model per child process, loaded by its first call
    if _model is None:
        from pathlib import Path

        import wordllama

        _model = wordllama.WordLlama.load(
            config=MODEL_CONFIG,
            cache_dir=Path(wordllama.__file__).parent,
            dim=DIMENSIONS,
            disable_download=True,
        )
    return _model


def embed_in_child(texts: list[str], batch_size: int) -> bytes:
    """Unit vectors of ``texts`` as float32 bytes, row after row (compact to send back)."""
    import numpy as np

    vectors = _load().embed(texts, norm=True, batch_size=batch_size)
    return bytes(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())


class WordLlamaEmbedder:
    def __init__(self, config: EmbedderConfig) -> None:
        self._config = config
        self._pool = ProcessPool(
            1,
            config.timeout_seconds,
            preload=["taskcrawler.embed.wordllama"],
            recycle_above_mb=RECYCLE_ABOVE_MB,
        )

    @property
    def model(self) -> str:
        return self._config.space(f"wordllama/{MODEL_CONFIG}-{DIMENSIONS}")

    async def embed(self, texts: Sequence[str], *, purpose: Purpose = "document") -> list[Vector]:
        if not texts:
            return []
        inputs = self._config.prefixed(texts, purpose)
        try:
            raw = await self._pool.run(embed_in_child, inputs, self._config.batch_size)
        except CallTimeout:
            raise EmbeddingFailed(
                f"embedding {len(texts)} texts took over {self._config.timeout_seconds:g}s",
                transient=True,
            ) from None
        except ChildDied as exc:
            raise EmbeddingFailed(f"the embedding process died: {exc}", transient=True) from None
        floats = array("f")
        floats.frombytes(raw)
        return [floats[i : i + DIMENSIONS].tolist() for i in range(0, len(floats), DIMENSIONS)]

    async def close(self) -> None:
        await self._pool.aclose()

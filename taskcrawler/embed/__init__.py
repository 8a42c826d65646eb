"""Embedders: texts in, unit-length vectors out, behind one Protocol.

``wordllama`` (the default) runs a small static model whose weights ship inside its wheel, in a
thread of its own so that the event loop keeps fetching; ``openai`` asks any OpenAI-compatible
``/v1/embeddings`` server. Each module is imported only when chosen: numpy and the model are
not loaded by a process that never embeds.
"""

from __future__ import annotations

from taskcrawler.embed.base import (
    Embedder,
    EmbedderConfig,
    EmbeddingFailed,
    Purpose,
    Vector,
    normalized,
)


def build_embedder(config: EmbedderConfig) -> Embedder:
    if config.kind == "wordllama":
        from taskcrawler.embed.wordllama import WordLlamaEmbedder

        return WordLlamaEmbedder(config)
    if config.kind == "openai":
        from taskcrawler.embed.openai import OpenAIEmbedder

        return OpenAIEmbedder(config)
    raise ValueError(f"unknown embedder {config.kind!r}: use wordllama or openai")


__all__ = [
    "Embedder",
    "EmbedderConfig",
    "EmbeddingFailed",
    "Purpose",
    "Vector",
    "build_embedder",
    "normalized",
]

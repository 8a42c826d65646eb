"""Rerankers: a query and candidate passages in, a relevance score per passage out.

The one kind is any ``/rerank`` endpoint the operator runs or subscribes to (Text Embeddings
Inference, Jina, Cohere, vLLM): a cross-encoder reads the query and each passage together,
which ranks better than comparing their embeddings, at the price of a model call per search.
Search treats it as optional: when it fails, overruns its deadline or answers nonsense, the
results keep the order they had.
"""

from __future__ import annotations

from taskcrawler.rerank.base import (
    Reranker,
    RerankerConfig,
    RerankFailed,
)


def build_reranker(config: RerankerConfig) -> Reranker:
    from taskcrawler.rerank.http import HttpReranker

    return HttpReranker(config)


__all__ = ["RerankFailed", "Reranker", "RerankerConfig", "build_reranker"]

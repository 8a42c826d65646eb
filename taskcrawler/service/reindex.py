"""Re-embed stored chunks with the current model: what changing TASKCRAWLER_EMBEDDER (or its
model) takes, so that searches, which compare only vectors of one model, find every page again."""

from __future__ import annotations

import logging

from taskcrawler.domain.chunks import Reembedded, chunk_context, embedded_text
from taskcrawler.domain.errors import VectorsUnavailable
from taskcrawler.embed import Embedder
from taskcrawler.storage.ports import ChunkRepository

log = logging.getLogger(__name__)

#: A text to embed to learn a model's dimensions.
DIMENSIONS_PROBE = "dimensions"


async def reindex_chunks(chunks: ChunkRepository, embedder: Embedder, *, batch: int = 256) -> int:
    """Embed again every chunk another model embedded, or made before chunks carried their
    context (the page's title and the chunk's headings, which it gains), a batch at a time; how
    many.

    First makes sure the database stores vectors (on PostgreSQL: pgvector's extension, its
    column and an HNSW index for the model's dimensions, when the server has pgvector)."""
    [probe] = await embedder.embed([DIMENSIONS_PROBE])
    if not await chunks.enable_vectors(len(probe)):
        raise VectorsUnavailable(
            "this PostgreSQL has no pgvector: install it (e.g. the pgvector/pgvector:pg16 image)"
        )
    done = 0
    after = 0
    while page := await chunks.stale(embedder.model, after_id=after, limit=batch):
        contexts = [chunk_context(c.title, c.heading_path) for c in page]
        vectors = await embedder.embed(
            [embedded_text(context, c.text) for context, c in zip(contexts, page, strict=True)]
        )
        await chunks.set_embeddings(
            embedder.model,
            [
                Reembedded(c.id, context, vector)
                for c, context, vector in zip(page, contexts, vectors, strict=True)
            ],
        )
        done += len(page)
        after = page[-1].id
        log.info("re-embedded %d chunks", done)
    return done

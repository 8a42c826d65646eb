"""Chunks on PostgreSQL: vectors in pgvector's column with an HNSW index per dimension, words
in a generated tsvector with a GIN index. Without pgvector, keyword search still works and
vector operations raise :class:`VectorsUnavailable`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.chunks import SearchHit, SearchQuery, query_terms
from taskcrawler.domain.errors import VectorsUnavailable
from taskcrawler.storage.chunks import ChunkStoreBase, hit
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.postgres import sql


def vector_text(vector: Sequence[float]) -> str:
    """pgvector's text form: ``[0.1,0.2,…]``."""
    return "[" + ",".join(f"{x:.8g}" for x in vector) + "]"


class PostgresChunkStore(ChunkStoreBase):
    _vectors: bool | None = None

    @unavailable_on_connection_errors
    async def vectors_available(self) -> bool:
        """Whether this database stores vectors (asked once: installing pgvector later takes
        ``taskcrawler reindex``, which calls :meth:`enable_vectors`, and a restart)."""
        if self._vectors is None:
            async with self.db.read() as conn:
                self._vectors = bool((await conn.exec_driver_sql(sql.HAS_VECTOR_COLUMN)).scalar())
        return self._vectors

    @unavailable_on_connection_errors
    async def enable_vectors(self, dim: int | None = None) -> bool:
        """Create pgvector's extension and column if the server has pgvector (and the HNSW index
        for ``dim``); whether vectors are available now."""
        async with self.db.write() as conn:
            if not (await conn.exec_driver_sql(sql.VECTOR_EXTENSION_AVAILABLE)).scalar():
                return False
            await conn.exec_driver_sql(sql.CREATE_VECTOR_EXTENSION)
            await conn.exec_driver_sql(sql.ADD_VECTOR_COLUMN)
            if dim is not None:
                await conn.exec_driver_sql(sql.hnsw_index(dim))
        self._vectors = True
        return True

    async def _require_vectors(self) -> None:
        if not await self.vectors_available():
            raise VectorsUnavailable(
                "this PostgreSQL has no pgvector: install it, then run `taskcrawler reindex`"
            )

    async def _insert(self, conn: AsyncConnection, rows: Sequence[Mapping[str, Any]]) -> None:
        await self._require_vectors()
        first = rows[0]
        params = (
            first["job_id"],
            first["owner"],
            first["crawl_id"],
            first["model"],
            first["dim"],
            first["source_hash"],
            [row["chunk_index"] for row in rows],
            [row["text"] for row in rows],
            [orjson.dumps(row["heading_path"]).decode() for row in rows],
            [row["token_count"] for row in rows],
            [vector_text(row["vector"]) for row in rows],
        )
        await conn.exec_driver_sql(sql.INSERT_CHUNKS, params)

    @unavailable_on_connection_errors
    async def set_embeddings(
        self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None:
        if not vectors:
            return
        await self._require_vectors()
        params = (
            model,
            [chunk_id for chunk_id, _ in vectors],
            [len(vector) for _, vector in vectors],
            [vector_text(vector) for _, vector in vectors],
        )
        async with self.db.write() as conn:
            await conn.exec_driver_sql(sql.SET_EMBEDDINGS, params)

    @unavailable_on_connection_errors
    async def semantic(
        self, query: SearchQuery, *, model: str, vector: Sequence[float]
    ) -> list[SearchHit]:
        await self._require_vectors()
        params = (
            vector_text(vector),
            query.owner,
            query.crawl_id,
            query.job_id,
            model,
            query.k,
        )
        async with self.db.engine.begin() as conn:
            await conn.exec_driver_sql(sql.iterative_scan(query.k))
            rows = (await conn.exec_driver_sql(sql.semantic_search(len(vector)), params)).all()
        return [hit(row, row.score) for row in rows]

    @unavailable_on_connection_errors
    async def keyword(self, query: SearchQuery) -> list[SearchHit]:
        terms = query_terms(query.text)
        if not terms:
            return []
        params = (" | ".join(terms), query.owner, query.crawl_id, query.job_id, query.k)
        async with self.db.read() as conn:
            rows = (await conn.exec_driver_sql(sql.KEYWORD_SEARCH, params)).all()
        return [hit(row, row.score) for row in rows]

"""Chunks: pieces of a page's main content, sized for an embedding model and a reader.

No I/O here: what a chunk is, what a search returns, and how two rankings are fused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal, TypeVar
from uuid import UUID

#: The job format that asks for a page's chunks, embedded and indexed.
CHUNKS_FORMAT = "chunks"


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a page's Markdown, with the headings it sits under.

    ``overlap`` characters at the start of ``text`` repeat the end of the previous chunk of the
    same section, so a sentence cut at a boundary is whole in one of the two. ``start`` and
    ``end`` are the characters of the page's Markdown the chunk spans (its overlap included),
    for a reader to cite; ``context`` is what it is about beyond its own words (see
    :func:`chunk_context`), embedded and indexed with it but not part of its text.
    """

    index: int
    text: str
    heading_path: tuple[str, ...]
    token_count: int
    overlap: int = 0
    start: int | None = None
    end: int | None = None
    context: str = ""


#: A ranking a search's hits come from.
SearchLeg = Literal["semantic", "keyword"]

#: The model of chunks made but not embedded yet (a page extracted again): no search's model,
#: so semantic searches skip them, and every re-index's stale chunks, so it embeds them.
UNEMBEDDED = ""


@dataclass(frozen=True, slots=True)
class EmbeddedChunk:
    """A chunk and its vector, as made by one model (``model``; ``len(vector)`` dimensions)."""

    chunk: Chunk
    vector: Sequence[float]


@dataclass(frozen=True, slots=True)
class PageChunks:
    """Every chunk of one page, embedded by one model: what storage replaces a page's with."""

    job_id: UUID
    owner: str
    crawl_id: UUID | None
    model: str
    dim: int
    chunks: Sequence[EmbeddedChunk]


@dataclass(frozen=True, slots=True)
class StoredChunk:
    index: int
    text: str
    heading_path: tuple[str, ...]
    token_count: int
    model: str
    dim: int
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True, slots=True)
class StaleChunk:
    """A stored chunk a re-index embeds again: another model embedded it, or it was made before
    chunks carried their context. ``title`` is its page's."""

    id: int
    text: str
    heading_path: tuple[str, ...]
    title: str | None


@dataclass(frozen=True, slots=True)
class Reembedded:
    """A stored chunk's new context and vector."""

    id: int
    context: str
    vector: Sequence[float]


#: The longest context a chunk carries, in characters: a title and six headings, bounded.
MAX_CONTEXT_CHARS = 1000
CONTEXT_SEPARATOR = " > "


def chunk_context(title: str | None, heading_path: Sequence[str]) -> str:
    """What a chunk is about beyond its own words: its page's title, then the headings it sits
    under ("Title > Section > Subsection"); the title once when the first heading repeats it."""
    parts = [" ".join(part.split()) for part in heading_path]
    name = " ".join((title or "").split())
    if name and not (parts and parts[0].casefold() == name.casefold()):
        parts.insert(0, name)
    return CONTEXT_SEPARATOR.join(part for part in parts if part)[:MAX_CONTEXT_CHARS]


def embedded_text(context: str, text: str) -> str:
    """What is embedded and indexed for a chunk: its context first, which says what it is about
    when its own words do not."""
    return f"{context}\n{text}" if context else text


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    SEMANTIC = "semantic"
    KEYWORD = "keyword"


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A search of ``owner``'s chunks; each filter set narrows it to the pages that match it
    (a crawl's, a page's, a host's, those under a URL prefix, a monitor's, those fetched in a
    time range)."""

    owner: str
    text: str
    k: int = 10
    crawl_id: UUID | None = None
    job_id: UUID | None = None
    mode: SearchMode = SearchMode.HYBRID
    host: str | None = None
    url_prefix: str | None = None
    monitor_id: UUID | None = None
    fetched_after: datetime | None = None
    fetched_before: datetime | None = None
    #: Whether the rerank stage (when one is configured) re-scores the results.
    rerank: bool = True

    @property
    def filtered(self) -> bool:
        """Whether anything beyond the owner narrows the search."""
        return any(
            value is not None
            for value in (
                self.crawl_id,
                self.job_id,
                self.host,
                self.url_prefix,
                self.monitor_id,
                self.fetched_after,
                self.fetched_before,
            )
        )


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One chunk found, with what a reader needs to cite it: its page's URL and title, the
    headings it sits under, the characters of the page's Markdown it spans, and when the page
    was fetched."""

    job_id: UUID
    url: str
    title: str | None
    chunk_index: int
    text: str
    score: float
    heading_path: tuple[str, ...] = ()
    start: int | None = None
    end: int | None = None
    fetched_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Ranked:
    """A chunk's place in one ranking: ``key``, what the store reads it by (the same chunk has
    the same key in each of a store's rankings), its ``score``, and its ``hit`` where the store
    read it with the ranking (else :meth:`~taskcrawler.storage.ports.ChunkRepository.hits`
    reads it)."""

    key: Hashable
    score: float
    hit: SearchHit | None = None


#: Words of a query that keyword search looks for, at most: a question, not a document.
MAX_QUERY_TERMS = 32
#: A word: letters and digits. Not the underscore, which both databases' parsers split words
#: on: ``a_b`` is two of the words that :data:`MAX_QUERY_TERMS` counts.
_TERM = re.compile(r"[^\W_]+")
#: Words too common to say what a question is about; leaving them out keeps a keyword search
#: (which matches any word) from ranking pages by how many "the" and "how" they hold.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def query_terms(text: str) -> list[str]:
    """The words of a query, lower-cased, each once: what keyword search matches (any of them,
    the pages with more and rarer ones first). Only word characters, so no query syntax of
    either database can be smuggled in."""
    words = dict.fromkeys(word.lower() for word in _TERM.findall(text))
    return [word for word in words if word not in STOPWORDS][:MAX_QUERY_TERMS]


#: Okapi BM25's constants, as SQLite's FTS5 has them: how fast a word's repetitions stop
#: counting (k1), and how much a chunk's length discounts them (b).
BM25_K1 = 1.2
BM25_B = 0.75


def bm25_idf(chunks: int, holding: int) -> float:
    """How rare a term is among ``chunks`` chunks when ``holding`` of them hold it, as FTS5
    computes it (never below a millionth, so that a common word still counts a little)."""
    return max(math.log((chunks - holding + 0.5) / (holding + 0.5)), 1e-6)


def bm25_idf_floored(chunks: int, holding: int) -> bool:
    """Whether a term that ``holding`` of ``chunks`` chunks hold (half of them or more) has the
    floor's rarity, a millionth: it adds at most ``(BM25_K1 + 1)`` millionths to a score."""
    return 2 * holding >= chunks


def query_weight(idfs: Iterable[float]) -> float:
    """What a chunk would score by BM25 if it held every term of the query over and over: what
    a keyword score is divided by, so that it says how much of the query a chunk matches (0 to
    1), whatever the size of the corpus."""
    return sum(idfs) * (BM25_K1 + 1)


K = TypeVar("K", bound=Hashable)


#: Where a hybrid search reads each ranking's spread: its best against the one at this rank
#: (or its last, when it is shorter).
FUSION_DEPTH = 50
#: How much the semantic ranking's confidence counts against the keyword ranking's: measured
#: on the train claims of BEIR SciFact and on the paraphrased questions of the retrieval test
#: (bench/results/2026-12-06-search-scifact.md), where each ranking in turn is the stronger one.
SEMANTIC_CONFIDENCE_WEIGHT = 2.0


def _scaled(scores: Sequence[float], depth: int) -> tuple[float, list[float]]:
    """The spread of ``scores`` (best first) at rank ``depth``, and each score scaled to it:
    1 for the best, 0 for the one at ``depth`` (below 0 past it)."""
    best, anchor = scores[0], scores[min(depth, len(scores)) - 1]
    spread = best - anchor
    if spread <= 0:
        return 0.0, [1.0 for _ in scores]
    return spread, [(score - anchor) / spread for score in scores]


def confidence_fusion(
    semantic: Sequence[tuple[K, float]],
    keyword: Sequence[tuple[K, float]],
    *,
    depth: int = FUSION_DEPTH,
) -> list[tuple[K, float]]:
    """Fuse a semantic and a keyword ranking (best first, with their scores), each weighed by
    how much it knows of this query, squared so that the one that knows more leads:

    - the semantic ranking by how far its best cosine stands out from the one at ``depth`` (a
      clear winner against a flat field);
    - the keyword ranking by how much of the query its best chunk matches (its score: BM25
      divided by :func:`query_weight`).

    Within a ranking, scores are scaled from its best (1) to the one at ``depth`` (0); a chunk
    that one ranking lacks gets nothing from it. Ties keep the semantic ranking's order."""
    fused: dict[K, float] = {}
    if semantic:
        spread, scaled = _scaled([score for _, score in semantic], depth)
        weight = SEMANTIC_CONFIDENCE_WEIGHT * spread**2
        for (item, _), value in zip(semantic, scaled, strict=True):
            fused[item] = fused.get(item, 0.0) + weight * value
    if keyword:
        weight = min(1.0, max(0.0, keyword[0][1])) ** 2
        _, scaled = _scaled([score for _, score in keyword], depth)
        for (item, _), value in zip(keyword, scaled, strict=True):
            fused[item] = fused.get(item, 0.0) + weight * value
    return sorted(fused.items(), key=lambda pair: -pair[1])

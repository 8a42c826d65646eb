"""SQLite keyword ranking from ``chunk_terms`` (migration 0016), PostgreSQL's way: each term's
postings of most impact read, their chunks ranked by what those give them, and the best of them
scored exactly, FTS5's BM25 to the last bit.

FTS5's ``bm25()`` reads every posting of every word of a query (to count a word's chunks, then
to score each match), so a query of common words cost the more the larger the index. Here the
rarest terms' postings are all read (up to :data:`FULL_BUDGET` of them: their chunks are the
likeliest answers), the others' best :data:`POSTINGS_PER_TERM` by impact (what a posting adds at
a reference mean length); the :func:`rescored` best chunks by what those postings give them
have every posting they hold of the query's terms looked up and are scored as FTS5 scores: the
same formula, operations and order (BM25 summed over the query's words in their order, a word
that stems like another counted once for each), from the same statistics (the index's row count
and mean length, each word's chunk count).

Not exact: a chunk whose terms' postings are all among the unread ones of their lists, or that
those read rank below the rescored ones, is missed (a chunk holding many moderately common words
once each, none of them rare). Where every list is read to its end and fewer chunks than are
rescored hold the words, the answer is FTS5's ranking of every match.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.chunks import BM25_B, BM25_K1


@dataclass(frozen=True, slots=True)
class Phrase:
    """A query word as FTS5 scores it: its token (stemmed) and its rarity."""

    term: str
    idf: float


def fts5_idf(rows: int, holding: int) -> float:
    """A word's rarity as FTS5's BM25 computes it, in ``rows`` rows of which ``holding`` hold
    it: the log, or a millionth where the log is not positive (``bm25_idf`` floors it at a
    millionth instead, which differs below a millionth)."""
    idf = math.log((rows - holding + 0.5) / (holding + 0.5))
    return idf if idf > 0.0 else 1e-6


def fts5_bm25(phrases: Sequence[Phrase], tfs: Mapping[str, int], length: int, mean: float) -> float:
    """FTS5's BM25 of a chunk of ``length`` tokens holding each term ``tfs`` times (the
    opposite of its ``bm25()``): fts5_aux.c's ``fts5Bm25Function``, operation for operation, so
    that the two agree to the last bit."""
    score = 0.0
    for phrase in phrases:
        frequency = float(tfs.get(phrase.term, 0))
        score += phrase.idf * (
            (frequency * (BM25_K1 + 1.0))
            / (frequency + BM25_K1 * (1 - BM25_B + BM25_B * length / mean))
        )
    return score


#: How many postings of each query term a search reads, those of most impact first (a rarer
#: term's are all read), as PostgreSQL's (``postgres.chunks.POSTINGS_PER_TERM``).
POSTINGS_PER_TERM = 1000


#: How many postings of the rarest terms a search reads in full (as
#: ``sqlite.chunks.POSTINGS_BUDGET``): the chunks that hold them are the likeliest answers.
FULL_BUDGET = 5000


def depths(holding: Mapping[str, int]) -> dict[str, int]:
    """How many postings of each term to read: every one of the rarest terms while they add up
    to :data:`FULL_BUDGET`, the best :data:`POSTINGS_PER_TERM` of the others."""
    read: dict[str, int] = {}
    total = 0
    for term in sorted(holding, key=lambda t: holding[t]):
        if total + holding[term] <= FULL_BUDGET:
            read[term] = holding[term]
            total += holding[term]
        else:
            read[term] = POSTINGS_PER_TERM
    return read


def rescored(k: int) -> int:
    """How many of the chunks ranked by the postings read are scored exactly before the best
    ``k`` are kept: enough that one missing a term's posting still comes back into the ``k``."""
    return max(200, 4 * k)


@functools.cache
def ranked_by_best_postings(terms: int) -> sa.TextClause:
    """The ``:m`` chunks that the ``:d`` postings of most impact of each of ``terms`` terms
    (``:t{n}``, of rarity ``:w{n}``) give most of BM25 (``:s`` the saturation a token of a
    chunk's length adds, as ``1 - b + b * length / mean`` does), best first: built once per
    number of terms, its values bound at each run."""
    parts = " UNION ALL ".join(
        f"SELECT chunk_id, :w{n} * tf / (tf + :f + :s * length) AS part FROM (SELECT chunk_id,"
        f" tf, length FROM chunk_terms WHERE term = :t{n} ORDER BY impact DESC, chunk_id"
        f" LIMIT :d{n})"
        for n in range(terms)
    )
    return sa.text(
        f"SELECT chunk_id FROM ({parts}) GROUP BY chunk_id ORDER BY sum(part) DESC, chunk_id"
        " LIMIT :m"
    )


#: Every posting of the terms ``:terms`` (a JSON array) in the chunks ``:ids`` (a JSON array),
#: with each chunk's owner: what the chunks seen in some lists hold of the others.
LOOKUP = sa.text(
    "SELECT c.id, c.owner, t.term, t.tf, t.length FROM json_each(:ids) AS i"
    " JOIN chunks c ON c.id = i.value"
    " JOIN chunk_terms t ON t.chunk_id = c.id AND t.term IN (SELECT value FROM json_each(:terms))"
)

#: FTS5's row count and total tokens (of every column), from its averages record: the
#: ``N`` and mean length of its BM25.
AVERAGES = sa.text("SELECT block FROM chunks_fts_data WHERE id = 1")


def varints(block: bytes) -> list[int]:
    """The SQLite varints of ``block`` (FTS5's averages record: rows, then each column's
    tokens)."""
    values: list[int] = []
    at = 0
    while at < len(block):
        value = 0
        for step in range(9):
            byte = block[at]
            at += 1
            if step == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values


async def index_figures(conn: AsyncConnection) -> tuple[int, float]:
    """FTS5's row count and mean row length, as its BM25 reads them."""
    block = (await conn.execute(AVERAGES)).scalar_one_or_none()
    figures = varints(bytes(block)) if block else []
    rows = figures[0] if figures else 0
    return rows, (sum(figures[1:]) / rows if rows else 0.0)


async def best_chunks(
    conn: AsyncConnection,
    owner: str,
    phrases: Sequence[Phrase],
    holding: Mapping[str, int],
    k: int,
    mean: float,
) -> list[tuple[int, float]] | None:
    """The ``owner``'s best ``k`` (chunk, FTS5's BM25 over ``phrases``; ``holding``, how many
    chunks hold each term) among those the best postings of each term rank highest
    (:func:`ranked_by_best_postings`), each scored exactly from every posting it holds of the
    query's terms; best first, ties by id. None when fewer than ``k`` of them are the owner's
    and chunks were left unread (other owners' chunks crowd the lists)."""
    weights: dict[str, float] = {}
    for phrase in phrases:
        weights[phrase.term] = weights.get(phrase.term, 0.0) + phrase.idf
    params: dict[str, str | int | float] = {
        "f": BM25_K1 * (1 - BM25_B),
        "s": BM25_K1 * BM25_B / mean,
        "m": rescored(k),
    }
    depth = depths(holding)
    for n, (term, weight) in enumerate(weights.items()):
        params |= {f"t{n}": term, f"w{n}": weight * (BM25_K1 + 1.0), f"d{n}": depth[term]}
    ranked = await conn.execute(ranked_by_best_postings(len(weights)), params)
    candidates = [int(chunk) for chunk in ranked.scalars()]
    every_match = len(candidates) < rescored(k) and all(
        depth[term] >= holding[term] for term in weights
    )
    lookup = {"ids": json.dumps(candidates), "terms": json.dumps(sorted(weights))}
    held: dict[int, tuple[int, dict[str, int]]] = {}
    for chunk, chunk_owner, term, tf, length in await conn.execute(LOOKUP, lookup):
        if chunk_owner == owner:
            held.setdefault(chunk, (length, {}))[1][term] = tf
    if len(held) < k and not every_match:
        return None
    scored = [
        (chunk, fts5_bm25(phrases, tfs, length, mean)) for chunk, (length, tfs) in held.items()
    ]
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[:k]

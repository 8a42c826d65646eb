"""SQLite keyword ranking from ``chunk_terms`` (migration 0016): FTS5's BM25, exactly, reading
each term's postings best first and stopping when no chunk left unread can enter the best k.

FTS5's ``bm25()`` reads every posting of every word of the query, so a query of common words
cost the more the larger the index. Here each term's postings come in the order of their
*impact* (what the term's frequency gives at the length of their chunk, at a reference mean
length), a few at a time; a chunk seen in one list has its other terms looked up, and a
chunk seen in none can score no more than the sum, over the lists not read to their end, of
what the next posting of each can add (the threshold algorithm). When the k best of the owner's
chunks scored so far beat that, they are the k best there are.

Scores are FTS5's own: the same formula, the same operations in the same order (BM25 summed
over the query's words in their order, a word that stems like another counted once for each),
from the same statistics (the index's row count, mean length and each word's chunk count), so
the answers are FTS5's, rank for rank and score for score.
"""

from __future__ import annotations

import functools
import heapq
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.chunks import BM25_B, BM25_K1

#: The reference mean length of the order of a term's postings (migration 0016's, which must be
#: the same): their impacts were computed at it.
IMPACT_LENGTH = 150.0

#: Postings read per term at first, and the most a search reads per term before it gives up
#: (the caller then ranks every match with FTS5): each step reads four times as many.
FIRST_DEPTH = 100
MAX_DEPTH = 25_600

#: Chunks whose other terms are looked up at once (those that may still enter the best k).
LOOKUP_BATCH = 64

#: What a bound is raised by, against rounding: a score and its bound are computed apart.
_ROUNDING = 1.0 + 1e-9


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


def impact_bound(impact: float, mean: float) -> float:
    """The most ``tf / (tf + k1 * (1 - b + b * length / mean))`` can be for a posting whose impact
    (the same at :data:`IMPACT_LENGTH`) is at most ``impact``: at a larger mean the length
    discounts less, by at most the ratio of the two."""
    return min(1.0, impact / min(1.0, IMPACT_LENGTH / mean))


@dataclass(slots=True)
class _Seen:
    """A chunk seen in some lists: its length, what it holds of their terms, and what those
    add to its score."""

    length: int
    tfs: dict[str, int] = field(default_factory=dict)
    known: float = 0.0


@dataclass(slots=True)
class _List:
    """How far a term's postings have been read: the last one's impact and chunk."""

    term: str
    weight: float  # the rarity of every query word that is this term, summed
    impact: float = math.inf
    chunk: int = -1
    ended: bool = False

    def bound(self, mean: float) -> float:
        """The most an unread posting of this term adds to a score."""
        if self.ended:
            return 0.0
        if math.isinf(self.impact):
            return self.weight * (BM25_K1 + 1.0) * _ROUNDING
        return self.weight * (BM25_K1 + 1.0) * impact_bound(self.impact, mean) * _ROUNDING


@functools.cache
def best_postings(terms: int) -> sa.TextClause:
    """The next ``:d{n}`` postings of each of ``terms`` terms (``:t{n}``), after the one of
    impact ``:i{n}`` and chunk ``:c{n}`` in the (term, impact) index's order: built once per
    number of terms."""
    parts = [
        f"SELECT * FROM (SELECT {n} AS list, chunk_id, tf, length, impact FROM chunk_terms"
        f" WHERE term = :t{n} AND impact <= :i{n} AND NOT (impact = :i{n} AND chunk_id <= :c{n})"
        f" ORDER BY impact DESC, chunk_id LIMIT :d{n})"
        for n in range(terms)
    ]
    return sa.text(" UNION ALL ".join(parts))


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


@dataclass(slots=True)
class ThresholdSearch:
    """One owner's best ``k`` chunks by FTS5's BM25 over ``phrases`` (every one held by some
    chunk), in an index of mean length ``mean``."""

    conn: AsyncConnection
    owner: str
    phrases: Sequence[Phrase]
    k: int
    mean: float
    seen: dict[int, _Seen] = field(default_factory=dict)
    scored: dict[int, float] = field(default_factory=dict)  # the owner's, exactly
    done: set[int] = field(default_factory=set)  # looked up (the owner's or not)

    async def run(self) -> list[tuple[int, float]] | None:
        """The best ``k`` (chunk, score), best first, ties by id; None where the lists would
        have to be read deeper than :data:`MAX_DEPTH` to be sure."""
        weights: dict[str, float] = {}
        for phrase in self.phrases:
            weights[phrase.term] = weights.get(phrase.term, 0.0) + phrase.idf
        lists = [_List(term, weight) for term, weight in weights.items()]
        depth = FIRST_DEPTH
        while True:
            await self._read(lists, depth)
            await self._score_contenders(lists)
            unseen = sum(entry.bound(self.mean) for entry in lists)
            if all(entry.ended for entry in lists) or self._threshold() > unseen:
                return self._best()
            if depth >= MAX_DEPTH:
                return None
            depth *= 4

    async def _read(self, lists: list[_List], depth: int) -> None:
        """The next ``depth`` postings of every list not read to its end."""
        reading = [entry for entry in lists if not entry.ended]
        params: dict[str, str | int | float] = {}
        for n, entry in enumerate(reading):
            params |= {f"t{n}": entry.term, f"i{n}": entry.impact, f"c{n}": entry.chunk}
            params[f"d{n}"] = depth
            if math.isinf(entry.impact):
                params[f"i{n}"] = 2.0  # above any impact (each is below 1)
        read = [0] * len(reading)
        saturation = BM25_K1 * BM25_B / self.mean  # per token of the chunk's length
        floor = BM25_K1 * (1 - BM25_B)
        result = await self.conn.execute(best_postings(len(reading)), params)
        for number, chunk, tf, length, impact in result.tuples():
            entry = reading[number]
            read[number] += 1
            entry.impact, entry.chunk = impact, chunk
            if chunk not in self.done:
                seen = self.seen.get(chunk)
                if seen is None:
                    seen = self.seen[chunk] = _Seen(length)
                seen.tfs[entry.term] = tf
                seen.known += (
                    entry.weight * tf * (BM25_K1 + 1.0) / (tf + floor + saturation * length)
                )
        for n, entry in enumerate(reading):
            entry.ended = read[n] < depth

    async def _score_contenders(self, lists: list[_List]) -> None:
        """Every chunk seen that may still enter the best k scored exactly, the most promising
        first (each batch raises the bar the next must clear). A chunk's most is what it holds
        of the lists it was seen in, and what the others' unread postings can add."""
        bounds = {entry.term: entry.bound(self.mean) for entry in lists}
        unread = sum(bounds.values())
        uppers = [
            (
                seen.known * _ROUNDING + unread - sum(bounds[term] for term in seen.tfs),
                chunk,
            )
            for chunk, seen in self.seen.items()
        ]
        uppers.sort(key=lambda pair: (-pair[0], pair[1]))
        at = 0
        while at < len(uppers) and uppers[at][0] >= self._threshold():
            batch = [chunk for _, chunk in uppers[at : at + LOOKUP_BATCH]]
            await self._look_up(batch)
            at += LOOKUP_BATCH

    async def _look_up(self, chunks: list[int]) -> None:
        params = {
            "ids": json.dumps(chunks),
            "terms": json.dumps(sorted({p.term for p in self.phrases})),
        }
        held: dict[int, _Seen] = {}
        mine: set[int] = set()
        for row in await self.conn.execute(LOOKUP, params):
            seen = held.get(row.id)
            if seen is None:
                seen = held[row.id] = _Seen(row.length)
            seen.tfs[row.term] = row.tf
            if row.owner == self.owner:
                mine.add(row.id)
        for chunk in chunks:
            self.done.add(chunk)
            self.seen.pop(chunk, None)
        for chunk in mine:
            seen = held[chunk]
            self.scored[chunk] = fts5_bm25(self.phrases, seen.tfs, seen.length, self.mean)

    def _threshold(self) -> float:
        """The k-th best exact score of the owner's chunks so far (minus infinity short of k)."""
        if len(self.scored) < self.k:
            return -math.inf
        return heapq.nlargest(self.k, self.scored.values())[-1]

    def _best(self) -> list[tuple[int, float]]:
        ranked = sorted(self.scored.items(), key=lambda pair: (-pair[1], pair[0]))
        return ranked[: self.k]

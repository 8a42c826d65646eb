"""Nearest vectors in memory, for SQLite's semantic search: exact over a small matrix; over a
large one, the vectors' signs first (bits, compared by Hamming distance, a 32nd of the bytes
to read) and only the nearest few hundred of those scored exactly.

No I/O: numpy arrays in, ids and scores out. Runs in a worker thread (numpy releases the GIL
while it computes), never on the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: From how many vectors on their signs pick the candidates: below it, scoring every vector
#: exactly costs a few milliseconds.
SIGNS_FROM = 20_000

#: How many candidates by sign are scored exactly: a tenth of the vectors, and at least 40
#: per result asked for. A vector's signs keep most of its direction, so the true nearest are
#: among the nearest by sign but not always first: on WordLlama's vectors of SciFact's
#: abstracts (20,103 of them, its 809 claims asked), a tenth kept 99.6% of the exact first 10,
#: a twentieth 98.6% (bench/results/2026-12-06-search-signs-and-fusion.md).
RESCORED_SHARE = 10
RESCORED_PER_RESULT = 40

#: Up to how many rows a search among some of the index's vectors copies them out to score
#: them (4 MB at 256 dimensions); more are scored in place with the rest of the matrix.
GATHERED_ROWS = 4096


@dataclass(frozen=True, slots=True)
class VectorIndex:
    """The vectors of some chunks: ``ids`` (int64), ``matrix`` (float32, one unit vector a
    row) and, for a large matrix, ``signs``: its rows' sign bits packed into 64-bit words,
    transposed (word j of every row contiguous), so each word is compared in one pass."""

    ids: Any
    matrix: Any
    signs: Any | None

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def empty(cls, np: Any, dim: int) -> VectorIndex:
        return cls(np.empty(0, np.int64), np.empty((0, dim), np.float32), None)


def vector_index(np: Any, ids: Any, matrix: Any, *, signs_from: int = SIGNS_FROM) -> VectorIndex:
    """The index of ``matrix`` (rows are vectors of ``ids``), its signs packed when it has at
    least ``signs_from`` rows."""
    signs = None
    if len(ids) >= signs_from:
        signs = np.ascontiguousarray(_packed_signs(np, matrix).T)
    return VectorIndex(ids, matrix, signs)


def extended(
    np: Any, index: VectorIndex, ids: Any, matrix: Any, *, signs_from: int = SIGNS_FROM
) -> VectorIndex:
    """``index`` with the vectors ``matrix`` of ``ids`` after its own: the new rows' signs
    packed alone (the matrix is copied once, never read back from the database)."""
    if not len(ids):
        return index
    all_ids = np.concatenate([index.ids, ids])
    all_rows = np.concatenate([index.matrix, matrix])
    if index.signs is None:
        return vector_index(np, all_ids, all_rows, signs_from=signs_from)
    signs = np.concatenate([index.signs, _packed_signs(np, matrix).T], axis=1)
    return VectorIndex(all_ids, all_rows, np.ascontiguousarray(signs))


def kept(np: Any, index: VectorIndex, ids: Any) -> VectorIndex:
    """``index`` without the rows whose ids are not among ``ids``."""
    keep = np.isin(index.ids, ids)
    if keep.all():
        return index
    signs = None if index.signs is None else np.ascontiguousarray(index.signs[:, keep])
    return VectorIndex(index.ids[keep], index.matrix[keep], signs)


def _packed_signs(np: Any, matrix: Any) -> Any:
    """Each row's sign bits (1 where positive), packed into 64-bit words (zero-padded)."""
    bits = np.packbits(matrix > 0, axis=-1)
    pad = (-bits.shape[-1]) % 8
    if pad:
        bits = np.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, pad)])
    return np.ascontiguousarray(bits).view(np.uint64)


def nearest(np: Any, index: VectorIndex, vector: Any, k: int) -> list[tuple[int, float]]:
    """The ``k`` vectors of ``index`` of highest cosine with ``vector`` (unit length, float32):
    (id, cosine), best first, ties in the index's order."""
    if not len(index) or k <= 0:
        return []
    rows = _candidates(np, index, vector, k)
    scores = _cosines(np, index.matrix[rows] if rows is not None else index.matrix, vector)
    return _best(np, index, rows, scores, k)


def nearest_exactly(np: Any, index: VectorIndex, vector: Any, k: int) -> list[tuple[int, float]]:
    """:func:`nearest`, every vector scored (in place), never by sign first: what a filtered
    search asks of a thousand nearest, where the signs' candidates are 40 per result (40% of
    100,000 rows copied out, then scored: twice the CPU of scoring every row where it lies)."""
    if not len(index) or k <= 0:
        return []
    return _best(np, index, None, _cosines(np, index.matrix, vector), k)


def nearest_among(
    np: Any, index: VectorIndex, vector: Any, k: int, ids: Any
) -> list[tuple[int, float]]:
    """:func:`nearest` among the vectors of ``ids`` (int64, ascending as the index's own; an id
    the index lacks is passed over), every one scored exactly: a filter's rows need not be
    among the nearest by sign. A few rows are copied out to be scored; many are scored in
    place, the whole matrix, so that a filter keeping most of it copies none of it."""
    rows = _rows_of(np, index, ids)
    if not len(rows) or k <= 0:
        return []
    if len(rows) <= GATHERED_ROWS:
        scores = _cosines(np, index.matrix[rows], vector)
    else:
        scores = _cosines(np, index.matrix, vector)[rows]
    return _best(np, index, rows, scores, k)


def _rows_of(np: Any, index: VectorIndex, ids: Any) -> Any:
    """The rows of ``index`` that hold ``ids`` (both ascending), in the index's order."""
    positions = np.searchsorted(index.ids, ids)
    inside = positions < len(index)
    positions = positions[inside]
    return positions[index.ids[positions] == ids[inside]]


def _best(
    np: Any, index: VectorIndex, rows: Any | None, scores: Any, k: int
) -> list[tuple[int, float]]:
    """The ``k`` best of ``scores`` (of ``rows`` of the index, or of every row: None) as (id,
    score), best first, ties in the index's order."""
    k = min(k, len(scores))
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.lexsort((best, -scores[best]))]
    chosen = rows[best] if rows is not None else best
    return [(int(index.ids[i]), float(s)) for i, s in zip(chosen, scores[best], strict=True)]


def _cosines(np: Any, matrix: Any, vector: Any) -> Any:
    """Each row's product with ``vector``, in one thread: ``einsum``'s own loop, not BLAS's,
    whose threads spin for their share of a matrix-vector product on a busy host (100,000 x
    256: 3.7 ms of CPU against 11-15 ms, where the threads contend with the process's others)."""
    return np.einsum("ij,j->i", matrix, vector)


def _candidates(np: Any, index: VectorIndex, vector: Any, k: int) -> Any | None:
    """The rows nearest to ``vector`` by sign (None: score every row), in the index's order."""
    want = max(len(index) // RESCORED_SHARE, RESCORED_PER_RESULT * k)
    if index.signs is None or want >= len(index):
        return None
    query = _packed_signs(np, vector[None, :])[0]
    distance = np.bitwise_count(index.signs[0] ^ query[0]).astype(np.uint16)
    for word, bits in zip(index.signs[1:], query[1:], strict=True):
        distance += np.bitwise_count(word ^ bits)
    # Distances are small integers: the cut-off where ``want`` rows are at least as near is read
    # from their histogram (a pass, where a partial sort of 100,000 distances is ten).
    within = np.cumsum(np.bincount(distance))
    cutoff = int(np.searchsorted(within, want))
    return np.flatnonzero(distance <= cutoff)

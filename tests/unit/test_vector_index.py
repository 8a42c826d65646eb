"""SQLite's in-memory nearest-vector search: exact on a small matrix, signs first on a large
one, and the same answer where the nearest stand out."""

from __future__ import annotations

import numpy as np
import pytest

from taskcrawler.storage.sqlite import vectors
from taskcrawler.storage.sqlite.vectors import nearest, vector_index


def _unit_rows(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _clustered(n: int, dim: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unit vectors around 50 centres, and a query beside the first centre."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, dim))
    matrix = _unit_rows(centres[rng.integers(0, 50, n)] + 0.6 * rng.standard_normal((n, dim)))
    query = _unit_rows((centres[0] + 0.3 * rng.standard_normal(dim))[None, :])[0]
    return matrix, query


def test_a_small_index_is_searched_exactly_best_first_ties_in_order() -> None:
    matrix = _unit_rows(np.array([[1, 0], [0, 1], [1, 1], [1, 0]], dtype=np.float64))
    index = vector_index(np, np.array([10, 11, 12, 13]), matrix)

    found = nearest(np, index, np.array([1, 0], np.float32), 3)

    assert index.signs is None
    assert [chunk for chunk, _ in found] == [10, 13, 12]
    assert found[0][1] == 1.0 and round(found[2][1], 4) == round(1 / 2**0.5, 4)


def test_a_large_index_finds_what_exact_search_finds_reading_signs_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    matrix, query = _clustered(3000, 70)  # 70 dimensions: the last word of signs is padded
    ids = np.arange(100, 3100)
    exact = vector_index(np, ids, matrix, signs_from=10**9)
    signed = vector_index(np, ids, matrix, signs_from=1000)
    monkeypatch.setattr(vectors, "RESCORED_PER_RESULT", 30)

    rows = vectors._candidates(np, signed, query, 10)
    found = nearest(np, signed, query, 10)

    assert signed.signs is not None and signed.signs.shape == (2, 3000)
    assert rows is not None and 300 <= len(rows) < 3000
    assert found == nearest(np, exact, query, 10)


def test_an_empty_index_or_no_k_finds_nothing() -> None:
    empty = vector_index(np, np.array([], np.int64), np.zeros((0, 4), np.float32))
    one = vector_index(np, np.array([1]), _unit_rows(np.ones((1, 4))))

    assert nearest(np, empty, np.ones(4, np.float32), 5) == []
    assert nearest(np, one, np.ones(4, np.float32), 0) == []
    assert [chunk for chunk, _ in nearest(np, one, np.ones(4, np.float32), 5)] == [1]


def test_an_index_extended_and_kept_is_the_index_of_its_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    matrix, query = _clustered(600, 70)
    whole = vector_index(np, np.arange(600), matrix, signs_from=100)

    grown = vectors.extended(
        np,
        vector_index(np, np.arange(50), matrix[:50], signs_from=100),  # no signs yet
        np.arange(50, 600),
        matrix[50:],
        signs_from=100,
    )
    shrunk = vectors.kept(np, grown, np.arange(0, 600, 2))

    assert grown.signs is not None and np.array_equal(grown.signs, whole.signs)
    assert np.array_equal(grown.ids, whole.ids) and np.array_equal(grown.matrix, whole.matrix)
    assert shrunk.signs is not None and np.array_equal(
        shrunk.signs, vector_index(np, np.arange(0, 600, 2), matrix[::2], signs_from=1).signs
    )
    monkeypatch.setattr(vectors, "RESCORED_SHARE", 1)  # exact: same answer either way
    assert nearest(np, shrunk, query, 5) == nearest(
        np, vector_index(np, np.arange(0, 600, 2), matrix[::2]), query, 5
    )
    assert vectors.kept(np, grown, grown.ids) is grown
    assert vectors.extended(np, grown, np.arange(0), matrix[:0]) is grown


@pytest.mark.parametrize("gathered", [0, 4096], ids=["scored-in-place", "copied-out"])
def test_a_search_among_some_ids_is_exact_search_of_those_alone(
    monkeypatch: pytest.MonkeyPatch, gathered: int
) -> None:
    monkeypatch.setattr(vectors, "GATHERED_ROWS", gathered)
    matrix, query = _clustered(3000, 64)
    ids = np.arange(100, 3100, dtype=np.int64)
    index = vector_index(np, ids, matrix, signs_from=1000)  # signed: they must not be used
    chosen = ids[(ids % 7 == 0)]
    among = np.concatenate([chosen, np.array([5, 99_999], np.int64)])  # two the index lacks
    among.sort()

    found = vectors.nearest_among(np, index, query, 10, among)

    alone = vector_index(np, chosen, matrix[np.isin(ids, chosen)], signs_from=10**9)
    assert found == nearest(np, alone, query, 10)
    assert all(chunk % 7 == 0 for chunk, _ in found)


def test_a_search_among_ids_the_index_lacks_finds_nothing() -> None:
    matrix, query = _clustered(50, 8)
    index = vector_index(np, np.arange(50, dtype=np.int64), matrix)

    assert vectors.nearest_among(np, index, query, 5, np.array([60, 70], np.int64)) == []
    assert vectors.nearest_among(np, index, query, 5, np.array([], np.int64)) == []


def test_nearest_exactly_scores_every_vector_of_a_signed_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A filtered search asks which of the owner's thousand nearest its filters keep: those
    are every vector's nearest, not the nearest of the candidates by sign."""
    monkeypatch.setattr(vectors, "RESCORED_SHARE", 100)
    monkeypatch.setattr(vectors, "RESCORED_PER_RESULT", 1)
    matrix, query = _clustered(3000, 64)
    ids = np.arange(100, 3100, dtype=np.int64)
    signed = vector_index(np, ids, matrix, signs_from=1000)
    exact = vector_index(np, ids, matrix, signs_from=10**9)

    found = vectors.nearest_exactly(np, signed, query, 300)

    assert found == nearest(np, exact, query, 300)
    assert nearest(np, signed, query, 300) != found  # by sign first, some are missed
    assert vectors.nearest_exactly(np, signed, query, 0) == []

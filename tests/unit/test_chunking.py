"""Chunking: structure kept, every chunk bounded, every token of the page in some chunk."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskcrawler.domain.chunks import (
    bm25_idf,
    bm25_idf_floored,
    confidence_fusion,
    query_weight,
)
from taskcrawler.extract.chunking import TOKEN, ChunkingConfig, chunk_markdown, count_tokens

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_LINES = st.one_of(
    st.text(max_size=80),
    st.sampled_from(
        ["", "# Title", "## Part", "### Deep", "```", "~~~", "- item", "1. one", "|a|b|"]
    ),
    st.builds(lambda w, n: " ".join([w] * n), st.text(min_size=1, max_size=30), st.integers(1, 60)),
    st.text(alphabet="ab", min_size=50, max_size=400),  # one huge word
)
MARKDOWN = st.lists(_LINES, max_size=60).map("\n".join)
CONFIGS = st.builds(
    lambda target, share: ChunkingConfig(target, int(target * share)),
    st.integers(8, 120),
    st.floats(0, 0.5),
)


def _ink(text: str) -> str:
    return re.sub(r"\s+", "", text)


@SETTINGS
@given(MARKDOWN, CONFIGS)
def test_any_markdown_gives_bounded_chunks_that_cover_it(
    markdown: str, config: ChunkingConfig
) -> None:
    chunks = chunk_markdown(markdown, config)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert 0 < chunk.token_count <= config.target_tokens
        assert chunk.token_count == count_tokens(chunk.text)
        assert chunk.text[chunk.overlap :].strip()
    # The chunks' own parts, in order, are the page, whitespace aside.
    assert "".join(_ink(c.text[c.overlap :]) for c in chunks) == _ink(markdown)
    # Each chunk spans the characters of the page it holds, its overlap included.
    for chunk in chunks:
        assert chunk.start is not None and chunk.end is not None
        assert _tokens(markdown[chunk.start : chunk.end]) == _tokens(chunk.text)
    assert [c.start for c in chunks] == sorted(c.start or 0 for c in chunks)


def _tokens(text: str) -> list[str]:
    return [m.group() for m in TOKEN.finditer(text)]


def test_a_chunk_names_the_passage_of_the_page_it_was_cut_from() -> None:
    markdown = "# Guide\n\nIntro   text.\n\n## Install\n\nRun pip."
    first, second = chunk_markdown(markdown)
    assert markdown[first.start : first.end] == "# Guide\n\nIntro   text."
    assert markdown[second.start : second.end] == "## Install\n\nRun pip."


def test_headings_give_each_chunk_its_path() -> None:
    markdown = (
        "# Guide\n\nIntro.\n\n## Install\n\nRun pip.\n\n### Linux\n\nUse apt.\n\n## Use\n\nCall it."
    )
    chunks = chunk_markdown(markdown)
    assert [(c.heading_path, c.text.splitlines()[-1]) for c in chunks] == [
        (("Guide",), "Intro."),
        (("Guide", "Install"), "Run pip."),
        (("Guide", "Install", "Linux"), "Use apt."),
        (("Guide", "Use"), "Call it."),
    ]


def test_a_heading_keeps_its_title_without_its_closing_hashes() -> None:
    [chunk] = chunk_markdown("## Setup ##  \n\nText.")
    assert chunk.heading_path == ("Setup",)
    [chunk] = chunk_markdown("# A # B #\t#\n\nText.")
    assert chunk.heading_path == ("A # B",)


@pytest.mark.timeout(30)  # the heading's parse was quadratic: over two minutes of CPU here
def test_a_long_heading_line_of_spaced_hashes_is_read_in_linear_time() -> None:
    # What a page's <h1> of " #" repeated becomes: each of its positions had the line's rest
    # scanned again by the heading pattern's closing hashes (9 s for 40 KB).
    markdown = "# " + " #" * 100_000 + "x\n\nText."
    chunks = chunk_markdown(markdown)
    assert chunks[0].heading_path[0].startswith("# # #") and chunks[-1].text.endswith("Text.")


def test_code_and_lists_are_kept_whole_when_they_fit() -> None:
    code = "```python\ndef f():\n\n    return 1\n```"
    items = "- one\n- two\n- three"
    prose = " ".join(["word"] * 25)
    chunks = chunk_markdown(f"{prose}\n\n{code}\n\n{items}\n\n{prose}", ChunkingConfig(40, 0))
    texts = [c.text for c in chunks]
    assert any(code in text for text in texts)
    assert any(items in text for text in texts)
    assert len(chunks) >= 2


def test_a_long_section_is_split_with_overlap() -> None:
    sentences = " ".join(f"Sentence number {n} is here." for n in range(100))
    chunks = chunk_markdown(f"# Long\n\n{sentences}", ChunkingConfig(60, 10))
    assert len(chunks) > 3
    for before, after in itertools.pairwise(chunks):
        assert after.overlap > 0
        assert before.text.endswith(after.text[: after.overlap].rstrip())
        assert after.heading_path == ("Long",)


@pytest.mark.parametrize(("target", "overlap"), [(4, 0), (50, 50), (50, -1)])
def test_a_config_that_cannot_work_is_refused(target: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="tokens"):
        ChunkingConfig(target, overlap)


def test_empty_markdown_has_no_chunks() -> None:
    assert chunk_markdown("  \n\n \n") == []


def test_the_ranking_that_knows_more_of_the_query_leads_the_fusion() -> None:
    # The semantic ranking's best stands out (0.8 against 0.2); the keyword one matches a tenth
    # of the query: the semantic order wins.
    semantic = [("a", 0.8), ("b", 0.3), ("c", 0.2)]
    weak_keyword = [("c", 0.1), ("b", 0.05)]
    assert [item for item, _ in confidence_fusion(semantic, weak_keyword)][:1] == ["a"]
    # A flat semantic field (0.50 to 0.45) against a keyword match of most of the query.
    flat = [("a", 0.50), ("b", 0.48), ("c", 0.45)]
    strong_keyword = [("c", 0.8), ("b", 0.3)]
    assert [item for item, _ in confidence_fusion(flat, strong_keyword)][:1] == ["c"]


def test_a_chunk_both_rankings_find_beats_one_found_by_one() -> None:
    fused = confidence_fusion([("a", 0.6), ("b", 0.58), ("c", 0.4)], [("b", 0.5), ("d", 0.4)])
    assert fused[0][0] == "b"
    assert {item for item, _ in fused} == {"a", "b", "c", "d"}


def test_fusion_of_empty_or_flat_rankings_keeps_their_order() -> None:
    assert confidence_fusion([], []) == []
    assert [i for i, _ in confidence_fusion([("a", 0.5), ("b", 0.5)], [])] == ["a", "b"]
    assert [i for i, _ in confidence_fusion([], [("x", 0.3), ("y", 0.1)])] == ["x", "y"]


def test_keyword_scores_are_a_share_of_the_query() -> None:
    # A chunk holding each term of the query once, at the mean length, scores idf * 1 per term;
    # the query's weight is what endless repetitions would score: the share stays under 1.
    idfs = [bm25_idf(1000, 3), bm25_idf(1000, 200)]
    assert 0 < sum(idfs) / query_weight(idfs) < 1
    assert bm25_idf(10, 9) == pytest.approx(1e-6)  # a word most chunks hold still counts
    assert bm25_idf(1000, 0) > bm25_idf(1000, 1) > bm25_idf(1000, 100)


def test_a_term_is_floored_exactly_where_fts5_floors_its_rarity() -> None:
    for chunks in (1, 2, 3, 10, 11, 1000, 100_038):
        for holding in range(chunks + 1) if chunks < 2000 else range(50_000, 50_040):
            floored = bm25_idf(chunks, holding) == 1e-6
            assert bm25_idf_floored(chunks, holding) == floored, (chunks, holding)

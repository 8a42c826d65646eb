"""Chunking: structure kept, every chunk bounded, every token of the page in some chunk."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskcrawler.domain.chunks import reciprocal_rank_fusion
from taskcrawler.extract.chunking import ChunkingConfig, chunk_markdown, count_tokens

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


def test_reciprocal_rank_fusion_rewards_agreement() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]])
    assert [item for item, _ in fused] == ["b", "a", "d", "c"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)

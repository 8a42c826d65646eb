"""The bench's visible text of Markdown (``--markdown-visible``): what a reader sees, no more."""

from __future__ import annotations

from bench.extract_quality import normalize, visible_text


def test_links_keep_their_label_and_lose_their_url() -> None:
    out = visible_text("see the [report](https://example.com/r?a=1) here")
    assert out == "see the report here"


def test_emphasis_escapes_and_images_are_not_seen() -> None:
    out = visible_text("a **bold** and *em* ~~old~~ Kund\\*innen ![logo](https://x/l.png) end")
    assert out == "a bold and em old Kund*innen  end"


def test_blocks_tables_lists_and_code_keep_their_words_apart() -> None:
    markdown = (
        "# Title\n\npara one\n\n| a | b |\n| --- | --- |\n| c | d |\n\n- one\n- two\n\n"
        "```py\nx = 1\n```\n\nline  \nbreak"
    )
    assert normalize(visible_text(markdown)) == "Title para one a b c d one two x = 1 line break"


def test_raw_html_shows_its_text_not_its_tags() -> None:
    assert normalize(visible_text("<div>\n<b>kept</b>\n</div>\n\nnote<sup>1</sup>")) == (
        "kept note1"
    )


def test_text_that_is_not_markdown_syntax_is_unchanged() -> None:
    assert visible_text("2 < 3 and 4 > 1, a_b") == "2 < 3 and 4 > 1, a_b"

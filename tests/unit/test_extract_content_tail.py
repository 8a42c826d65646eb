"""What ends an article's content: its own table, list or code stays, a furniture line goes."""

from __future__ import annotations

import pytest

from taskcrawler.extract import extract

URL = "https://example.com/blog/post"
_SENTENCE = "The survey counted the boats in the harbour each spring, and the numbers kept rising. "
_PROSE = f"<p>{_SENTENCE * 3}</p><p>{_SENTENCE * 3}</p>"
_TABLE = (
    "<table><tr><th>Year</th><th>Boats</th></tr>"
    "<tr><td>2020</td><td>15</td></tr><tr><td>2021</td><td>17</td></tr></table>"
)
_LIST = "<ul><li>Check the moorings</li><li>Count the hulls</li></ul>"
_CODE = "<pre><code>boats = count(harbour)\nreport(boats)</code></pre>"


def _page(article: str) -> bytes:
    return (
        "<html><body><nav><a href='/'>Home</a> <a href='/about'>About</a></nav>"
        f"<article><h1>Boats in the harbour</h1>{article}</article>"
        "<footer>Copyright 2024 Example</footer></body></html>"
    ).encode()


def _formats(article: str) -> tuple[str, str]:
    result = extract(_page(article), url=URL, formats=["text", "markdown"])
    assert result.text is not None and result.markdown is not None
    return result.text, result.markdown


@pytest.mark.parametrize(
    ("block", "words"),
    [
        (_TABLE, ("2021", "17")),
        (_LIST, ("Check the moorings", "Count the hulls")),
        (_CODE, ("report(boats)",)),
    ],
    ids=["table", "list", "code"],
)
def test_a_table_list_or_code_block_ending_the_article_is_kept(
    block: str, words: tuple[str, ...]
) -> None:
    for output in _formats(_PROSE + block):
        assert all(word in output for word in words), output


def test_the_same_table_is_kept_at_the_end_as_in_the_middle() -> None:
    middle, _ = _formats(f"<p>{_SENTENCE * 3}</p>{_TABLE}<p>{_SENTENCE * 3}</p>")
    end, _ = _formats(_PROSE + _TABLE)
    assert "2020\t15" in middle
    assert "2020\t15" in end


def test_a_short_furniture_line_after_the_last_sentence_is_still_dropped() -> None:
    text, markdown = _formats(_PROSE + "<p><a href='/news'>Back to all news</a></p>")
    assert "Back to all news" not in text
    assert "Back to all news" not in markdown


def test_a_closing_sentence_that_trails_off_is_kept_and_a_teaser_link_is_not() -> None:
    kept = _formats(_PROSE + "<p>Read more about the harbour next spring…</p>")
    linked = _formats(_PROSE + "<p><a href='/more'>Read more…</a></p>")
    assert all(output.endswith("Read more about the harbour next spring…") for output in kept)
    assert not any("Read more" in output for output in linked)


@pytest.mark.parametrize(
    "line",
    [
        "<p>See also: <a href='/tides'>Tide tables for the harbour</a></p>",
        "<p><strong>See also</strong> <a href='/tides'>Tide tables for the harbour</a> and "
        "<a href='/census'>the boat census</a>.</p>",
    ],
    ids=["colon", "sentence"],
)
def test_a_see_also_line_after_the_last_paragraph_is_kept(line: str) -> None:
    for output in _formats(_PROSE + line):
        assert "Tide tables for the harbour" in output, output

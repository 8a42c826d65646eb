"""What a request's options make of a page: the whole page or its main content, CSS selectors,
the cleaned HTML, images, inline images; PDFs; changeTracking against the previous run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from taskcrawler.domain.change_tracking import (
    Previous,
    TrackingRequest,
    change_tracking,
    changed_lines,
)
from taskcrawler.domain.runs import RunContent
from taskcrawler.domain.selectors import parse_ignore_selectors
from taskcrawler.extract import pdf
from taskcrawler.extract.documents import extract_page
from taskcrawler.extract.metadata import MAX_FIELD_CHARS
from taskcrawler.extract.page import WHOLE_CONTENT, ContentChoice, extract
from taskcrawler.extract.pdf import MAX_TEXT_CHARS, UnreadablePdf, extract_pdf
from taskcrawler.worker.parsing import PageParser
from tests.support.firecrawl_site import PDF_PAGES, PDF_TITLE, article_html
from tests.support.pdfs import pdf_document, pdf_of_one_stream

URL = "http://news.test/story"
FORMATS = ("markdown", "text", "clean_html", "images")


def _read(choice: ContentChoice = WHOLE_CONTENT) -> dict[str, str | list[str] | None]:
    found = extract(article_html().encode(), url=URL, formats=FORMATS, choice=choice)
    return {
        "markdown": found.markdown,
        "text": found.text,
        "clean_html": found.clean_html,
        "images": found.images,
    }


def test_the_main_content_by_default() -> None:
    page = _read()
    markdown = str(page["markdown"])
    assert "River bridge repairs" in markdown and "ferry" in markdown
    assert "Footer words" not in markdown and "About us" not in markdown
    assert "data:image" not in markdown  # inline images are left out by default
    html = str(page["clean_html"])
    assert "<article>" in html and "<script" not in html and "<footer" not in html
    assert page["images"] == ["http://news.test/img/bridge.jpg"]


def test_the_whole_page_when_asked() -> None:
    page = _read(ContentChoice(only_main_content=False, keep_data_images=True))
    markdown = str(page["markdown"])
    for part in ("About us", "Site banner words", "River bridge repairs", "Footer words"):
        assert part in markdown
    assert "![inline](data:image/png;base64," in markdown
    assert "document.title" not in markdown and "<script" not in str(page["clean_html"])


def test_selectors_choose_what_is_read() -> None:
    included = _read(ContentChoice(include=parse_ignore_selectors(["p.lead", "footer"])))
    assert str(included["markdown"]).startswith("The council said")
    assert "Footer words" in str(included["markdown"]) and "ferry" not in str(included["text"])
    excluded = _read(
        ContentChoice(
            only_main_content=False, exclude=parse_ignore_selectors([".advert", "nav", "footer"])
        )
    )
    markdown = str(excluded["markdown"])
    assert "Buy our widgets" not in markdown and "About us" not in markdown
    assert "Footer words" not in markdown and "River bridge repairs" in markdown
    # Metadata and images are the whole page's whatever the selectors.
    assert excluded["images"] == ["http://news.test/img/bridge.jpg"]


def test_a_pdf_is_read_to_markdown_and_text() -> None:
    body = pdf_document(PDF_TITLE, PDF_PAGES, info_title="figures.pdf")
    found = extract_page(
        body, url=URL, content_type="application/pdf", formats=("markdown", "text")
    )
    assert found.title == PDF_TITLE  # the declared title is a file name: the largest line
    assert found.markdown is not None and found.markdown.startswith(f"# {PDF_TITLE}\n\n")
    assert "Revenue grew by ten percent in the quarter. Costs stayed flat." in found.markdown
    assert found.text is not None and "The third page lists the risks." in found.text
    assert (found.metadata["pages"], found.metadata["pages_read"]) == (3, 3)
    first = extract_pdf(body, url=URL, formats=("markdown",), max_pages=1)
    assert "second page" not in str(first.markdown) and first.metadata["pages_read"] == 1


def test_a_pdf_that_cannot_be_opened_is_said_so() -> None:
    with pytest.raises(UnreadablePdf):
        extract_pdf(b"%PDF-1.7 nothing else", url=URL, formats=("markdown",))


def test_a_small_pdf_cannot_spell_unbounded_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every page draws the same stream: 16 million characters from 16 kB. The cap is lowered
    # so the test reads a few pages, not ten million characters; the code path is the same.
    cap = 200_000
    monkeypatch.setattr(pdf, "MAX_TEXT_CHARS", cap)
    pages = 200
    body = pdf_of_one_stream(pages, "A" * 2000, lines_per_page=40)
    assert len(body) < 32 * 1024
    found = extract_pdf(body, url=URL, formats=("markdown", "text"))
    assert found.text is not None and found.markdown is not None
    assert cap // 2 < len(found.text) <= cap and len(found.markdown) <= cap
    assert found.metadata["pages"] == pages and found.metadata["pages_read"] < pages
    assert MAX_TEXT_CHARS >= 10 * 1024 * 1024  # the largest HTML page's text fits


def test_the_pages_of_a_pdf_are_read_past_one_that_cannot_be_loaded() -> None:
    # A page tree that counts more pages than it has, a common fault: PDFium opens the
    # document and cannot load page 2. That failed the job as an extraction error.
    body = pdf_document("Title", [["Text of page one."]]).replace(b"/Count 1", b"/Count 2")
    found = extract_pdf(body, url=URL, formats=("markdown",))
    assert found.markdown is not None and "Text of page one." in found.markdown
    assert (found.metadata["pages"], found.metadata["pages_read"]) == (2, 2)


def test_a_pdf_says_no_more_of_itself_than_a_page_may() -> None:
    long = "S" * (MAX_FIELD_CHARS * 10)
    body = pdf_document("Title", [["Text."]], info={"Subject": long, "Author": long})
    metadata = extract_pdf(body, url=URL).metadata
    # An HTML page's fields are cut there too; in an object stream, a 39 kB PDF held 20 MB.
    assert len(metadata["description"]) == len(metadata["author"]) == MAX_FIELD_CHARS


def _previous(markdown: str) -> Previous:
    return Previous(datetime(2026, 1, 2, tzinfo=UTC), RunContent(markdown, ""))


@pytest.mark.parametrize(
    ("previous", "markdown", "status", "expected"),
    [
        (None, "# A", 200, "new"),
        ("# A\n\nsame", "# A\n\nsame", 200, "same"),
        ("# A\n\nold line", "# A\n\nnew line", 200, "changed"),
        ("# A", "", 404, "removed"),
        ("# A", "", 410, "removed"),
    ],
)
def test_change_status(previous: str | None, markdown: str, status: int, expected: str) -> None:
    before = None if previous is None else _previous(previous)
    tracked = change_tracking(TrackingRequest(git_diff=True), before, markdown, status)
    assert tracked["changeStatus"] == expected
    assert (tracked["previousScrapeAt"] is None) == (previous is None)
    assert ("diff" in tracked) == (expected in ("changed", "removed"))


def test_the_git_diff_is_a_unified_diff_and_its_parse() -> None:
    tracked = change_tracking(
        TrackingRequest(git_diff=True), _previous("a\nb\nc\n"), "a\nB\nc\n", 200
    )
    assert tracked["diff"]["text"].startswith("--- previous\n+++ current\n@@ ")
    assert changed_lines(tracked) == ["-b", "+B"]
    plain = change_tracking(TrackingRequest(), _previous("a\n"), "b\n", 200)
    assert plain["changeStatus"] == "changed" and "diff" not in plain


def test_a_pdf_is_always_parsed_in_a_process_of_its_own() -> None:
    parser = PageParser(processes=1)
    assert parser.lane(b"%PDF-1.4 tiny", "application/pdf") == "process"
    assert parser.lane(b"<p>tiny</p>", "text/html") == "inline"

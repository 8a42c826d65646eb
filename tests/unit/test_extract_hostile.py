"""The hostile corpus through the extractor: every output bounded, everything made storable.

The same pages go through the real worker and both databases in
tests/e2e/test_hostile_pages.py; here each output's bound is checked where it is made.
"""

import uuid

import orjson
import pytest

from taskcrawler.domain import ClaimedJob, Outcome
from taskcrawler.domain.storable import storable_outcome
from taskcrawler.extract import extract
from taskcrawler.extract.links import MAX_HREF_CHARS, MAX_LINKS_PER_PAGE, MAX_TEXT_CHARS
from taskcrawler.extract.metadata import (
    MAX_FIELD_CHARS,
    MAX_HEADINGS,
    MAX_HREFLANG,
    MAX_JSON_LD_ERRORS,
    MAX_JSON_LD_ITEMS,
    MAX_PROPERTIES,
)
from taskcrawler.extract.stored import page_content
from tests.support.hostile_pages import BUILDERS, HEADER_PAGES, hostile_page, many_links
from tests.unit.test_storable import is_storable, strings_in

URL = "http://hostile.test/page"
FORMATS = ("metadata", "markdown", "text", "links", "html")
PAGES = [name for name in BUILDERS if name not in HEADER_PAGES]
#: The metadata of any page, as stored: bounded whatever the page.
MAX_METADATA_BYTES = 1024 * 1024


def test_the_pages_hostile_in_their_headers_are_the_ones_named_so() -> None:
    assert {name for name in BUILDERS if hostile_page(name).raw_head is not None} == HEADER_PAGES


@pytest.mark.parametrize("name", PAGES)
def test_every_output_is_bounded_and_storable(name: str) -> None:
    page = hostile_page(name)
    charset = page.content_type.partition("charset=")[2] or None
    result = extract(page.body, url=URL, charset=charset, formats=FORMATS)
    metadata = result.metadata
    assert len(orjson.dumps(metadata)) < MAX_METADATA_BYTES
    assert len(result.links) <= MAX_LINKS_PER_PAGE
    assert all(len(link.url) <= MAX_HREF_CHARS + len(URL) for link in result.links)
    assert all(len(link.text) <= MAX_TEXT_CHARS for link in result.links)
    assert len(metadata["json_ld"]) <= MAX_JSON_LD_ITEMS
    assert len(metadata["json_ld_errors"]) <= MAX_JSON_LD_ERRORS
    assert len(metadata["hreflang"]) <= MAX_HREFLANG
    assert len(metadata["open_graph"]) <= MAX_PROPERTIES
    assert all(len(texts) <= MAX_HEADINGS for texts in metadata["headings"].values())
    for text in (metadata["title"], metadata["description"], *metadata["headings"]["h1"]):
        assert text is None or len(text) <= MAX_FIELD_CHARS

    job = ClaimedJob(uuid.uuid4(), URL, 0, uuid.uuid4())
    outcome = storable_outcome(
        Outcome(
            job=job,
            http_status=200,
            final_url=URL,
            scraped_title=result.title,
            result={"metadata": metadata},
            content=page_content(result, FORMATS, None),
        )
    )
    content = outcome.content
    assert content is not None and content.links is not None
    strings = [outcome.scraped_title or "", *strings_in(outcome.result), *content.texts.values()]
    strings += [s for link in content.links for s in (link.url, link.text, *link.rel)]
    assert all(is_storable(s) for s in strings)


def test_a_deep_page_is_parsed_whole_up_to_the_cut() -> None:
    result = extract(hostile_page("deep").body, url=URL, formats=FORMATS)
    assert result.title == "Deep"
    assert "deepest words" in (result.text or "")


#: Past the limit by more than the limit itself: a count that stopped at the limit, or links
#: kept past it, would both show. (The corpus page of 200,000 is the bounded test's, above.)
PAST_THE_LIMIT = 2 * MAX_LINKS_PER_PAGE + 1


def test_the_links_past_the_limit_are_counted_not_kept() -> None:
    body = many_links(PAST_THE_LIMIT).body
    full = extract(body, url=URL, formats=("links",))
    assert [link.url for link in full.links[:2]] == [
        "http://hostile.test/l/0",
        "http://hostile.test/l/1",
    ]
    assert len(full.links) == MAX_LINKS_PER_PAGE
    counts = {"internal": PAST_THE_LIMIT, "external": 0, "nofollow": 0, "truncated": True}
    assert full.metadata["links"] == counts
    cheap = extract(body, url=URL, formats=("metadata",), max_links=10)
    assert cheap.metadata["links"] == counts  # the same counts without building the links
    fewer = extract(body, url=URL, formats=("links",), max_links=10)
    assert [link.text for link in fewer.links] == [f"link {n}" for n in range(10)]


def test_json_ld_past_the_limit_is_reported_skipped() -> None:
    metadata = extract(hostile_page("json-ld").body, url=URL).metadata
    assert [item["n"] for item in metadata["json_ld"]] == list(range(MAX_JSON_LD_ITEMS))
    assert len(metadata["json_ld_errors"]) == MAX_JSON_LD_ERRORS
    assert all(e["error"].startswith("skipped: over the limit") for e in metadata["json_ld_errors"])


def test_nul_and_surrogates_leave_nothing_unstorable_in_the_extraction() -> None:
    nul = extract(hostile_page("nul").body, url=URL, formats=FORMATS).metadata
    assert nul["title"] == "Ti\ufffdtle \ufffd end"
    surrogates = extract(hostile_page("surrogates").body, url=URL, formats=FORMATS).metadata
    assert surrogates["title"] == "Sur\ufffdrogate \ufffd\ufffd"
    assert surrogates["json_ld_errors"]  # "\ud800" in JSON: refused, and said so

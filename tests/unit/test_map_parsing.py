"""The map's start page, parsed and keyed: what its fetch may hand over, however odd."""

from __future__ import annotations

from taskcrawler.domain.crawls import CrawlSpec
from taskcrawler.domain.urls import MAX_URL_LENGTH
from taskcrawler.service.map_parsing import start_page_keys

START = "http://site.test/"
BODY = b'<html><body><a href="/a">a</a> <a href="http://site.test/b">b</a></body></html>'


def test_a_start_page_redirected_to_a_url_too_long_to_key_still_gives_its_links() -> None:
    """The fetcher follows a redirect to a URL longer than a key may be: the page is listed
    as asked for, with its links, rather than the whole map failing (an error no handler
    answers: a 500)."""
    final_url = START + "x" * MAX_URL_LENGTH
    keys = start_page_keys(
        BODY,
        asked=START,
        final_url=final_url,
        charset="utf-8",
        spec=CrawlSpec(START, max_depth=1),
        words=(),
    )
    assert keys == [START, "http://site.test/a", "http://site.test/b"]

"""What a ``/*`` URL in Firecrawl's extract crawls."""

from __future__ import annotations

import pytest
import re2

from taskcrawler.domain.extract_scope import crawl_scope, crawl_start, is_wildcard


def test_a_wildcard_starts_at_its_prefix() -> None:
    assert is_wildcard("https://a.test/docs/*") and not is_wildcard("https://a.test/docs/")
    assert crawl_start("https://a.test/docs/*") == "https://a.test/docs/"
    assert crawl_start("https://a.test/*") == "https://a.test/"


@pytest.mark.parametrize(
    ("url", "inside", "outside"),
    [
        ("https://a.test/docs/*", ["/docs", "/docs/", "/docs/a/b"], ["/docsx", "/other", "/"]),
        ("https://a.test/v1.2+x/*", ["/v1.2+x/page"], ["/v1x2+x/page", "/v1.22x/page"]),
    ],
)
def test_the_crawl_keeps_to_the_prefix(url: str, inside: list[str], outside: list[str]) -> None:
    (pattern,) = crawl_scope(url)
    compiled = re2.compile(pattern)
    assert all(compiled.search(path) for path in inside)
    assert not any(compiled.search(path) for path in outside)


def test_a_site_root_is_not_narrowed() -> None:
    assert crawl_scope("https://a.test/*") == ()

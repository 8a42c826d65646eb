"""What a map parses in the API's parser processes: the start page's keys. Apart from
service/mapping.py so that those processes import the extractor and the crawl scope only, not
the fetcher and its HTTP client: a process that imports mapping.py costs about a quarter of a
second more CPU to start."""

from __future__ import annotations

from collections.abc import Sequence

from taskcrawler.domain.crawls import CrawlSpec, Scope, Verdict, discover, matches_search
from taskcrawler.domain.urls import crawl_key
from taskcrawler.extract import extract

#: Where each call the map's parser processes run comes from: imported by each process before
#: its first call (:class:`~taskcrawler.common.processes.ProcessPool`'s ``preload``).
PARSED_IN_PROCESSES = ("taskcrawler.service.map_parsing", "taskcrawler.extract.sitemaps")


def start_page_keys(
    body: bytes,
    *,
    asked: str,
    final_url: str,
    charset: str | None,
    spec: CrawlSpec,
    words: Sequence[str],
) -> list[str]:
    """The start page (as asked for and as redirected to) and its links' keys, in scope, each
    once, containing every one of ``words``: parsed and keyed in the runner's process."""
    scope = Scope.of(spec)
    extraction = extract(body, url=final_url, charset=charset, formats=("links",))
    canonical = extraction.metadata.get("canonical_url")
    ordered: dict[str, None] = {}
    for own in (asked, final_url):
        # What was asked for was keyed when the request was checked; a redirect may lead to a
        # URL that has no key (over 2,048 characters): the page is then listed as asked for.
        if scope.check(own) is Verdict.IN_SCOPE:
            ordered.setdefault(crawl_key(own), None)
    found = discover(
        final_url,
        extraction.links,
        canonical if isinstance(canonical, str) else None,
        0,
        spec,
        scope,
    )
    for candidate in found.candidates:
        ordered.setdefault(candidate.key, None)
    return [key for key in ordered if matches_search(key, words)] if words else list(ordered)

"""What one fetched page adds to its crawl's frontier (:func:`discover`), and what a sitemap
adds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import unquote

from taskcrawler.domain.crawls.scope import Scope, Verdict
from taskcrawler.domain.crawls.spec import CrawlSpec
from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.pages import Candidate
from taskcrawler.domain.urls import crawl_key

#: URLs a map lists unless asked for fewer, and the longest ``search`` it filters them by.
DEFAULT_MAP_LIMIT = 5_000
MAX_SEARCH_CHARS = 500


class LinkLike(Protocol):
    """What discovery needs of a link (``taskcrawler.extract.Link`` is one)."""

    @property
    def url(self) -> str: ...

    @property
    def nofollow(self) -> bool: ...


@dataclass(slots=True)
class Discovery:
    """What one page adds to its crawl.

    ``candidates``: distinct in-scope URLs in document order, the page's canonical first when
    it has one elsewhere. ``duplicate_of``: the canonical URL's key when the page names another
    in-scope URL as canonical (the crawl may count the page as a twin of it). ``rejected``:
    how many links were left out, by verdict.
    """

    candidates: list[Candidate] = field(default_factory=list)
    duplicate_of: str | None = None
    rejected: Counter[Verdict] = field(default_factory=Counter)


def discover(
    page_url: str,
    links: Iterable[LinkLike],
    canonical: str | None,
    depth: int,
    spec: CrawlSpec,
    scope: Scope,
) -> Discovery:
    """The frontier candidates of a page fetched at ``depth`` whose final URL is ``page_url``.

    * Links marked nofollow (``rel="nofollow"``, or a page-level ``<meta name="robots"
      content="nofollow">``, which the extractor folds into every link) are not followed: the
      site asked crawlers not to, and a crawl honours robots.txt for the same reason.
    * A canonical URL other than the page's own is a candidate at the page's own depth (it is the
      same document, not a hop further), and the page is reported as its duplicate. The page's
      links are still followed: a canonical pointing every page at the home page is a common
      mistake that must not end a crawl.
    * Links past ``max_depth`` are dropped; the caller deduplicates against what the crawl has.
    """
    result = Discovery()
    seen: set[str] = set()
    own_key = _key_or_none(page_url)
    if own_key is not None:
        seen.add(own_key)
    if canonical:
        key = _key_or_none(canonical)
        if key is not None and key not in seen:
            verdict = scope.check_key(key)
            if verdict is Verdict.IN_SCOPE:
                result.duplicate_of = key
                result.candidates.append(Candidate(key, depth))
            seen.add(key)
    next_depth = depth + 1
    too_deep = spec.max_depth is not None and next_depth > spec.max_depth
    for link in links:
        key = _key_or_none(link.url)
        if key is None:
            result.rejected[Verdict.INVALID_URL] += 1
            continue
        if key in seen:
            continue
        seen.add(key)
        verdict = _link_verdict(link, key, scope, too_deep)
        if verdict is Verdict.IN_SCOPE:
            result.candidates.append(Candidate(key, next_depth))
        else:
            result.rejected[verdict] += 1
    return result


def _link_verdict(link: LinkLike, key: str, scope: Scope, too_deep: bool) -> Verdict:
    if link.nofollow:
        return Verdict.NOFOLLOW
    verdict = scope.check_key(key)
    if verdict is Verdict.IN_SCOPE and too_deep:
        return Verdict.TOO_DEEP
    return verdict


def sitemap_candidates(
    urls: Iterable[str], spec: CrawlSpec, scope: Scope
) -> tuple[list[Candidate], Counter[Verdict]]:
    """Candidates from a site's sitemaps: one hop from the start (so none with ``max_depth``
    0), deduplicated, in sitemap order; and how many were left out, by verdict."""
    candidates: list[Candidate] = []
    rejected: Counter[Verdict] = Counter()
    seen: set[str] = set()
    too_deep = spec.max_depth is not None and spec.max_depth < 1
    for url in urls:
        key = _key_or_none(url)
        if key is None:
            rejected[Verdict.INVALID_URL] += 1
            continue
        if key in seen:
            continue
        seen.add(key)
        verdict = scope.check_key(key)
        if verdict is Verdict.IN_SCOPE and too_deep:
            verdict = Verdict.TOO_DEEP
        if verdict is Verdict.IN_SCOPE:
            candidates.append(Candidate(key, 1))
        else:
            rejected[verdict] += 1
    return candidates, rejected


def sitemap_keys(urls: Sequence[str], spec: CrawlSpec, words: Sequence[str] = ()) -> list[str]:
    """The keys of :func:`sitemap_candidates` (each one hop from the start) that contain every
    one of ``words`` (:func:`matches_search`): a slice of a big sitemap's work, which callers
    run in a process of its own (keying costs tens of microseconds a URL)."""
    candidates, _rejected = sitemap_candidates(urls, spec, Scope.of(spec))
    keys = [candidate.key for candidate in candidates]
    return [key for key in keys if matches_search(key, words)] if words else keys


def matches_search(url: str, words: Sequence[str]) -> bool:
    """Every word (lower case) is in the percent-decoded, lower-cased URL."""
    text = unquote(url).lower()
    return all(word in text for word in words)


def _key_or_none(url: str) -> str | None:
    try:
        return crawl_key(url)
    except InvalidURL:
        return None

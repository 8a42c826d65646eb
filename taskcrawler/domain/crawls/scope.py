"""Which URLs belong to a crawl (:class:`Scope`), and why the others do not (:class:`Verdict`)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from functools import lru_cache
from urllib.parse import urlsplit

from taskcrawler.domain.crawls.spec import CrawlSpec, _checked_url, compile_patterns
from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.urls import crawl_key


class Verdict(StrEnum):
    """Whether a URL belongs to a crawl, and if not, why not."""

    IN_SCOPE = "in_scope"
    INVALID_URL = "invalid_url"  # not http(s), no host, credentials, too long, …
    EXTERNAL = "external"  # another site, and allow_external is off
    SUBDOMAIN = "subdomain"  # a subdomain of the start's site, and allow_subdomains is off
    EXCLUDED = "excluded"  # the path matches an exclude_paths pattern
    NOT_INCLUDED = "not_included"  # include_paths is set and the path matches none
    TOO_DEEP = "too_deep"  # more link hops from the start than max_depth
    NOFOLLOW = "nofollow"  # the link (or its page) says nofollow


def site_of(host: str) -> str:
    """The host a crawl is scoped to: lower case, no trailing dot, no leading ``www.``."""
    host = host.lower().rstrip(".")
    return host[4:] if host.startswith("www.") else host


@lru_cache(maxsize=16384)
def _site_and_path(key: str) -> tuple[str, str]:
    """A key's site (:func:`site_of`) and path. Cached as :func:`crawl_key` is: a site's pages
    link to the same few URLs (its navigation) on every page."""
    parts = urlsplit(key)
    return site_of(parts.hostname or ""), parts.path


class Scope:
    """Decides whether a URL belongs to a crawl.

    * http and https only, both schemes alike;
    * the start URL's host, with or without ``www.`` (``example.com`` and ``www.example.com`` are
      one site), any port; its subdomains only with ``allow_subdomains``; any host with
      ``allow_external`` (which implies subdomains);
    * then the path: excluded when an ``exclude_paths`` pattern is found in it, else included
      when ``include_paths`` is empty or one of its patterns is found in it.
    """

    __slots__ = ("_exclude", "_include", "_site", "allow_external", "allow_subdomains")

    def __init__(
        self,
        start_url: str,
        *,
        include_paths: Sequence[str] = (),
        exclude_paths: Sequence[str] = (),
        allow_subdomains: bool = False,
        allow_external: bool = False,
    ) -> None:
        host = urlsplit(crawl_key(_checked_url(start_url, "url"))).hostname or ""
        self._site = site_of(host)
        self._include = compile_patterns(include_paths, "include_paths")
        self._exclude = compile_patterns(exclude_paths, "exclude_paths")
        self.allow_subdomains = allow_subdomains or allow_external
        self.allow_external = allow_external

    @classmethod
    def of(cls, spec: CrawlSpec) -> Scope:
        return cls(
            spec.url,
            include_paths=spec.include_paths,
            exclude_paths=spec.exclude_paths,
            allow_subdomains=spec.allow_subdomains,
            allow_external=spec.allow_external,
        )

    @property
    def site(self) -> str:
        return self._site

    def check(self, url: str) -> Verdict:
        """The verdict on ``url`` (absolute; keyed or not)."""
        try:
            key = crawl_key(url)
        except InvalidURL:
            return Verdict.INVALID_URL
        return self.check_key(key)

    def check_key(self, key: str) -> Verdict:
        """The verdict on a URL already made a key by :func:`crawl_key`."""
        site, path = _site_and_path(key)
        verdict = self._host_verdict(site)
        if verdict is not Verdict.IN_SCOPE:
            return verdict
        return self._path_verdict(path)

    def allows(self, url: str) -> bool:
        return self.check(url) is Verdict.IN_SCOPE

    def _host_verdict(self, site: str) -> Verdict:
        if site == self._site:
            return Verdict.IN_SCOPE
        if site.endswith("." + self._site):
            return Verdict.IN_SCOPE if self.allow_subdomains else Verdict.SUBDOMAIN
        return Verdict.IN_SCOPE if self.allow_external else Verdict.EXTERNAL

    def _path_verdict(self, path: str) -> Verdict:
        if any(pattern.search(path) for pattern in self._exclude):
            return Verdict.EXCLUDED
        if self._include and not any(pattern.search(path) for pattern in self._include):
            return Verdict.NOT_INCLUDED
        return Verdict.IN_SCOPE

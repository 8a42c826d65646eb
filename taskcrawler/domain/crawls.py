"""Crawls, without I/O: what a crawl asks for (:class:`CrawlSpec`), which URLs belong to it
(:class:`Scope`), the key it deduplicates them on (:func:`crawl_key`), and what one fetched page
adds to its frontier (:func:`discover`).

Path patterns come from users, so they are compiled with RE2 (``google-re2``): matching takes
time linear in the path whatever the pattern, so no pattern can be catastrophic to evaluate.
RE2 has no backreferences and no lookaround; a pattern that uses them is refused with a message
that names the field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit
from uuid import UUID

import re2

from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.jobs import DEFAULT_FORMATS, UNSTATED_FORMATS
from taskcrawler.domain.rendering import RENDER_MODES, RenderRequest, effective_mode
from taskcrawler.domain.scrape_options import DEFAULT_OPTIONS, ScrapeOptions
from taskcrawler.domain.urls import crawl_key, validate_url

DEFAULT_LIMIT = 10_000
#: The largest ``limit`` unless the deployment sets another (TASKCRAWLER_CRAWL_MAX_LIMIT).
DEFAULT_MAX_LIMIT = 100_000
MAX_DEPTH = 1_000
MAX_PATTERNS = 100
MAX_PATTERN_LENGTH = 1_000
#: Memory RE2 may use for one compiled pattern; a bigger program is refused as too complex.
PATTERN_MAX_MEMORY = 1 << 20
#: A century, as for jobs: older than any page can be.
MAX_AGE_SECONDS = 100 * 365 * 24 * 3600
#: The webhook events a crawl can announce to its callback URL: each finished page, and the end.
CRAWL_PAGE_EVENT = "crawl.page"
CRAWL_COMPLETED_EVENT = "crawl.completed"
WEBHOOK_EVENTS = (CRAWL_PAGE_EVENT, CRAWL_COMPLETED_EVENT)
DEFAULT_WEBHOOK_EVENTS = (CRAWL_COMPLETED_EVENT,)


def stored_webhook_events(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The webhook events of a crawl's stored spec (:meth:`CrawlSpec.to_dict`); a spec stored
    without them asked for the default."""
    return tuple(spec.get("webhook_events", DEFAULT_WEBHOOK_EVENTS))


class CrawlStatus(StrEnum):
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"

    @property
    def is_final(self) -> bool:
        return self is not CrawlStatus.RUNNING


class SitemapMode(StrEnum):
    """``include``: sitemaps and links; ``skip``: links only; ``only``: sitemaps only."""

    INCLUDE = "include"
    SKIP = "skip"
    ONLY = "only"


class InvalidCrawlSpec(ValueError):
    """Bad input for a crawl (or a map); ``field`` names the offending field, as in
    ``include_paths[2]``, so the API can answer 422 pointing at it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# --- path patterns ---------------------------------------------------------------------------


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    options.max_mem = PATTERN_MAX_MEMORY
    return options


def compile_pattern(pattern: str, field: str) -> re2._Regexp:
    """One user pattern, compiled with RE2, or :class:`InvalidCrawlSpec` naming ``field``."""
    if not isinstance(pattern, str) or not pattern:
        raise InvalidCrawlSpec(field, "a pattern must be a non-empty string")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidCrawlSpec(field, f"a pattern may be at most {MAX_PATTERN_LENGTH} characters")
    try:
        return re2.compile(pattern, options=_re2_options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise InvalidCrawlSpec(
            field,
            f"invalid regular expression {pattern!r}: {reason} (RE2 syntax: no backreferences "
            "or lookaround)",
        ) from None


def compile_patterns(patterns: Sequence[str], field: str) -> tuple[re2._Regexp, ...]:
    if isinstance(patterns, str):
        raise InvalidCrawlSpec(field, "must be a list of regular expressions, not one string")
    if len(patterns) > MAX_PATTERNS:
        raise InvalidCrawlSpec(field, f"at most {MAX_PATTERNS} patterns")
    return tuple(compile_pattern(p, f"{field}[{i}]") for i, p in enumerate(patterns))


# --- the spec --------------------------------------------------------------------------------


def _checked_url(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidCrawlSpec(field, "must be a URL string")
    try:
        return validate_url(value)
    except InvalidURL as exc:
        raise InvalidCrawlSpec(field, str(exc)) from None


def _checked_int(value: object, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidCrawlSpec(field, "must be an integer")
    if not low <= value <= high:
        raise InvalidCrawlSpec(field, f"must be between {low:,} and {high:,}, not {value:,}")
    return value


def _checked_flag(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidCrawlSpec(field, "must be true or false")
    return value


def _checked_sitemap(value: object) -> SitemapMode:
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return SitemapMode(value)
    except ValueError:
        choices = ", ".join(mode.value for mode in SitemapMode)
        raise InvalidCrawlSpec("sitemap", f"must be one of {choices}, not {value!r}") from None


def _checked_formats(value: object, known: Collection[str] | None) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise InvalidCrawlSpec("formats", "must be a non-empty list of format names")
    formats = tuple(dict.fromkeys(value))
    for index, name in enumerate(formats):
        if not isinstance(name, str) or (known is not None and name not in known):
            allowed = f"; known: {', '.join(sorted(known))}" if known is not None else ""
            raise InvalidCrawlSpec(f"formats[{index}]", f"unknown format {name!r}{allowed}")
    return formats


def _checked_render(
    mode: object, formats: Sequence[str], options: ScrapeOptions = DEFAULT_OPTIONS
) -> str:
    """The pages' render mode, as a job's: see :func:`effective_mode`."""
    if mode is not None and not isinstance(mode, str):
        raise InvalidCrawlSpec("render", f"must be one of {', '.join(RENDER_MODES)}")
    try:
        return effective_mode(mode, list(formats), options)
    except ValueError as exc:
        raise InvalidCrawlSpec("render", str(exc)) from None


def _checked_events(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidCrawlSpec("webhook_events", "must be a list of event names")
    events = tuple(dict.fromkeys(value))
    for index, name in enumerate(events):
        if name not in WEBHOOK_EVENTS:
            raise InvalidCrawlSpec(
                f"webhook_events[{index}]",
                f"unknown event {name!r}; known: {', '.join(WEBHOOK_EVENTS)}",
            )
    return events


def _checked_max_age(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidCrawlSpec("max_age", "must be a number of seconds")
    if not 0 <= value <= MAX_AGE_SECONDS:
        raise InvalidCrawlSpec("max_age", f"must be between 0 and {MAX_AGE_SECONDS} seconds")
    return float(value)


@dataclass(frozen=True, slots=True)
class CrawlSpec:
    """What a crawl asks for. Build it with :meth:`create`, which validates every field (a
    direct construction is validated too, except against a deployment's ``max_limit``).

    ``max_depth``: link hops from the start URL (``None``: no limit but ``limit``; sitemap URLs
    count as one hop). ``include_paths`` / ``exclude_paths``: RE2 patterns searched in a URL's
    path (anchor them with ``^`` and ``$`` as needed); exclusion wins. ``max_age``: seconds; a
    page this tenant scraped more recently is reused instead of fetched. ``webhook_events``:
    what the callback URL is told of (:data:`WEBHOOK_EVENTS`).
    """

    url: str
    max_depth: int | None = None
    limit: int = DEFAULT_LIMIT
    include_paths: tuple[str, ...] = ()
    exclude_paths: tuple[str, ...] = ()
    allow_subdomains: bool = False
    allow_external: bool = False
    sitemap: SitemapMode = SitemapMode.INCLUDE
    formats: tuple[str, ...] = DEFAULT_FORMATS
    callback_url: str | None = None
    max_age: float | None = None
    #: As for a job, for every page: never, auto or always (``create`` picks always for a
    #: screenshot when not asked); ``render_options`` ``None`` is the defaults.
    render: str = "never"
    render_options: RenderRequest | None = None
    webhook_events: tuple[str, ...] = DEFAULT_WEBHOOK_EVENTS
    #: As for a job, for every page: headers, selectors, languages, PDFs, the gap between
    #: requests.
    options: ScrapeOptions = DEFAULT_OPTIONS

    def __post_init__(self) -> None:
        _checked_url(self.url, "url")
        if self.max_depth is not None:
            _checked_int(self.max_depth, "max_depth", 0, MAX_DEPTH)
        _checked_int(self.limit, "limit", 1, 2**31 - 1)
        object.__setattr__(self, "include_paths", tuple(self.include_paths))
        object.__setattr__(self, "exclude_paths", tuple(self.exclude_paths))
        compile_patterns(self.include_paths, "include_paths")
        compile_patterns(self.exclude_paths, "exclude_paths")
        _checked_flag(self.allow_subdomains, "allow_subdomains")
        _checked_flag(self.allow_external, "allow_external")
        object.__setattr__(self, "sitemap", _checked_sitemap(self.sitemap))
        object.__setattr__(self, "formats", _checked_formats(self.formats, None))
        if self.callback_url is not None:
            _checked_url(self.callback_url, "callback_url")
        object.__setattr__(self, "max_age", _checked_max_age(self.max_age))
        if self.render is None:
            raise InvalidCrawlSpec("render", f"must be one of {', '.join(RENDER_MODES)}")
        _checked_render(self.render, self.formats, self.options)
        object.__setattr__(self, "webhook_events", _checked_events(self.webhook_events))

    @property
    def page_webhooks(self) -> bool:
        """Whether every finished page is announced (``crawl.page``)."""
        return CRAWL_PAGE_EVENT in self.webhook_events

    @classmethod
    def create(
        cls,
        url: str,
        *,
        max_limit: int = DEFAULT_MAX_LIMIT,
        known_formats: Collection[str] | None = None,
        max_depth: int | None = None,
        limit: int = DEFAULT_LIMIT,
        include_paths: Sequence[str] = (),
        exclude_paths: Sequence[str] = (),
        allow_subdomains: bool = False,
        allow_external: bool = False,
        sitemap: SitemapMode | str = SitemapMode.INCLUDE,
        formats: Sequence[str] = DEFAULT_FORMATS,
        callback_url: str | None = None,
        max_age: float | None = None,
        render: str | None = None,
        render_options: RenderRequest | None = None,
        webhook_events: Sequence[str] = DEFAULT_WEBHOOK_EVENTS,
        options: ScrapeOptions = DEFAULT_OPTIONS,
    ) -> CrawlSpec:
        """A validated spec; :class:`InvalidCrawlSpec` names the first bad field."""
        _checked_url(url, "url")
        _checked_int(limit, "limit", 1, max_limit)
        for name, patterns in (("include_paths", include_paths), ("exclude_paths", exclude_paths)):
            if isinstance(patterns, str):
                raise InvalidCrawlSpec(name, "must be a list of regular expressions")
        if known_formats is not None:
            _checked_formats(formats, known_formats)
        return cls(
            url=url,
            max_depth=max_depth,
            limit=limit,
            include_paths=tuple(include_paths),
            exclude_paths=tuple(exclude_paths),
            allow_subdomains=allow_subdomains,
            allow_external=allow_external,
            sitemap=_checked_sitemap(sitemap),
            formats=tuple(formats),
            callback_url=callback_url,
            max_age=max_age,
            render=_checked_render(render, formats, options),
            render_options=render_options,
            webhook_events=_checked_events(webhook_events),
            options=options,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, for storing the spec with its crawl."""
        return {
            "url": self.url,
            "max_depth": self.max_depth,
            "limit": self.limit,
            "include_paths": list(self.include_paths),
            "exclude_paths": list(self.exclude_paths),
            "allow_subdomains": self.allow_subdomains,
            "allow_external": self.allow_external,
            "sitemap": self.sitemap.value,
            "formats": list(self.formats),
            "callback_url": self.callback_url,
            "max_age": self.max_age,
            # Copied onto every page as a job stores them (storage.crawls._page_row).
            "render": self.render,
            "render_options": None
            if self.render_options is None
            else self.render_options.to_json(),
            # Read on every page row too (storage.crawls.page_callback).
            "webhook_events": list(self.webhook_events),
            # Copied onto every page as a job stores them; holds the request headers.
            "options": self.options.to_json(),
        }

    def public_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` as it may be shown: the request headers' names only."""
        return {**self.to_dict(), "options": self.options.public()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CrawlSpec:
        """The inverse of :meth:`to_dict` (a stored spec is not checked against today's
        ``max_limit``: it was accepted when it was created)."""
        return cls(
            url=data["url"],
            max_depth=data.get("max_depth"),
            limit=data.get("limit", DEFAULT_LIMIT),
            include_paths=tuple(data.get("include_paths", ())),
            exclude_paths=tuple(data.get("exclude_paths", ())),
            allow_subdomains=data.get("allow_subdomains", False),
            allow_external=data.get("allow_external", False),
            sitemap=SitemapMode(data.get("sitemap", SitemapMode.INCLUDE)),
            # Stored specs name their formats; the oldest stated none and meant the metadata.
            formats=tuple(data.get("formats", UNSTATED_FORMATS)),
            callback_url=data.get("callback_url"),
            max_age=data.get("max_age"),
            render=data.get("render") or "never",
            render_options=None
            if data.get("render_options") is None
            else RenderRequest.from_json(data["render_options"]),
            webhook_events=stored_webhook_events(data),
            options=ScrapeOptions.from_json(data.get("options")),
        )


# --- a crawl, as stored and as shown ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CrawlCounts:
    """A crawl's pages by state, counted in one statement, so they always add up:
    ``discovered == pending + completed + failed + cancelled`` (``pending`` includes the pages
    being fetched, ``processing`` of them)."""

    pending: int = 0
    processing: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0

    @property
    def discovered(self) -> int:
        return self.pending + self.completed + self.failed + self.cancelled

    @classmethod
    def of(cls, by_status: Mapping[str, int]) -> CrawlCounts:
        """From job counts by job status (``PENDING``, ``PROCESSING``, …)."""
        processing = by_status.get("PROCESSING", 0)
        return cls(
            pending=by_status.get("PENDING", 0) + processing,
            processing=processing,
            completed=by_status.get("COMPLETED", 0),
            failed=by_status.get("FAILED", 0),
            cancelled=by_status.get("CANCELLED", 0),
        )


@dataclass(frozen=True, slots=True)
class Crawl:
    """A crawl: its spec, its state, and (when read with them) its pages' counts."""

    id: UUID
    owner: str
    spec: CrawlSpec
    status: CrawlStatus
    created_at: datetime
    finished_at: datetime | None = None
    counts: CrawlCounts = field(default_factory=CrawlCounts)

    @property
    def url(self) -> str:
        return self.spec.url


# --- scope -----------------------------------------------------------------------------------


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


# --- discovery -------------------------------------------------------------------------------


class LinkLike(Protocol):
    """What discovery needs of a link (``taskcrawler.extract.Link`` is one)."""

    @property
    def url(self) -> str: ...

    @property
    def nofollow(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Candidate:
    """A URL for the frontier: ``key`` is what the crawl deduplicates on (and fetches: the key
    is a valid URL, with tracking parameters and fragment gone), ``depth`` its link hops."""

    key: str
    depth: int


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


__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_LIMIT",
    "DEFAULT_WEBHOOK_EVENTS",
    "WEBHOOK_EVENTS",
    "Candidate",
    "Crawl",
    "CrawlCounts",
    "CrawlSpec",
    "CrawlStatus",
    "Discovery",
    "InvalidCrawlSpec",
    "LinkLike",
    "Scope",
    "SitemapMode",
    "Verdict",
    "crawl_key",
    "discover",
    "matches_search",
    "site_of",
    "sitemap_candidates",
    "sitemap_keys",
    "stored_webhook_events",
]

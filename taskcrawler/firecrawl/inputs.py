"""Firecrawl's requests (``/v1``, ``/v2``), in Firecrawl's field names, on the API's
:class:`~taskcrawler.api.inputs.RequestModel` (which refuses what no database can store)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_core.core_schema import ValidationInfo

from taskcrawler.contract.base import RequestModel
from taskcrawler.domain import InvalidURL, validate_url
from taskcrawler.domain.crawls import MAX_DEPTH, MAX_PATTERNS
from taskcrawler.domain.extract_scope import (
    MAX_EXTRACT_CRAWLS,
    WILDCARD,
    crawl_start,
    is_wildcard,
)
from taskcrawler.domain.rendering import MAX_WAIT_SECONDS
from taskcrawler.domain.scrape_options import MAX_CONCURRENCY, MAX_DELAY_SECONDS
from taskcrawler.domain.urls import MAX_URL_LENGTH

#: Firecrawl's largest wait for one scrape, in milliseconds.
FIRECRAWL_MAX_TIMEOUT_MS = 300_000
#: URLs one extract reads at most.
MAX_EXTRACT_URLS = 100


#: Firecrawl options TaskCrawler accepts at their default only (which asks for nothing), and
#: what another value would ask for.
_DEFAULT_ONLY: dict[str, tuple[Any, str]] = {
    "zeroDataRetention": (False, "zeroDataRetention: true"),
}


class FirecrawlLocation(RequestModel):
    country: str | None = Field(None, max_length=8)
    languages: list[Annotated[str, Field(max_length=40)]] | None = Field(None, max_length=20)


class FirecrawlWebhook(RequestModel):
    """Firecrawl's ``webhook`` object (a plain URL string is taken too)."""

    url: str = Field(max_length=MAX_URL_LENGTH)
    headers: dict[str, str] | None = Field(None, max_length=20)
    metadata: dict[str, Any] | None = None
    events: list[Literal["started", "page", "completed", "failed"]] | None = Field(
        None, max_length=4
    )


class FirecrawlScrapeOptions(RequestModel):
    """Firecrawl's scrape options: those TaskCrawler does, and the others at their default
    (which ask for nothing). Any other field or value is refused, naming it."""

    formats: list[str | dict[str, Any]] | None = Field(None, max_length=16)
    onlyMainContent: bool | None = None
    includeTags: list[str] | None = Field(None, max_length=100)
    excludeTags: list[str] | None = Field(None, max_length=100)
    headers: dict[str, str] | None = Field(None, max_length=100)
    skipTlsVerification: bool | None = None
    location: FirecrawlLocation | None = None
    removeBase64Images: bool | None = None
    blockAds: bool | None = None
    parsers: list[str | dict[str, Any]] | None = Field(None, max_length=8)
    changeTrackingOptions: dict[str, Any] | None = None
    # v1's options of the json format ({schema, prompt, systemPrompt}); v2 puts them in it.
    jsonOptions: dict[str, Any] | None = None
    maxAge: int | None = Field(None, ge=0, le=100 * 365 * 24 * 3600 * 1000)
    timeout: int | None = Field(None, ge=1, le=FIRECRAWL_MAX_TIMEOUT_MS)
    # Accepted whatever their value: they change nothing TaskCrawler returns.
    storeInCache: bool | None = None
    fastMode: bool | None = None
    origin: str | None = Field(None, max_length=200)
    integration: str | None = Field(None, max_length=200)
    proxy: Literal["basic", "auto"] | None = None
    # Milliseconds: the page is rendered, and taken once its network is quiet or then.
    waitFor: int | None = Field(None, ge=0, le=int(MAX_WAIT_SECONDS * 1000))
    # A phone's viewport, touch and user agent: the page is rendered.
    mobile: bool | None = None
    # Run in order before the page is taken (checked, naming the action, by page_options).
    actions: list[Any] | None = Field(None, max_length=100)
    # Accepted at their default only.
    zeroDataRetention: bool | None = None

    @field_validator("zeroDataRetention")
    @classmethod
    def _default_only(cls, value: Any, info: ValidationInfo) -> Any:
        allowed, what = _DEFAULT_ONLY[info.field_name or ""]
        if value is not None and value != allowed:
            raise ValueError(f"{what} is not supported by TaskCrawler")
        return value


def _scrapable(url: str) -> str:
    try:
        return validate_url(url)
    except InvalidURL as exc:
        raise ValueError(str(exc)) from None


class FirecrawlScrapeIn(FirecrawlScrapeOptions):
    url: Annotated[str, AfterValidator(_scrapable)] = Field(max_length=MAX_URL_LENGTH)


class FirecrawlBatchIn(FirecrawlScrapeOptions):
    urls: list[Annotated[str, Field(max_length=MAX_URL_LENGTH)]] = Field(
        min_length=1, max_length=1000
    )
    ignoreInvalidURLs: bool | None = None
    maxConcurrency: int | None = Field(None, ge=1)
    webhook: FirecrawlWebhook | str | None = None

    @model_validator(mode="after")
    def _urls_scrapable(self) -> FirecrawlBatchIn:
        if not self.ignoreInvalidURLs and (invalid := self.invalid_urls()):
            index, problem = invalid[0]
            raise ValueError(f"urls[{index}]: {problem}")
        return self

    def invalid_urls(self) -> list[tuple[int, str]]:
        problems = []
        for index, url in enumerate(self.urls):
            try:
                validate_url(url)
            except InvalidURL as exc:
                problems.append((index, str(exc)))
        return problems

    def valid_urls(self) -> list[str]:
        refused = {index for index, _ in self.invalid_urls()}
        return [url for index, url in enumerate(self.urls) if index not in refused]


class FirecrawlExtractIn(RequestModel):
    """Firecrawl's extract: several URLs, one schema and/or prompt."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)

    urls: list[Annotated[str, Field(max_length=MAX_URL_LENGTH)]] = Field(
        min_length=1, max_length=MAX_EXTRACT_URLS
    )
    prompt: str | None = Field(None, max_length=10_000)
    json_schema: dict[str, Any] | None = Field(None, alias="schema")
    systemPrompt: str | None = Field(None, max_length=10_000)
    ignoreInvalidURLs: bool | None = None
    scrapeOptions: FirecrawlScrapeOptions | None = None
    # Accepted whatever their value: TaskCrawler always answers with its sources.
    showSources: bool | None = None
    origin: str | None = Field(None, max_length=200)
    integration: str | None = Field(None, max_length=200)
    # Accepted at their default only.
    allowExternalLinks: bool | None = None
    enableWebSearch: bool | None = None

    @field_validator("allowExternalLinks", "enableWebSearch")
    @classmethod
    def _not_asked(cls, value: Any, info: ValidationInfo) -> Any:
        if value:
            raise ValueError(
                f"{info.field_name}: true is not supported by TaskCrawler (it reads the URLs "
                "given, and the pages under a URL ending in /*)"
            )
        return value

    @model_validator(mode="after")
    def _urls_scrapable(self) -> FirecrawlExtractIn:
        if sum(is_wildcard(url) for url in self.urls) > MAX_EXTRACT_CRAWLS:
            raise ValueError(
                f"urls: at most {MAX_EXTRACT_CRAWLS} URLs ending in /* (each is a crawl)"
            )
        for index, url in enumerate(self.urls):
            if not self.ignoreInvalidURLs:
                try:
                    validate_url(crawl_start(url))
                except InvalidURL as exc:
                    raise ValueError(f"urls[{index}]: {exc}") from None
        return self

    def invalid_urls(self) -> list[str]:
        """The URLs that cannot be read, in order (another spelling of a URL read is read)."""
        invalid = []
        for url in self.urls:
            try:
                validate_url(crawl_start(url))
            except InvalidURL:
                invalid.append(url)
        return invalid

    def valid_urls(self) -> list[str]:
        """The URLs that can be read, a ``/*`` kept after its normalised start."""
        valid = []
        for url in self.urls:
            try:
                start = validate_url(crawl_start(url))
            except InvalidURL:
                continue
            if is_wildcard(url):
                start = start.rstrip("/") + WILDCARD
            valid.append(start)
        return list(dict.fromkeys(valid))


class FirecrawlSearchIn(RequestModel):
    """Firecrawl's search, v2 names and v1's (``lang``, ``country``)."""

    query: str = Field(min_length=1, max_length=500)
    limit: int | None = Field(None, ge=1, le=100)
    sources: list[str | dict[str, Any]] | None = Field(None, max_length=3)
    categories: list[str | dict[str, Any]] | None = Field(None, max_length=5)
    includeDomains: list[Annotated[str, Field(max_length=253)]] | None = Field(None, max_length=50)
    excludeDomains: list[Annotated[str, Field(max_length=253)]] | None = Field(None, max_length=50)
    tbs: str | None = Field(None, max_length=40)
    lang: str | None = Field(None, max_length=20)
    country: str | None = Field(None, max_length=8)
    location: str | None = Field(None, max_length=200)
    timeout: int | None = Field(None, ge=1, le=FIRECRAWL_MAX_TIMEOUT_MS)
    ignoreInvalidURLs: bool | None = None
    scrapeOptions: FirecrawlScrapeOptions | None = None
    origin: str | None = Field(None, max_length=200)
    integration: str | None = Field(None, max_length=200)

    @field_validator("categories")
    @classmethod
    def _no_categories(cls, value: Any) -> Any:
        if value:
            raise ValueError("categories are not supported by TaskCrawler (sources are)")
        return value

    @field_validator("location")
    @classmethod
    def _no_location(cls, value: Any) -> Any:
        if value:
            raise ValueError("location is not supported by TaskCrawler (lang and country are)")
        return value


#: Crawl options accepted at their default only, and what another value would ask for.
_CRAWL_DEFAULT_ONLY: dict[str, tuple[Any, str]] = {
    "ignoreRobotsTxt": (False, "ignoreRobotsTxt: true (robots.txt is always obeyed)"),
    "ignoreQueryParameters": (False, "ignoreQueryParameters: true"),
    "regexOnFullURL": (False, "regexOnFullURL: true (patterns match the path)"),
    "zeroDataRetention": (False, "zeroDataRetention: true"),
}


class FirecrawlCrawlIn(RequestModel):
    """Firecrawl's crawl request, v2 names and v1's (``maxDepth``, ``ignoreSitemap``); what
    TaskCrawler cannot do is refused, naming the field."""

    url: Annotated[str, AfterValidator(_scrapable)] = Field(max_length=MAX_URL_LENGTH)
    includePaths: list[str] | None = Field(None, max_length=MAX_PATTERNS)
    excludePaths: list[str] | None = Field(None, max_length=MAX_PATTERNS)
    limit: int | None = Field(None, ge=1, le=2**31 - 1)
    maxDiscoveryDepth: int | None = Field(None, ge=0, le=MAX_DEPTH)
    sitemap: Literal["include", "skip", "only"] | None = None
    allowSubdomains: bool | None = None
    allowExternalLinks: bool | None = None
    scrapeOptions: FirecrawlScrapeOptions | None = None
    maxConcurrency: int | None = Field(None, ge=1, le=MAX_CONCURRENCY)
    # Accepted whatever their value: TaskCrawler deduplicates every crawl's URLs and crawls
    # the whole site (as crawlEntireDomain: true).
    crawlEntireDomain: bool | None = None
    deduplicateSimilarURLs: bool | None = None
    origin: str | None = Field(None, max_length=200)
    integration: str | None = Field(None, max_length=200)
    # Accepted at their default only.
    ignoreRobotsTxt: bool | None = None
    ignoreQueryParameters: bool | None = None
    regexOnFullURL: bool | None = None
    zeroDataRetention: bool | None = None
    delay: float | None = Field(None, ge=0, le=MAX_DELAY_SECONDS)
    webhook: FirecrawlWebhook | str | None = None
    # Refused when set.
    prompt: str | None = Field(None, max_length=10_000)
    robotsUserAgent: str | None = Field(None, max_length=1000)
    # v1
    maxDepth: int | None = Field(None, ge=0, le=MAX_DEPTH)
    ignoreSitemap: bool | None = None
    allowBackwardLinks: bool | None = None

    @field_validator("ignoreRobotsTxt", "ignoreQueryParameters", "regexOnFullURL",
                     "zeroDataRetention")  # fmt: skip
    @classmethod
    def _default_only(cls, value: Any, info: ValidationInfo) -> Any:
        allowed, what = _CRAWL_DEFAULT_ONLY[info.field_name or ""]
        if value is not None and value != allowed:
            raise ValueError(f"{what} is not supported by TaskCrawler")
        return value

    @field_validator("prompt", "robotsUserAgent")
    @classmethod
    def _unset(cls, value: Any, info: ValidationInfo) -> Any:
        if value is not None:
            raise ValueError(f"{info.field_name} is not supported by TaskCrawler")
        return value

    def max_depth(self) -> int | None:
        return self.maxDiscoveryDepth if self.maxDiscoveryDepth is not None else self.maxDepth

    def sitemap_mode(self) -> Literal["include", "skip", "only"]:
        if self.sitemap is not None:
            return self.sitemap
        return "skip" if self.ignoreSitemap else "include"

    def formats(self) -> list[str | dict[str, Any]]:
        return (self.scrapeOptions.formats if self.scrapeOptions else None) or ["markdown"]

    def max_age_seconds(self) -> float | None:
        max_age = self.scrapeOptions.maxAge if self.scrapeOptions else None
        return None if max_age is None else max_age / 1000


class FirecrawlMapIn(RequestModel):
    url: str = Field(max_length=MAX_URL_LENGTH)
    search: str | None = Field(None, max_length=1000)
    limit: int | None = Field(None, ge=1)
    includeSubdomains: bool | None = None
    timeout: int | None = Field(None, ge=1, le=FIRECRAWL_MAX_TIMEOUT_MS)
    origin: str | None = Field(None, max_length=200)
    integration: str | None = Field(None, max_length=200)
    # v2
    sitemap: Literal["include", "skip", "only"] | None = None
    ignoreQueryParameters: bool | None = None
    # v1
    ignoreSitemap: bool | None = None
    sitemapOnly: bool | None = None
    location: dict[str, Any] | None = None

    @field_validator("location")
    @classmethod
    def _no_location(cls, value: Any) -> Any:
        if value:
            raise ValueError("location is not supported by TaskCrawler")
        return value

    @model_validator(mode="after")
    def _one_sitemap_mode(self) -> FirecrawlMapIn:
        # Together they would ask for the sitemap's URLs alone and for none of them: an empty
        # map that looks like a site without pages.
        if self.ignoreSitemap and self.sitemapOnly:
            raise ValueError(
                "ignoreSitemap and sitemapOnly contradict each other (one leaves the sitemap "
                "out, the other lists only its URLs): set at most one of them"
            )
        v1 = "only" if self.sitemapOnly else "skip" if self.ignoreSitemap else None
        if self.sitemap is not None and v1 is not None and v1 != self.sitemap:
            flag = "sitemapOnly" if self.sitemapOnly else "ignoreSitemap"
            raise ValueError(f"sitemap {self.sitemap!r} contradicts {flag}: set one of them")
        return self

    def sitemap_mode(self) -> Literal["include", "skip", "only"]:
        if self.sitemap is not None:
            return self.sitemap
        if self.sitemapOnly:
            return "only"
        return "skip" if self.ignoreSitemap else "include"

"""Web search through a search engine the operator runs (a SearXNG instance): what a query
asks, what a result is, and what is refused. Pure.

A search engine's answer is hostile input like any page: its results are kept only when their
URL is one TaskCrawler would fetch, their texts are cut, their count is bounded. A result is
only a URL until it is scraped, and a scrape goes through the address guard like any job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.texts import shortened
from taskcrawler.domain.urls import validate_url

#: How to turn web search on: what a search is told without it.
HOW_TO_CONFIGURE_SEARCH = (
    "set TASKCRAWLER_SEARXNG_URL to the base URL of a SearXNG instance whose JSON format is "
    "enabled (search.formats: [html, json] in its settings.yml) where the API runs"
)
Source = Literal["web", "news", "images"]
SOURCES: tuple[Source, ...] = ("web", "news", "images")
TimeRange = Literal["day", "week", "month", "year"]
#: Google's ``tbs`` values Firecrawl passes on, as SearXNG's time ranges.
TBS_RANGES: Mapping[str, TimeRange] = {
    "qdr:d": "day",
    "qdr:w": "week",
    "qdr:m": "month",
    "qdr:y": "year",
}
MAX_RESULTS = 100
DEFAULT_RESULTS = 5
MAX_QUERY_CHARS = 500
MAX_TITLE_CHARS = 500
MAX_DESCRIPTION_CHARS = 2000
MAX_DOMAINS = 50


class WebSearchNotConfigured(ValueError):
    """A web search where no search engine is configured: a 400 saying how."""

    def __init__(self) -> None:
        super().__init__(
            f"web search needs a search engine, and none is configured: {HOW_TO_CONFIGURE_SEARCH}"
        )


class WebSearchFailed(Exception):
    """The search engine gave no usable answer (down, past its deadline, not JSON): a 502.
    The message is ours, never the engine's text."""


class InvalidWebQuery(ValueError):
    """A query that is refused; the message names the field."""


@dataclass(frozen=True, slots=True)
class WebQuery:
    query: str
    limit: int = DEFAULT_RESULTS
    source: Source = "web"
    language: str | None = None
    time_range: TimeRange | None = None
    include_domains: tuple[str, ...] = ()
    exclude_domains: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WebResult:
    url: str
    title: str
    description: str
    position: int
    #: When the engine dates it (news).
    published: str | None = None
    #: An image result's picture (``url`` is the page it is on).
    image_url: str | None = None


def web_query(
    query: str,
    *,
    limit: int | None = None,
    source: str = "web",
    language: str | None = None,
    time_range: str | None = None,
    include_domains: Sequence[str] | None = None,
    exclude_domains: Sequence[str] | None = None,
) -> WebQuery:
    """A checked query; :class:`InvalidWebQuery` names what is wrong."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidWebQuery("query: must not be empty")
    if len(query) > MAX_QUERY_CHARS or "\x00" in query:
        raise InvalidWebQuery(f"query: at most {MAX_QUERY_CHARS} characters, no NUL")
    count = DEFAULT_RESULTS if limit is None else limit
    if not 1 <= count <= MAX_RESULTS:
        raise InvalidWebQuery(f"limit: between 1 and {MAX_RESULTS}")
    if source not in SOURCES:
        raise InvalidWebQuery(f"sources: {source!r} is not one of {', '.join(SOURCES)}")
    if time_range is not None and time_range not in TBS_RANGES.values():
        raise InvalidWebQuery("time_range: day, week, month or year")
    if include_domains and exclude_domains:
        raise InvalidWebQuery("includeDomains and excludeDomains: one or the other")
    return WebQuery(
        query=query.strip(),
        limit=count,
        source=source,
        language=language,
        time_range=time_range,  # type: ignore[arg-type]  # checked above
        include_domains=_domains(include_domains, "includeDomains"),
        exclude_domains=_domains(exclude_domains, "excludeDomains"),
    )


def _domains(values: Sequence[str] | None, where: str) -> tuple[str, ...]:
    if not values:
        return ()
    if len(values) > MAX_DOMAINS:
        raise InvalidWebQuery(f"{where}: at most {MAX_DOMAINS} domains")
    cleaned = []
    for index, value in enumerate(values):
        host = value.strip().lower().removeprefix("www.") if isinstance(value, str) else ""
        if not host or len(host) > 253 or any(c in host for c in "/:@ "):
            raise InvalidWebQuery(f"{where}[{index}]: a domain name (example.com)")
        cleaned.append(host)
    return tuple(dict.fromkeys(cleaned))


def results_of(answer: Any, query: WebQuery) -> list[WebResult]:
    """The results of a SearXNG JSON answer that TaskCrawler would fetch, each URL once, in the
    engine's order, filtered by the query's domains, at most ``query.limit``."""
    items = answer.get("results") if isinstance(answer, Mapping) else None
    if not isinstance(items, list):
        raise WebSearchFailed("the search engine's answer holds no results")
    results: list[WebResult] = []
    seen: set[str] = set()
    for item in items:
        if len(results) >= query.limit:
            break
        if not isinstance(item, Mapping):
            continue
        url = _fetchable(item.get("url"))
        if url is None or url in seen or not _in_domains(url, query):
            continue
        seen.add(url)
        results.append(
            WebResult(
                url=url,
                title=_text(item.get("title"), MAX_TITLE_CHARS),
                description=_text(item.get("content"), MAX_DESCRIPTION_CHARS),
                position=len(results) + 1,
                published=_text(item.get("publishedDate"), 64) or None,
                image_url=_fetchable(item.get("img_src")),
            )
        )
    return results


def _fetchable(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return validate_url(value)
    except InvalidURL:
        return None


def _in_domains(url: str, query: WebQuery) -> bool:
    host = (urlsplit(url).hostname or "").lower()

    def under(domain: str) -> bool:
        return host == domain or host.endswith("." + domain)

    if query.include_domains and not any(under(d) for d in query.include_domains):
        return False
    return not any(under(d) for d in query.exclude_domains)


def _text(value: Any, limit: int) -> str:
    if not isinstance(value, str):
        return ""
    return shortened(" ".join(value.split()), limit)


__all__ = [
    "HOW_TO_CONFIGURE_SEARCH",
    "SOURCES",
    "TBS_RANGES",
    "InvalidWebQuery",
    "WebQuery",
    "WebResult",
    "WebSearchFailed",
    "WebSearchNotConfigured",
    "results_of",
    "web_query",
]

"""Firecrawl's extract over a site: a URL ending in ``/*`` stands for the pages under it."""

from __future__ import annotations

from urllib.parse import urlsplit

WILDCARD = "/*"
#: The pages an extract crawls for each ``/*`` URL, the start page included (lower when the
#: deployment's crawl limit is): enough for a section of a site, few enough for one model
#: call per page to stay cheap.
EXTRACT_CRAWL_PAGES = 10
#: The ``/*`` URLs one extract may carry, each a crawl.
MAX_EXTRACT_CRAWLS = 5
_RE2_SPECIAL = frozenset("\\.+*?()|[]{}^$")


def is_wildcard(url: str) -> bool:
    return url.endswith(WILDCARD)


def crawl_start(url: str) -> str:
    """Where the crawl of a ``/*`` URL starts: the URL without its ``*``."""
    return url[: -len("*")] if is_wildcard(url) else url


def crawl_scope(url: str) -> tuple[str, ...]:
    """The crawl's include pattern: the start's path and what is under it (none for a
    site's root, whose every page is under it)."""
    parts = urlsplit(crawl_start(url))
    path = parts.path.rstrip("/")
    if not path:
        return ()
    escaped = "".join("\\" + c if c in _RE2_SPECIAL else c for c in path)
    return (f"^{escaped}(/|$)",)

"""Resolving the URLs a page mentions, fast.

``urllib.parse.urljoin`` costs several microseconds a call, and a page has hundreds of links, so the
common shapes (absolute, scheme-relative, root-relative, plain relative without dot segments) are
joined by string operations here, and only the rest goes through ``urljoin``. Results are absolute
``http``/``https`` URLs without the fragment, or None for anything else (mailto:, javascript:, …).
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urljoin, urlsplit

_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]*:")
_NETLOC = re.compile(r"//([^/?#]*)")
_WEB_SCHEMES = frozenset({"http", "https"})
_WEB_PREFIXES = ("https://", "http://")
_STRIP = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f \x7f"


def host_of(netloc: str) -> str:
    """The lower-case host of a ``netloc`` (no user info, no port, no trailing dot)."""
    host = netloc.rpartition("@")[2]
    host = host[: host.find("]") + 1] if host.startswith("[") else host.partition(":")[0]
    return host.lower().rstrip(".")


def _site(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


def _netloc(url: str) -> str:
    """The netloc of an absolute ``scheme://netloc/...`` URL."""
    match = _NETLOC.search(url)
    return match.group(1) if match is not None else ""


def _slow_join(base: str, href: str) -> str | None:
    try:
        joined = urljoin(base, href)
        parts = urlsplit(joined)
    except ValueError:
        return None
    if parts.scheme not in _WEB_SCHEMES or not parts.netloc:
        return None
    return joined.partition("#")[0]


class Resolver:
    """Makes the URLs of one page absolute, against its final URL and its ``<base href>``."""

    __slots__ = (
        "_base",
        "_base_internal",
        "_cache",
        "_dir",
        "_netlocs",
        "_origin",
        "_path",
        "_scheme",
        "_site",
    )

    def __init__(self, page_url: str, base_href: str | None = None) -> None:
        # The page's URL is split once: without a <base href> (most pages) it is the base too.
        try:
            page_parts: SplitResult | None = urlsplit(page_url)
        except ValueError:
            page_parts = None
        page = page_url
        if page_parts is not None and page_parts.scheme in _WEB_SCHEMES and page_parts.netloc:
            page = page_url.partition("#")[0]  # as urljoin(page_url, "") and _slow_join make it
        base = page
        if base_href:
            base = _slow_join(page, clean_href(base_href)) or page
        try:
            if page_parts is None:
                raise ValueError("no page URL")
            # Without its fragment the page's URL splits the same but for the fragment.
            parts = page_parts if base is page else urlsplit(base)
            page_netloc = page_parts.netloc
        except ValueError:
            parts = urlsplit("http://invalid/")
            page_netloc = ""
        self._base = base
        self._scheme = parts.scheme.lower() or "http"
        self._origin = f"{self._scheme}://{parts.netloc}"
        self._path = self._origin + (parts.path or "/")
        self._dir = self._origin + (parts.path or "/").rpartition("/")[0] + "/"
        self._site = _site(host_of(page_netloc))
        self._base_internal = _site(host_of(parts.netloc)) == self._site
        self._cache: dict[str, tuple[str, bool] | None] = {}
        self._netlocs: dict[str, bool | None] = {}  # netloc: internal, None if no host

    @property
    def base(self) -> str:
        return self._base

    def resolve(self, href: str | None) -> str | None:
        """``href`` made absolute; None when empty or not an http(s) URL."""
        if href is None:
            return None
        target = self.classify(href)
        return target[0] if target is not None else None

    def classify(self, href: str) -> tuple[str, bool] | None:
        """``(absolute URL, internal?)`` for ``href``, or None; cached per page."""
        cache = self._cache
        if href in cache:
            return cache[href]
        result = self._classify(href.strip(_STRIP))
        cache[href] = result
        return result

    def _classify(self, href: str) -> tuple[str, bool] | None:
        if not href:
            return None
        first = href[0]
        if (
            first == "h"
            and href.startswith(_WEB_PREFIXES)
            and "/." not in href
            and "\\" not in href
            and href.isprintable()
        ):
            return self._web_url(href)  # the commonest: nothing to join
        if first == "." or "/." in href or "\\" in href or not href.isprintable():
            # dot segments, backslashes, controls or tabs inside: rare, leave them to urljoin
            href = clean_href(href).replace("\\", "/")  # web URLs: "\\" means "/" (WHATWG)
            return self._absolute(_slow_join(self._base, href)) if href else None
        if first == "/":
            if href.startswith("//"):
                return self._absolute(f"{self._scheme}:{href}")
            return self._origin + href.partition("#")[0], self._base_internal
        if first == "?":
            return self._path + href.partition("#")[0], self._base_internal
        if first == "#":
            return self._base.partition("#")[0], self._base_internal
        match = _SCHEME.match(href)
        if match is None:
            return self._dir + href.partition("#")[0], self._base_internal
        if match.group()[:-1].lower() not in _WEB_SCHEMES:
            return None
        if not href.startswith("//", match.end()):
            return self._absolute(_slow_join(self._base, href))
        return self._absolute(match.group().lower() + href[match.end() :])

    def _web_url(self, href: str) -> tuple[str, bool] | None:
        """:meth:`_absolute` for an ``href`` known to start with ``http://`` or ``https://``:
        its netloc is found by position, not by a regular expression."""
        url = href.partition("#")[0]
        start = 8 if url[4] == "s" else 7
        end = url.find("/", start)
        if end < 0:
            end = len(url)
        query = url.find("?", start, end)
        return self._judged(url, url[start : end if query < 0 else query])

    def _absolute(self, url: str | None) -> tuple[str, bool] | None:
        if url is None:
            return None
        url = url.partition("#")[0]
        return self._judged(url, _netloc(url))

    def _judged(self, url: str, netloc: str) -> tuple[str, bool] | None:
        """``(url, internal?)``, or None when its ``netloc`` has no host."""
        netlocs = self._netlocs
        if netloc in netlocs:  # a page's absolute links share a few hosts: each judged once
            internal = netlocs[netloc]
        else:
            host = host_of(netloc)
            internal = netlocs[netloc] = _site(host) == self._site if host else None
        return (url, internal) if internal is not None else None

    def is_internal(self, url: str) -> bool:
        """Same site as the page: same host, ignoring a leading ``www.``."""
        return _site(host_of(_netloc(url))) == self._site


def clean_href(href: str) -> str:
    """What browsers do first: trim controls and spaces, drop tabs and newlines inside."""
    href = href.strip(_STRIP)
    if "\t" in href or "\n" in href or "\r" in href:
        href = href.replace("\t", "").replace("\n", "").replace("\r", "")
    return href

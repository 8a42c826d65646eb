"""URL validation at submit time, and the normalized form that deduplication keys on."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import SplitResult, urlsplit, urlunsplit

from taskcrawler.domain.errors import InvalidURL

MAX_URL_LENGTH = 2048
ALLOWED_SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}


def _split(url: str) -> SplitResult:
    if not isinstance(url, str) or not url.strip():
        raise InvalidURL("the URL is empty")
    if len(url) > MAX_URL_LENGTH:
        raise InvalidURL(f"the URL is longer than {MAX_URL_LENGTH} characters")
    if any(ch in url for ch in "\r\n\t\x00") or url != url.strip():
        raise InvalidURL("the URL contains whitespace or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise InvalidURL(f"the URL cannot be parsed: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise InvalidURL("only http and https URLs can be scraped")
    if not parts.hostname:
        raise InvalidURL("the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise InvalidURL("URLs with credentials are refused")
    return parts


def _idna_host(host: str) -> str:
    if host.startswith("["):  # IPv6 literal stays as it is
        return host
    host = host.rstrip(".").lower()
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise InvalidURL(f"the host is not a valid internationalized name: {exc}") from None


def validate_url(url: str) -> str:
    """Return ``url`` unchanged if TaskCrawler accepts it, else raise :class:`InvalidURL`."""
    normalize_url(url)
    return url


# Cached: a submitted URL is normalized when validated and again for its deduplication key.
@lru_cache(maxsize=4096)
def normalize_url(url: str) -> str:
    """The deduplication key: lower-case scheme and host, IDNA host, no default port, no fragment,
    ``/`` for an empty path. Query and path are kept as sent: servers may treat them as distinct."""
    parts = _split(url)
    scheme = parts.scheme.lower()
    hostname = parts.hostname or ""
    host = f"[{hostname}]" if ":" in hostname else _idna_host(hostname)
    if not host or host == "[]":
        raise InvalidURL("the URL has no host")
    port = parts.port
    netloc = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    path = parts.path or "/"
    return urlunsplit((scheme, netloc, path, parts.query, ""))

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


# --- the key a crawl deduplicates its pages on ---------------------------------------------

#: Query parameters that only tell analytics where a visitor came from: the same page answers
#: with or without them, so a crawl drops them. ``utm_`` is a prefix; the rest are exact names
#: (compared case-insensitively). Anything not listed is kept, however suspicious: dropping a
#: parameter the server does read would merge different pages.
TRACKING_PREFIXES = ("utm_",)
TRACKING_PARAMETERS = frozenset(
    {
        "gclid",  # Google Ads
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "_ga",  # Google Analytics cross-domain linker
        "_gl",
        "fbclid",  # Meta
        "igshid",
        "msclkid",  # Microsoft Ads
        "yclid",  # Yandex
        "ysclid",
        "twclid",  # X / Twitter
        "ttclid",  # TikTok
        "li_fat_id",  # LinkedIn
        "mc_cid",  # Mailchimp
        "mc_eid",
        "_hsenc",  # HubSpot
        "_hsmi",
        "mkt_tok",  # Marketo
        "vero_id",
        "oly_anon_id",  # Omeda
        "oly_enc_id",
    }
)

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX = frozenset("0123456789abcdefABCDEF")
# Characters a URL may not carry literally (RFC 3986): browsers send them percent-encoded.
_MUST_ESCAPE = frozenset(' "<>\\^`{|}')


def _escape_char(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def normalize_escapes(component: str) -> str:
    """One spelling of a path or query (RFC 3986 section 6.2.2): escapes of unreserved
    characters decoded, other escapes in upper case, non-ASCII and forbidden characters
    percent-encoded as UTF-8, a stray ``%`` escaped. Reserved characters stay as they are:
    ``/a%2Fb`` and ``/a/b`` may well be different resources."""
    if (
        "%" not in component
        and component.isascii()
        and not any(ch in _MUST_ESCAPE or ch < " " or ch == "\x7f" for ch in component)
    ):
        return component
    out: list[str] = []
    i, size = 0, len(component)
    while i < size:
        char = component[i]
        if char == "%":
            pair = component[i + 1 : i + 3]
            if len(pair) == 2 and pair[0] in _HEX and pair[1] in _HEX:
                decoded = chr(int(pair, 16))
                out.append(decoded if decoded in _UNRESERVED else "%" + pair.upper())
                i += 3
                continue
            out.append("%25")
        elif not char.isascii() or char in _MUST_ESCAPE or char < " " or char == "\x7f":
            out.append(_escape_char(char))
        else:
            out.append(char)
        i += 1
    return "".join(out)


def remove_dot_segments(path: str) -> str:
    """``/a/./b/../c`` -> ``/a/c`` (RFC 3986 section 5.2.4), for paths that have dot segments."""
    if "/." not in path:
        return path
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments[1:], start=1):
        last = index == len(segments) - 1
        if segment == "..":
            if len(output) > 1 or (output and output[-1]):
                output.pop()
            if last:
                output.append("")
        elif segment == ".":
            if last:
                output.append("")
        else:
            output.append(segment)
    return "/" + "/".join(output)


def is_tracking_parameter(name: str) -> bool:
    lowered = name.lower()
    return lowered in TRACKING_PARAMETERS or lowered.startswith(TRACKING_PREFIXES)


def _crawl_query(query: str) -> str:
    """Tracking parameters dropped, the rest sorted by name. The sort is stable, so repeated
    names keep their values' order (``a=2&a=1`` is not ``a=1&a=2`` to every server)."""
    if not query:
        return ""
    pairs = []
    for pair in query.split("&"):
        if not pair:
            continue
        name = pair.partition("=")[0]
        if is_tracking_parameter(normalize_escapes(name)):
            continue
        pairs.append((normalize_escapes(name), normalize_escapes(pair)))
    pairs.sort(key=lambda item: item[0])
    return "&".join(pair for _name, pair in pairs)


@lru_cache(maxsize=16384)
def crawl_key(url: str) -> str:
    """The key a crawl deduplicates pages on: :func:`normalize_url`, then one spelling of the
    path and query (dot segments removed, escapes normalized), tracking parameters dropped and
    the other parameters sorted by name; an empty query goes away. Raises :class:`InvalidURL`.

    Kept apart on purpose: ``http`` and ``https``, ``www.`` and the bare host, a trailing
    slash, the path's case, ``index.html`` — each can be a different page somewhere.
    """
    parts = urlsplit(normalize_url(url))
    path = remove_dot_segments(normalize_escapes(parts.path))
    return urlunsplit((parts.scheme, parts.netloc, path, _crawl_query(parts.query), ""))

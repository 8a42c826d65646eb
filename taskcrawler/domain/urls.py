"""URL validation at submit time, and the normalized form that deduplication keys on.

The host is read the way the fetcher's HTTP client (yarl, under aiohttp) will request it: IDNA 2008
with UTS 46 mapping (IDNA 2003 as its fallback), default-ignorable characters refused. Submit,
the fetcher (first URL and every redirect hop) and webhook delivery all call :func:`request_target`,
so a URL the API accepts is one the worker can use, and the deduplication key names the host that
is actually fetched.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from urllib.parse import SplitResult, urlsplit, urlunsplit

from yarl import URL

from taskcrawler.domain.errors import InvalidURL

MAX_URL_LENGTH = 2048
ALLOWED_SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}
#: DNS limits (RFC 1035): a name of at most 253 characters, each label 1 to 63.
MAX_HOST_LENGTH = 253
#: What a resolvable label is made of once IDNA has encoded it. The underscore is not LDH, but
#: real names use it (``_dmarc``, some intranets) and resolvers pass it through.
_LABEL = re.compile(r"[a-z0-9_-]{1,63}")


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


def request_target(url: str | URL) -> URL:
    """``url`` as the fetcher requests it (no fragment); :class:`InvalidURL` when no fetch could
    ever use it: not http(s), no host, credentials, port 0, or a host that is no DNS name once
    IDNA has mapped it (``⒈.example`` maps to ``1..example``: an empty label)."""
    try:
        target = url if isinstance(url, URL) else URL(url)
    except (ValueError, TypeError) as exc:
        raise InvalidURL(f"the URL cannot be parsed: {exc}") from None
    if target.scheme not in ALLOWED_SCHEMES or not target.raw_host:
        raise InvalidURL("the URL is not an http(s) URL with a host")
    if target.raw_user is not None or target.raw_password is not None:
        raise InvalidURL("URLs with credentials are refused")
    if target.explicit_port == 0:
        raise InvalidURL("port 0 cannot be connected to")
    _check_host(target.raw_host, lambda: _as_spelled(url, target))
    return target.with_fragment(None)


def _as_spelled(url: str | URL, target: URL) -> str:
    """The host as the client wrote it (for messages): ``⒈.example`` rather than ``1..example``."""
    try:
        return (urlsplit(url).hostname if isinstance(url, str) else target.host) or ""
    except (ValueError, UnicodeError):
        return target.raw_host or ""


def _check_host(host: str, spelled: Callable[[], str]) -> None:
    """``host`` is yarl's encoded host; ``spelled()`` the client's spelling, for the message."""
    if ":" in host:
        return  # an IPv6 literal: yarl parsed it as an address
    name = host[:-1] if host.endswith(".") else host
    if len(name) > MAX_HOST_LENGTH:
        raise InvalidURL(f"the host is longer than {MAX_HOST_LENGTH} characters")
    for label in name.split("."):
        if _LABEL.fullmatch(label):
            continue
        if not label:
            problem = "has an empty label"
        elif len(label) > 63:
            problem = "has a label longer than 63 characters"
        else:
            problem = (
                "is not a DNS name: once encoded, a label holds only letters, digits, '-' and '_'"
            )
        raise InvalidURL(f"the host {_both(spelled(), host)} {problem}")


def _both(spelled: str, host: str) -> str:
    return repr(host) if spelled in ("", host) else f"{spelled!r} (requested as {host!r})"


def shares_credentials(page: str | URL, target: str | URL) -> bool:
    """Whether the headers a request brings for ``page`` (cookies, tokens) may go to
    ``target``: ``page``'s origin alone (scheme, host and port, as browsers scope
    credentials), or the same host moved from http to https on the default ports, the common
    upgrade (a token then goes encrypted, never the other way). Unparseable: no."""
    try:
        asked, going = URL(page), URL(target)
    except ValueError:
        return False
    if (asked.raw_host or "").lower() != (going.raw_host or "").lower() or not asked.raw_host:
        return False
    if (asked.scheme, asked.port) == (going.scheme, going.port):
        return True
    return (asked.scheme, asked.port, going.scheme, going.port) == ("http", 80, "https", 443)


def validate_url(url: str) -> str:
    """Return ``url`` unchanged if TaskCrawler accepts it, else raise :class:`InvalidURL`."""
    normalize_url(url)
    return url


# Cached: a submitted URL is normalized when validated and again for its deduplication key.
@lru_cache(maxsize=4096)
def normalize_url(url: str) -> str:
    """The deduplication key: lower-case scheme, the host as it is requested (IDNA), no default
    port, no fragment, ``/`` for an empty path, and one spelling of each percent-escape
    (RFC 3986 section 6.2.2: ``/page/%64d`` is ``/page/dd``, ``%3a`` is ``%3A``; the same
    resource either way). Otherwise path and query are kept as sent: servers may treat
    ``/a%2Fb`` and ``/a/b``, or ``?b=1&a=2`` and ``?a=2&b=1``, as distinct."""
    plain = _plain_normalized(url)
    return plain if plain is not None else _normalized_by_parsing(url)


#: The URLs most submissions are: http(s), a host of LDH-or-underscore ASCII labels (one
#: trailing dot at most), an optional port of decimal digits, then printable ASCII only. For
#: these, ``urlsplit`` and yarl split the same netloc and read the same host and port, so the
#: key can be built without either. ``re.ASCII``: with IGNORECASE alone, ``[a-z]`` would also
#: match the Kelvin sign and the long s, which IDNA maps to other letters.
_PLAIN_URL = re.compile(
    r"(?P<scheme>https?)://"
    r"(?P<host>(?:[a-z0-9_-]{1,63}\.)*[a-z0-9_-]{1,63}\.?)"
    r"(?::(?P<port>[0-9]{1,5}))?"
    r"(?P<rest>[/?#][!-~]*)?",
    re.IGNORECASE | re.ASCII,
)


def _plain_normalized(url: str) -> str | None:
    """:func:`_normalized_by_parsing`'s key for a URL of the plain shape (:data:`_PLAIN_URL`)
    that it accepts, at about a seventh of its CPU; None for any other URL, whichever way it would
    end: it parses them all. ``tests/unit/test_url_fast_path.py`` holds the two equal."""
    if len(url) > MAX_URL_LENGTH:
        return None
    plain = _PLAIN_URL.fullmatch(url)
    if plain is None:
        return None
    scheme, host, port_digits, rest = plain.group("scheme", "host", "port", "rest")
    if len(host) > MAX_HOST_LENGTH:
        return None
    port = None if port_digits is None else int(port_digits)
    if port is not None and not 0 < port <= 65535:
        return None  # refused, with the parser's words
    scheme = scheme.lower()
    netloc = host.lower().rstrip(".")
    if port is not None and port != DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    # As urlsplit splits: the fragment off at the first "#", then the query at the first "?".
    path, _, query = (rest or "").partition("#")[0].partition("?")
    key = f"{scheme}://{netloc}{_one_escape_spelling(path) or '/'}"
    return f"{key}?{_one_escape_spelling(query)}" if query else key


def host_as_sent(url: str) -> str:
    """The host as ``url`` spells it, lower-cased, "" for none: ``urlsplit``'s ``hostname``,
    what job listings filter on (the key holds the host as requested). Cheap for a URL of the
    plain shape, which is most."""
    plain = _PLAIN_URL.fullmatch(url)
    if plain is not None:
        return plain["host"].lower()
    return (urlsplit(url).hostname or "").lower()


def host_key(url: str) -> str:
    """The host jobs are filtered by: the host of ``url``'s key (:func:`normalize_url`: lower
    case, IDNA-encoded, no trailing dot), "" for a URL without one. One form whatever the
    spelling, so an IDN site's jobs submitted as ``bücher.de`` and its crawl pages (whose URL is
    their key, ``xn--bcher-kva.de``) are one host's. :class:`InvalidURL` as for the key."""
    key = normalize_url(url)
    plain = _PLAIN_URL.fullmatch(key)
    return plain["host"] if plain is not None else (urlsplit(key).hostname or "")


def host_filter(host: str) -> str:
    """The form jobs store (:func:`host_key`) of a host a client filters by, as either spelling
    of an IDN host; one that is no host is compared as given, lower-cased (it finds none)."""
    try:
        return host_key(f"http://{host}/")
    except InvalidURL:
        return host.lower()


def _normalized_by_parsing(url: str) -> str:
    """:func:`normalize_url` for any URL: parsed as ``urlsplit`` and as the fetcher's yarl do,
    every refusal raised here."""
    parts = _split(url)
    target = request_target(url)
    scheme = parts.scheme.lower()
    host = target.raw_host or ""
    host = f"[{host}]" if ":" in host else host.rstrip(".")
    if len(parts.hostname or "") > MAX_HOST_LENGTH:
        # The host as sent is what job listings filter on; characters IDNA drops count too.
        raise InvalidURL(f"the host is longer than {MAX_HOST_LENGTH} characters")
    port = target.explicit_port
    netloc = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    path = _one_escape_spelling(parts.path) or "/"
    return urlunsplit((scheme, netloc, path, _one_escape_spelling(parts.query), ""))


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def _decoded_if_unreserved(escape: re.Match[str]) -> str:
    char = chr(int(escape[1], 16))
    return char if char in _UNRESERVED else "%" + escape[1].upper()


def _one_escape_spelling(component: str) -> str:
    """RFC 3986 sections 6.2.2.1 and 6.2.2.2, and nothing more: escapes of unreserved characters
    decoded, the others' hex digits in upper case. Only escapes change, so the key of a URL
    without any is what it always was."""
    return _ESCAPE.sub(_decoded_if_unreserved, component) if "%" in component else component


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
#: A component that needs none of the work of :func:`normalize_escapes` matches none of this:
#: an escape, a character outside printable ASCII, or one of ``_MUST_ESCAPE``.
_NEEDS_NORMALIZING = re.compile(r'[%\x00-\x20"<>\\^`{|}\x7f-\U0010ffff]')


def _escape_char(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def normalize_escapes(component: str) -> str:
    """One spelling of a path or query (RFC 3986 section 6.2.2): escapes of unreserved
    characters decoded, other escapes in upper case, non-ASCII and forbidden characters
    percent-encoded as UTF-8, a stray ``%`` escaped. Reserved characters stay as they are:
    ``/a%2Fb`` and ``/a/b`` may well be different resources."""
    if _NEEDS_NORMALIZING.search(component) is None:
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

"""How one request asks its page to be fetched and read: request headers, TLS, languages, what
of the page the Markdown holds, documents. Pure: the API checks them here, storage keeps them
with the job (:meth:`ScrapeOptions.to_json`), the fetcher, the browser and the extractor act on
them.

Headers a user sends are theirs (cookies, tokens): they go to the page's own host only, never
to another host a redirect leads to, and they are never shown back, logged or exported (the
dataclass leaves them out of its ``repr``; views and exports never read them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from taskcrawler.domain.selectors import InvalidSelector, parse_ignore_selectors
from taskcrawler.domain.structured import JsonRequest

#: Request headers a request may set, and their bytes at most (names and values together).
MAX_HEADERS = 20
MAX_HEADER_BYTES = 8 * 1024
#: Headers about the connection or the message's framing, which the fetcher sets itself, and
#: those that would turn the fetch into another kind of request (conditional, partial, …).
FORBIDDEN_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade"}
    | {"te", "trailer", "expect", "proxy-authorization", "proxy-authenticate"}
    | {"proxy-connection", "accept-encoding", "range", "if-range", "if-match"}
    | {"if-none-match", "if-modified-since", "if-unmodified-since", "content-type"}
)
MAX_LANGUAGES = 10
#: The longest gap a request may ask for between the requests to its host.
MAX_DELAY_SECONDS = 60.0
#: A crawl's ``max_concurrency`` at most (more is the deployment's per-host limit anyway).
MAX_CONCURRENCY = 1000
#: Pages of a PDF read at most, whatever ``max_pages`` asks.
MAX_PDF_PAGES = 1000
# RFC 9110 5.6.2: a field name is a token.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# A field value: visible ASCII, spaces and tabs, and obs-text; never CR, LF or NUL.
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
_LANGUAGE = re.compile(r"\*|[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*")
_COUNTRY = re.compile(r"[A-Za-z]{2}")


class InvalidOption(ValueError):
    """An option that is refused; ``field`` names it (``headers['Host']``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class ScrapeOptions:
    """What a request asks of its page beyond its formats. The defaults ask for nothing."""

    #: The Markdown and text hold the main content only; false: the whole page.
    only_main_content: bool = True
    #: CSS selectors (canonical, checked): only what they match is read / what they match is
    #: left out, before the main content is looked for.
    include_tags: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()
    #: Inline ``data:`` images stay in the Markdown and the cleaned HTML (else removed).
    keep_base64_images: bool = False
    #: Extra request headers for the page's own host: never shown back.
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    #: The page's certificate is not verified (the address guard still is).
    skip_tls_verification: bool = False
    #: Accept-Language, in order of preference; the browser's locale is the first.
    languages: tuple[str, ...] = ()
    #: ISO 3166-1 alpha-2: the browser's time zone when the page is rendered.
    country: str | None = None
    #: Requests to known ad and tracker hosts are refused when the page is rendered.
    block_ads: bool = False
    #: PDFs are read to Markdown and text (else refused as a content type), their first
    #: ``max_pages`` pages at most.
    parse_pdf: bool = True
    max_pages: int | None = None
    #: Seconds between the starts of requests to the page's host, at least (a crawl's
    #: ``delay``; robots.txt's Crawl-delay and the deployment's may ask for more).
    delay: float | None = None
    #: A crawl's pages fetched at once at most, across all workers (None: as the deployment's
    #: per-host limits allow).
    max_concurrency: int | None = None
    #: The ``json`` format's schema (canonical JSON text) and prompt: what the model, or the
    #: schema's selectors, read from the page (checked by :func:`json_request`).
    json_schema: str | None = None
    json_prompt: str | None = None

    @classmethod
    def create(
        cls,
        *,
        only_main_content: bool = True,
        include_tags: Sequence[str] | None = None,
        exclude_tags: Sequence[str] | None = None,
        keep_base64_images: bool = False,
        headers: Mapping[str, str] | None = None,
        skip_tls_verification: bool = False,
        languages: Sequence[str] | None = None,
        country: str | None = None,
        block_ads: bool = False,
        parse_pdf: bool = True,
        max_pages: int | None = None,
        delay: float | None = None,
        max_concurrency: int | None = None,
        json: JsonRequest | None = None,
        names: Mapping[str, str] | None = None,
    ) -> ScrapeOptions:
        """Checked options; :class:`InvalidOption` names the first bad one, by the caller's
        name for it (``names``: ours to theirs, ``include_tags`` to ``includeTags``)."""
        called = {**{f.name: f.name for f in fields(cls)}, **(names or {})}
        if max_pages is not None and not 1 <= max_pages <= MAX_PDF_PAGES:
            raise InvalidOption(called["max_pages"], f"must be between 1 and {MAX_PDF_PAGES}")
        if delay is not None and not 0 <= delay <= MAX_DELAY_SECONDS:
            raise InvalidOption(called["delay"], f"must be between 0 and {MAX_DELAY_SECONDS:g} s")
        if max_concurrency is not None and not 1 <= max_concurrency <= MAX_CONCURRENCY:
            raise InvalidOption(
                called["max_concurrency"], f"must be between 1 and {MAX_CONCURRENCY}"
            )
        return cls(
            only_main_content=only_main_content,
            include_tags=_selectors(include_tags, called["include_tags"]),
            exclude_tags=_selectors(exclude_tags, called["exclude_tags"]),
            keep_base64_images=keep_base64_images,
            headers=check_headers(headers or {}, called["headers"]),
            skip_tls_verification=skip_tls_verification,
            languages=_languages(languages or (), called["languages"]),
            country=_country(country, called["country"]),
            block_ads=block_ads,
            parse_pdf=parse_pdf,
            max_pages=max_pages,
            delay=delay or None,
            max_concurrency=max_concurrency,
            json_schema=json.schema_json if json else None,
            json_prompt=json.prompt if json else None,
        )

    @property
    def json(self) -> JsonRequest | None:
        """What the ``json`` format asks, when it was given a schema or a prompt."""
        if self.json_schema is None and self.json_prompt is None:
            return None
        return JsonRequest(self.json_schema, self.json_prompt)

    # --- what it asks of the fetch ----------------------------------------------------------

    def accept_language(self) -> str | None:
        """``Accept-Language`` for :attr:`languages`: each with a falling weight."""
        if not self.languages:
            return None
        parts = [self.languages[0]]
        for index, language in enumerate(self.languages[1:], start=1):
            parts.append(f"{language};q={max(0.1, 1 - index / 10):.1f}")
        return ",".join(parts)

    def header_map(self) -> dict[str, str]:
        return dict(self.headers)

    @property
    def renders_differently(self) -> bool:
        """Whether the browser is set up differently for these options."""
        return bool(self.headers or self.languages or self.country or self.block_ads) or (
            self.skip_tls_verification
        )

    # --- storing and comparing -------------------------------------------------------------

    def same_page_as(self, other: ScrapeOptions) -> bool:
        """Whether a page read with ``other`` is what these options ask for: everything but
        ``skip_tls_verification`` (which allows, and asks for nothing), ``delay`` and
        ``max_concurrency`` (which pace the fetch)."""
        return _content_only(self) == _content_only(other)

    def same_fetch_as(self, other: ScrapeOptions) -> bool:
        """Whether a page fetched with ``other`` is the page these options fetch: the same
        request headers, languages, country, ads and PDFs (only how it is read may differ)."""
        return _fetch_only(self) == _fetch_only(other)

    def to_json(self) -> dict[str, Any] | None:
        """What storage keeps; None for the defaults (a job that asks for nothing stores
        nothing)."""
        if self == DEFAULT_OPTIONS:
            return None
        stored: dict[str, Any] = {}
        for option in fields(self):
            value = getattr(self, option.name)
            if value != option.default:
                stored[option.name] = (
                    [list(pair) for pair in value] if option.name == "headers" else value
                )
        return {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in stored.items()
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> ScrapeOptions:
        """The options :meth:`to_json` stored (not checked again: they were, when asked)."""
        if not value:
            return DEFAULT_OPTIONS
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for name, stored in value.items():
            if name not in known:
                continue
            if name == "headers":
                values[name] = tuple((str(k), str(v)) for k, v in stored)
            elif isinstance(stored, list):
                values[name] = tuple(stored)
            else:
                values[name] = stored
        return cls(**values)

    def public(self) -> dict[str, Any]:
        """What may be shown of these options: everything but the headers' values."""
        shown = dict(self.to_json() or {})
        if self.headers:
            shown["headers"] = sorted({name for name, _ in self.headers})
        return shown


DEFAULT_OPTIONS = ScrapeOptions()


def _fetch_only(options: ScrapeOptions) -> ScrapeOptions:
    return replace(
        _content_only(options),
        only_main_content=True,
        include_tags=(),
        exclude_tags=(),
        keep_base64_images=False,
        max_pages=None,
        json_schema=None,
        json_prompt=None,
    )


def _content_only(options: ScrapeOptions) -> ScrapeOptions:
    return replace(options, skip_tls_verification=False, delay=None, max_concurrency=None)


def check_headers(
    headers: Mapping[str, str], where: str = "headers"
) -> tuple[tuple[str, str], ...]:
    """Request headers a user may set: tokens for names, no CR, LF or NUL in values, none of
    :data:`FORBIDDEN_HEADERS`, bounded in count and bytes. Names are kept as given, each once
    (case-insensitively)."""
    if not isinstance(headers, Mapping):
        raise InvalidOption(where, "must be an object of header names and values")
    if len(headers) > MAX_HEADERS:
        raise InvalidOption(where, f"at most {MAX_HEADERS} headers")
    checked: dict[str, tuple[str, str]] = {}
    size = 0
    for name, value in headers.items():
        item = f"{where}[{name[:60]!r}]"
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise InvalidOption(item, "not a valid header name")
        if not isinstance(value, str):
            raise InvalidOption(item, "the value must be a string")
        if "\r" in value or "\n" in value or "\x00" in value:
            raise InvalidOption(item, "the value holds a line break or NUL (CR, LF)")
        if not _FIELD_VALUE.fullmatch(value):
            raise InvalidOption(item, "the value holds characters a header cannot carry")
        lowered = name.lower()
        if lowered in FORBIDDEN_HEADERS or lowered.startswith(("proxy-", "sec-")):
            raise InvalidOption(item, "this header is set by TaskCrawler, not by a request")
        if lowered in checked:
            raise InvalidOption(item, "the header is given twice")
        size += len(name) + len(value.encode("latin-1"))
        if size > MAX_HEADER_BYTES:
            raise InvalidOption(where, f"at most {MAX_HEADER_BYTES:,} bytes of headers")
        checked[lowered] = (name, value.strip())
    return tuple(checked.values())


def _selectors(values: Sequence[str] | None, where: str) -> tuple[str, ...]:
    if not values:
        return ()
    try:
        return tuple(selector.css for selector in parse_ignore_selectors(values, where))
    except InvalidSelector as exc:
        raise InvalidOption(exc.field, exc.message) from None


def _languages(values: Sequence[str], where: str) -> tuple[str, ...]:
    if isinstance(values, str):
        raise InvalidOption(where, "must be a list of language tags")
    if len(values) > MAX_LANGUAGES:
        raise InvalidOption(where, f"at most {MAX_LANGUAGES} languages")
    for index, language in enumerate(values):
        if not isinstance(language, str) or not _LANGUAGE.fullmatch(language):
            raise InvalidOption(f"{where}[{index}]", "not a language tag (en, en-US, fr-CA)")
    return tuple(dict.fromkeys(values))


def _country(value: str | None, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _COUNTRY.fullmatch(value):
        raise InvalidOption(where, "an ISO 3166-1 alpha-2 country code (US, DE, JP)")
    return value.upper()


__all__ = [
    "DEFAULT_OPTIONS",
    "FORBIDDEN_HEADERS",
    "MAX_HEADERS",
    "MAX_HEADER_BYTES",
    "InvalidOption",
    "ScrapeOptions",
    "check_headers",
]

"""Sitemaps, parsed: bytes in, URLs out. Pure, and bounded however hostile the bytes are.

What is read (https://www.sitemaps.org/protocol.html):

* XML ``<urlset>`` (pages) and ``<sitemapindex>`` (more sitemaps): the ``<loc>`` of each
  ``<url>`` or ``<sitemap>``. Namespaces are ignored, as real sitemaps get them wrong.
* Plain text: one URL per line.
* Either of them gzipped (detected by its magic bytes, whatever the URL or the Content-Type say).

What bounds it:

* Decompression is streamed and stops at ``max_bytes`` of output, so a gzip bomb costs at most
  that much; the XML parser is fed the same stream and never holds the document.
* At most ``max_urls`` locations are kept; parsing stops there.
* A document that declares a DOCTYPE is refused before any declaration in it is read: a sitemap
  needs no DTD, and refusing it rules out entity expansion (billion laughs) and external
  entities alike, whatever the XML library would otherwise allow.
* Malformed XML keeps what was read before the error.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from urllib.parse import urljoin, urlsplit
from xml.parsers import expat

GZIP_MAGIC = b"\x1f\x8b"
CHUNK_BYTES = 64 * 1024
MAX_LOC_CHARS = 2048  # longer locations are not URLs TaskCrawler accepts
MAX_NESTING = 16  # a sitemap is three levels deep; a million nested elements is an attack
_WEB_SCHEMES = frozenset({"http", "https"})
# An absolute http(s) URL with a host and nothing a URL may not carry literally.
_ABSOLUTE = re.compile(r"https?://[^/?#\s\\@]+(?:[/?#][^\s\\]*)?\Z", re.ASCII)


class SitemapKind(StrEnum):
    URLSET = "urlset"
    INDEX = "sitemapindex"
    TEXT = "text"
    UNKNOWN = "unknown"  # not a sitemap at all (an HTML page, an empty body, another XML)


@dataclass(slots=True)
class ParsedSitemap:
    """What one sitemap says. ``urls``: page URLs; ``sitemaps``: child sitemaps (from an
    index). ``truncated``: a cap stopped the reading; ``error``: why the rest was unreadable."""

    kind: SitemapKind = SitemapKind.UNKNOWN
    urls: list[str] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    truncated: bool = False
    error: str | None = None
    #: Bytes of the document read, after decompression.
    size: int = 0

    @property
    def count(self) -> int:
        return len(self.urls) + len(self.sitemaps)


class SitemapTooLarge(Exception):
    """Raised inside the reading when a cap is reached; never escapes :func:`parse_sitemap`."""


class _Refused(Exception):
    pass


def decompressed_chunks(body: bytes, max_bytes: int) -> Iterator[bytes]:
    """``body`` in chunks, gunzipped when it is gzip (members one after another, as ``gzip -c
    a b`` writes them), never more than ``max_bytes`` in all: past it, :class:`SitemapTooLarge`.
    A corrupt gzip stream raises ``zlib.error`` after the chunks that were good. The input is
    fed in slices too, so nothing bigger than a chunk is ever copied."""
    if not body.startswith(GZIP_MAGIC):
        if len(body) > max_bytes:
            yield body[:max_bytes]
            raise SitemapTooLarge(f"the sitemap is over {max_bytes} bytes")
        yield body
        return
    produced = 0
    position = 0
    pending = b""
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    while True:
        if not pending:
            if position >= len(body):
                return
            pending = body[position : position + CHUNK_BYTES]
            position += CHUNK_BYTES
        chunk = inflater.decompress(pending, min(CHUNK_BYTES, max_bytes - produced + 1))
        pending = inflater.unconsumed_tail
        produced += len(chunk)
        if produced > max_bytes:
            yield chunk[: len(chunk) - (produced - max_bytes)]
            raise SitemapTooLarge(f"the sitemap inflates to over {max_bytes} bytes")
        if chunk:
            yield chunk
        if inflater.eof:
            pending = inflater.unused_data + pending
            following = pending + body[position : position + 2]
            if not following.startswith(GZIP_MAGIC):
                return  # trailing garbage after the last member: ignored, as gzip(1) does
            inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)


def parse_sitemap(body: bytes, *, url: str, max_bytes: int, max_urls: int) -> ParsedSitemap:
    """Parse one sitemap fetched from ``url`` (relative locations are resolved against it).
    Never raises on any body."""
    result = ParsedSitemap()
    chunks = _counted(decompressed_chunks(body, max_bytes), result)
    try:
        first = _first_nonblank(chunks)
        if first is None:
            return result
        if first.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
            _XmlReader(result, url, max_urls).read(first, chunks)
        else:
            _read_text(result, url, max_urls, first, chunks)
    except SitemapTooLarge as exc:
        result.truncated = True
        result.error = str(exc)
    except zlib.error as exc:
        result.error = f"the gzip stream is corrupt: {exc}"
    return result


def parse_sitemap_packed(
    body: bytes, *, url: str, max_bytes: int, max_urls: int
) -> tuple[ParsedSitemap, str]:
    """:func:`parse_sitemap` for a caller in another process: its page URLs (none holds a line
    break) as one string, a URL a line, and the rest without them. One string crosses a pipe as
    a copy of its bytes; a list of a hundred thousand URLs as as many objects to build."""
    parsed = parse_sitemap(body, url=url, max_bytes=max_bytes, max_urls=max_urls)
    packed = "\n".join(found for found in parsed.urls if "\n" not in found)
    parsed.urls = []
    return parsed, packed


def packed_slices(packed: str, chars: int) -> Iterator[list[str]]:
    """The URLs of :func:`parse_sitemap_packed`'s string, about ``chars`` characters of them
    at a time."""
    start = 0
    while start < len(packed):
        end = packed.find("\n", start + chars)
        end = len(packed) if end < 0 else end
        yield packed[start:end].split("\n")
        start = end + 1


def _counted(chunks: Iterator[bytes], result: ParsedSitemap) -> Iterator[bytes]:
    for chunk in chunks:
        result.size += len(chunk)
        yield chunk


def _first_nonblank(chunks: Iterator[bytes]) -> bytes | None:
    for chunk in chunks:
        if chunk.strip():
            return chunk.lstrip()
    return None


def _absolute(loc: str, base: str) -> str | None:
    loc = loc.strip()
    if not loc or len(loc) > MAX_LOC_CHARS:
        return None
    if _ABSOLUTE.match(loc):
        return loc  # the common case, without urljoin's cost (the crawl key validates it)
    try:
        absolute = urljoin(base, loc)
        parts = urlsplit(absolute)
    except ValueError:
        return None
    if parts.scheme not in _WEB_SCHEMES or not parts.netloc:
        return None
    return absolute


def _add(result: ParsedSitemap, target: list[str], loc: str, base: str, max_urls: int) -> None:
    absolute = _absolute(loc, base)
    if absolute is None:
        return
    if result.count >= max_urls:
        raise SitemapTooLarge(f"the sitemap lists more than {max_urls} URLs")
    target.append(absolute)


# --- plain text -----------------------------------------------------------------------------


def _read_text(
    result: ParsedSitemap, base: str, max_urls: int, first: bytes, rest: Iterator[bytes]
) -> None:
    carry = b""
    for chunk in _chain(first, rest):
        lines = (carry + chunk).split(b"\n")
        carry = lines.pop()
        if len(carry) > MAX_LOC_CHARS * 4:
            carry = b""  # one endless line is no URL; skip it rather than grow
        for line in lines:
            _text_line(result, base, max_urls, line)
    _text_line(result, base, max_urls, carry)
    if result.urls:
        result.kind = SitemapKind.TEXT


def _text_line(result: ParsedSitemap, base: str, max_urls: int, line: bytes) -> None:
    text = line.decode("utf-8", "replace").strip().lstrip("\ufeff")
    if text.startswith(("http://", "https://", "HTTP://", "HTTPS://")):
        _add(result, result.urls, text, base, max_urls)


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


# --- XML ------------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _local(name: str) -> str:
    """``{namespace}tag`` or ``prefix:tag`` -> ``tag``, lower case."""
    return name.rpartition("}")[2].rpartition(":")[2].lower()


class _XmlReader:
    """A streaming expat reader that keeps only ``<loc>`` texts under ``<url>``/``<sitemap>``."""

    def __init__(self, result: ParsedSitemap, base: str, max_urls: int) -> None:
        self.result = result
        self.base = base
        self.max_urls = max_urls
        self.stack: list[str] = []
        self.text: list[str] = []
        self.text_size = 0
        self.parser = expat.ParserCreate(namespace_separator="}")
        self.parser.StartDoctypeDeclHandler = self._refuse_doctype
        self.parser.EntityDeclHandler = self._refuse_entity
        self.parser.ExternalEntityRefHandler = self._refuse_external
        self.parser.StartElementHandler = self._start
        self.parser.EndElementHandler = self._end
        self.parser.CharacterDataHandler = self._characters
        self.parser.buffer_text = True

    def read(self, first: bytes, rest: Iterator[bytes]) -> None:
        # A byte-order mark then blanks before the XML declaration is a common mistake that
        # expat refuses; the document is UTF-8 either way (a BOM says so).
        first = first.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
        try:
            self.parser.Parse(first, False)
            for chunk in rest:
                self.parser.Parse(chunk, False)
            self.parser.Parse(b"", True)
        except _Refused as exc:
            self.result.error = str(exc)
        except expat.ExpatError as exc:
            self.result.error = f"malformed XML: {exc}"

    def _refuse_doctype(self, *args: object) -> None:
        raise _Refused("a sitemap with a DOCTYPE is refused (no DTD, no entities)")

    def _refuse_entity(self, *args: object) -> None:
        raise _Refused("a sitemap that declares entities is refused")

    def _refuse_external(self, *args: object) -> int:
        raise _Refused("a sitemap that refers to external entities is refused")

    def _start(self, name: str, attributes: dict[str, str]) -> None:
        tag = _local(name)
        if not self.stack:
            if tag == "urlset":
                self.result.kind = SitemapKind.URLSET
            elif tag == "sitemapindex":
                self.result.kind = SitemapKind.INDEX
            else:
                raise _Refused(f"not a sitemap: the root element is <{tag}>")
        elif len(self.stack) >= MAX_NESTING:
            raise _Refused(f"elements nested more than {MAX_NESTING} deep")
        self.stack.append(tag)
        if tag == "loc":
            self.text.clear()
            self.text_size = 0

    def _characters(self, data: str) -> None:
        if self.stack and self.stack[-1] == "loc" and self.text_size <= MAX_LOC_CHARS:
            self.text.append(data)
            self.text_size += len(data)

    def _end(self, name: str) -> None:
        tag = self.stack.pop() if self.stack else ""
        if tag != "loc" or not self.stack:
            return
        parent = self.stack[-1]
        loc = "".join(self.text)
        self.text.clear()
        if parent == "url" and self.result.kind is SitemapKind.URLSET:
            _add(self.result, self.result.urls, loc, self.base, self.max_urls)
        elif parent == "sitemap" and self.result.kind is SitemapKind.INDEX:
            _add(self.result, self.result.sitemaps, loc, self.base, self.max_urls)


__all__ = [
    "ParsedSitemap",
    "SitemapKind",
    "SitemapTooLarge",
    "decompressed_chunks",
    "packed_slices",
    "parse_sitemap",
    "parse_sitemap_packed",
]

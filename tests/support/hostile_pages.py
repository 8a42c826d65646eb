"""A corpus of hostile pages: what a page can send to hurt a crawler's parsing and storage.

The local target serves each at ``/hostile/<name>`` (tests/support/target.py). A page is a body
and its headers, or a raw response head for what no well-behaved server sends (bytes that are
not UTF-8 or a NUL in a header). ``expect`` is what its job must end as, on its first fetch:
``COMPLETED``, or the error code it fails with.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

NESTING = 200_000
LINKS = 200_000
JSON_LD_BLOCKS = 5_000
GIANT = 2 * 1024 * 1024  # characters of one attribute, href or title: 8 MB in all


@dataclass(frozen=True)
class HostilePage:
    body: bytes
    expect: str = "COMPLETED"
    content_type: str = "text/html; charset=utf-8"
    #: Header lines sent as they are, instead of the server's own (no Content-Length needed).
    raw_head: bytes | None = None
    formats: tuple[str, ...] = ("metadata", "markdown", "links", "html")
    extra: dict[str, str] = field(default_factory=dict)

    def response_head(self) -> bytes:
        assert self.raw_head is not None
        return (
            b"HTTP/1.1 200 OK\r\n"
            + self.raw_head
            + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(self.body)
        )


def _html(head: str, body: str) -> bytes:
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>".encode(
        "utf-8", "surrogatepass"
    )


def deep_nesting() -> HostilePage:
    """200,000 nested divs: lexbor's parse grows with depth x tags (~140 s uncut)."""
    return HostilePage(
        _html("<title>Deep</title>", "<div>" * NESTING + "deepest words" + "</div>" * NESTING)
    )


def many_links(count: int = LINKS) -> HostilePage:
    """200,000 distinct links: 7 MB of anchors, hundreds of MB of rows if all were kept."""
    anchors = "".join(f'<a href="/l/{n}">link {n}</a> ' for n in range(count))
    return HostilePage(_html("<title>Links</title>", anchors))


def nul_everywhere() -> HostilePage:
    """NUL as bytes, as a character reference and as a JSON escape, in every part of a page."""
    json_ld = (
        '<script type="application/ld+json">'
        '{"@type": "Thing", "name": "a\\u0000b", "k\\u0000ey": ["\\u0000", {"x": "\x00"}]}'
        "</script>"
    )
    head = (
        "<title>Ti\x00tle &#0; end</title>"
        '<meta name="description" content="de\x00sc">'
        '<meta property="og:ti\x00tle" content="o\x00g">'
        '<link rel="alternate" hreflang="e\x00n" href="/e\x00n">' + json_ld
    )
    body = (
        '<h1 class="a\x00b">Hea\x00ding</h1><p>te\x00xt &#0; more</p>'
        '<a href="/x\x00y" rel="no\x00follow">li\x00nk</a><img alt="a\x00lt" src="/i">'
    )
    return HostilePage(_html(head, body), extra={"X-Page": "nul"})


def nul_in_a_header() -> HostilePage:
    """No client may accept it: the fetch fails as a bad response, and nothing is stored."""
    return HostilePage(
        _html("<title>Header</title>", "<p>fine</p>"),
        expect="bad_response",
        raw_head=b"Content-Type: text/html\r\nX-Nul: a\x00b\r\n",
    )


def bytes_that_are_not_utf8_in_headers() -> HostilePage:
    """aiohttp decodes such header bytes to lone surrogates, which no driver can store."""
    return HostilePage(
        _html("<title>Headers</title>", "<p>fine</p>"),
        raw_head=(
            b"Content-Type: text/html; charset=\xff\xfe\r\n"
            b'ETag: "v\xff1"\r\nLast-Modified: Mon, 01 Jan 2024 00:00:00 \xe9\r\n'
            b"X-Latin: caf\xe9\r\n"
        ),
    )


def lone_surrogates() -> HostilePage:
    """Surrogates as character references, in JSON escapes, and as bytes in UTF-16."""
    head = (
        "<title>Sur&#xD800;rogate &#xDFFF;&#55296;</title>"
        '<meta name="description" content="&#xD800;">'
        '<script type="application/ld+json">{"name": "\\ud800", "ok": "\\ud83d\\ude00"}</script>'
    )
    body = '<p title="&#xDC00;">text &#xD800; here</p><a href="/s&#xD800;">s&#xDBFF;</a>'
    return HostilePage(_html(head, body))


def utf16_with_lone_surrogates() -> HostilePage:
    text = "<html><head><title>UTF-16</title></head><body><p>a\ud800b\udc00c</p></body></html>"
    return HostilePage(
        b"\xff\xfe" + text.encode("utf-16-le", "surrogatepass"),
        content_type="text/html; charset=utf-16",
    )


def broken_encoding() -> HostilePage:
    """Declared UTF-8, with bytes that are not; an unknown charset in a meta tag too."""
    return HostilePage(
        b'<html><head><meta charset="x-no-such-charset"><title>Bro\xffken \xc3\x28</title>'
        b"</head><body><p>caf\xe9 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf</p></body></html>",
        content_type="text/html; charset=utf-8",
    )


def giant_attributes() -> HostilePage:
    """2 MB attributes, href and title: each cut or dropped, none stored whole."""
    giant = "a" * GIANT
    head = f"<title>{giant}</title>"
    body = f'<div data-x="{giant}"><a href="/{giant}">long</a><a href="/ok" title="{giant}"></a>'
    return HostilePage(_html(head, body + "<p>end</p></div>"))


def many_json_ld_blocks() -> HostilePage:
    scripts = "".join(
        f'<script type="application/ld+json">{{"@type": "Thing", "n": {n}}}</script>'
        for n in range(JSON_LD_BLOCKS)
    )
    return HostilePage(_html("<title>JSON-LD</title>" + scripts, "<p>body</p>"))


def many_head_entries() -> HostilePage:
    """Thousands of alternate languages and Open Graph properties."""
    entries = "".join(
        f'<link rel="alternate" hreflang="x{n}" href="/{n}"><meta property="og:p{n}" content="{n}">'
        for n in range(20_000)
    )
    return HostilePage(_html("<title>Head</title>" + entries, "<h2>x</h2>" * 20_000))


BUILDERS = {
    "deep": deep_nesting,
    "links": many_links,
    "nul": nul_everywhere,
    "nul-header": nul_in_a_header,
    "header-bytes": bytes_that_are_not_utf8_in_headers,
    "surrogates": lone_surrogates,
    "utf16": utf16_with_lone_surrogates,
    "broken-encoding": broken_encoding,
    "giant": giant_attributes,
    "json-ld": many_json_ld_blocks,
    "head": many_head_entries,
}

#: The pages whose headers are what is hostile (``raw_head``), named without building them:
#: a module that parametrizes over the others is imported by every test process, and building
#: every page costs about 0.15 s of CPU (``links`` most of it).
HEADER_PAGES = frozenset({"nul-header", "header-bytes"})


@functools.cache
def hostile_page(name: str) -> HostilePage:
    """The page called ``name``, built once per process (some take a second to build)."""
    return BUILDERS[name]()

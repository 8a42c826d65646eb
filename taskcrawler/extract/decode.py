"""Bytes to text: find the encoding a page is really in, and never fail on one that lies.

Order of evidence: byte-order mark > HTTP header charset > ``<meta charset>`` / ``http-equiv`` >
charset-normalizer's guess > UTF-8 with replacement characters. Labels follow the WHATWG Encoding
Standard, which is what browsers do: ``iso-8859-1`` and ``us-ascii`` mean windows-1252,
``shift_jis`` means windows-31j, and so on. Two common lies are caught cheaply:
a page declared UTF-8 that is not valid UTF-8, and a page declared Latin-1 that is valid UTF-8.
"""

from __future__ import annotations

import codecs
import re
from typing import NamedTuple

import charset_normalizer

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# WHATWG labels whose meaning differs from Python's codec of the same name.
_WHATWG_OVERRIDES: dict[str, str] = {
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "iso_8859-1": "cp1252",
    "l1": "cp1252",
    "iso-8859-9": "cp1254",
    "iso8859-9": "cp1254",
    "latin5": "cp1254",
    "iso-8859-11": "cp874",
    "tis-620": "cp874",
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "ms_kanji": "cp932",
    "windows-31j": "cp932",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "big5": "big5hkscs",
    "utf-16": "utf-16-le",
    "unicode": "utf-16-le",
    "x-user-defined": "cp1252",
}

# Python codecs a web page may legitimately be in (WHATWG's list); anything else is ignored.
_ALLOWED = frozenset(
    codecs.lookup(name).name
    for name in [
        "utf-8",
        "utf-16-le",
        "utf-16-be",
        "ibm866",
        "iso8859-2",
        "iso8859-3",
        "iso8859-4",
        "iso8859-5",
        "iso8859-6",
        "iso8859-7",
        "iso8859-8",
        "iso8859-10",
        "iso8859-13",
        "iso8859-14",
        "iso8859-15",
        "iso8859-16",
        "koi8-r",
        "koi8-u",
        "mac-roman",
        "mac-cyrillic",
        "cp874",
        "cp1250",
        "cp1251",
        "cp1252",
        "cp1253",
        "cp1254",
        "cp1255",
        "cp1256",
        "cp1257",
        "cp1258",
        "gb18030",
        "big5hkscs",
        "euc-jp",
        "iso2022-jp",
        "cp932",
        "cp949",
        "latin-1",
    ]
)
_SINGLE_BYTE_WESTERN = frozenset({"cp1252", "iso8859-1", "iso8859-15"})
_UTF8 = "utf-8"

_META_CHARSET = re.compile(
    rb"""<meta[^>]*?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.IGNORECASE
)
_PRESCAN_BYTES = 4096
_GUESS_BYTES = 65536


class Decoded(NamedTuple):
    text: str
    encoding: str
    #: The body itself when it is exactly ``text`` in UTF-8, so that the parser can take it
    #: as it came instead of the text encoded once more.
    utf8: bytes | None = None


def normalize_label(label: str | None) -> str | None:
    """The Python codec for a charset label, or None when the label is unknown or unsafe."""
    if not label:
        return None
    key = label.strip().strip("\"'").lower()
    key = _WHATWG_OVERRIDES.get(key, key)
    try:
        name = codecs.lookup(key).name
    except (LookupError, ValueError):
        return None
    return name if name in _ALLOWED else None


def _sniff_bom(body: bytes) -> str | None:
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name
    return None


def meta_charset(body: bytes) -> str | None:
    """The charset a page declares in a ``<meta>`` near its start (WHATWG prescan, simplified)."""
    match = _META_CHARSET.search(body, 0, _PRESCAN_BYTES)
    if match is None:
        return None
    name = normalize_label(match.group(1).decode("ascii", "replace"))
    # A document that is being parsed as bytes cannot be UTF-16; browsers read UTF-8 then.
    return _UTF8 if name in ("utf-16-le", "utf-16-be") else name


def _guess(body: bytes) -> str | None:
    """charset-normalizer's best candidate; on a tie, windows-1252 (the browsers' default)."""
    try:
        results = list(charset_normalizer.from_bytes(body[:_GUESS_BYTES]))
    except Exception:  # a third-party heuristic must never take the page down with it
        return None
    candidates = [r for r in results if normalize_label(r.encoding) is not None]
    if not candidates:
        return None
    best = min(candidates, key=lambda r: (r.chaos, -r.coherence, r.encoding != "cp1252"))
    return normalize_label(best.encoding)


def _mostly_not_utf8(body: bytes) -> bool:
    """True when invalid UTF-8 sequences outnumber valid multi-byte ones: a legacy encoding."""
    text = body.decode(_UTF8, "replace")
    replaced = text.count("\ufffd")
    bad = replaced - body.count(b"\xef\xbf\xbd")
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))
    return bad > non_ascii - replaced


class _Body:
    """A fetched body, and its text once it was decoded as strict UTF-8 (or None when that
    failed): the check for UTF-8 and the decoding are then one pass, not two."""

    __slots__ = ("_text", "_tried", "raw")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self._text: str | None = None
        self._tried = False

    def utf8(self) -> str | None:
        if not self._tried:
            self._tried = True
            try:
                self._text = self.raw.decode(_UTF8)
            except UnicodeDecodeError:
                self._text = None
        return self._text


def _declared(body: bytes, charset: str | None) -> str | None:
    return normalize_label(charset) or meta_charset(body)


def _check_declared(body: _Body, declared: str) -> str:
    """Catch the two usual lies; otherwise trust the declaration."""
    raw = body.raw
    if declared == _UTF8:
        if body.utf8() is not None or not _mostly_not_utf8(raw):
            return _UTF8
        return _guess(raw) or "cp1252"
    if declared in _SINGLE_BYTE_WESTERN and not raw.isascii() and body.utf8() is not None:
        return _UTF8
    return declared


def _choose(body: _Body, charset: str | None) -> tuple[str, int]:
    raw = body.raw
    bom = _sniff_bom(raw)
    if bom is not None:
        return bom, 3 if bom == _UTF8 else 2
    declared = _declared(raw, charset)
    if declared is not None:
        return _check_declared(body, declared), 0
    if raw.isascii() or body.utf8() is not None:
        return _UTF8, 0
    return _guess(raw) or _UTF8, 0


def choose_encoding(body: bytes, charset: str | None = None) -> tuple[str, int]:
    """The encoding to decode ``body`` with, and how many leading bytes (a BOM) to skip."""
    return _choose(_Body(body), charset)


def decode_html(body: bytes, charset: str | None = None) -> Decoded:
    """Decode a fetched page. Never raises: undecodable bytes become U+FFFD."""
    checked = _Body(body)
    encoding, skip = _choose(checked, charset)
    if encoding == _UTF8 and not skip:
        text = checked.utf8()
        if text is not None:  # valid UTF-8: the body is exactly the text's encoding
            return Decoded(text, encoding, body)
    try:
        text = body[skip:].decode(encoding, "replace")
    except (LookupError, ValueError):  # pragma: no cover - encodings come from the allow-list
        encoding, text = _UTF8, body.decode(_UTF8, "replace")
    return Decoded(text, encoding)

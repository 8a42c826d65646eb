"""Encoding detection: BOM > HTTP header > <meta> > guess > UTF-8 with replacement."""

from __future__ import annotations

import codecs

import pytest

from taskcrawler.extract.decode import choose_encoding, decode_html, meta_charset, normalize_label


@pytest.mark.parametrize(
    ("label", "codec"),
    [
        ("UTF-8", "utf-8"),
        ("utf8", "utf-8"),
        ("ISO-8859-1", "cp1252"),  # WHATWG: latin-1 means windows-1252
        ("us-ascii", "cp1252"),
        ("Shift_JIS", "cp932"),
        ("windows-1251", "cp1251"),
        ("gb2312", "gb18030"),
        ("euc-kr", "cp949"),
        ("koi8-r", "koi8-r"),
        ('"utf-8"', "utf-8"),
        ("utf-7", None),  # not a web encoding: ignored, never trusted
        ("base64", None),
        ("rot13", None),
        ("no-such-charset", None),
        ("", None),
        (None, None),
    ],
)
def test_normalize_label(label: str | None, codec: str | None) -> None:
    expected = codecs.lookup(codec).name if codec else None
    assert normalize_label(label) == expected


@pytest.mark.parametrize(
    ("head", "codec"),
    [
        (b'<meta charset="windows-1251">', "cp1251"),
        (b"<META CHARSET=shift_jis>", "cp932"),
        (b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">', "koi8-r"),
        (b"<meta charset='utf-16'>", "utf-8"),  # a byte-parsed page cannot be UTF-16
        (b'<meta name="x" content="y">', None),
    ],
)
def test_meta_charset(head: bytes, codec: str | None) -> None:
    expected = codecs.lookup(codec).name if codec else None
    assert meta_charset(b"<html><head>" + head + b"</head>") == expected


def test_meta_after_the_prescan_window_is_ignored() -> None:
    assert meta_charset(b" " * 5000 + b'<meta charset="koi8-r">') is None


def test_bom_beats_everything() -> None:
    body = codecs.BOM_UTF8 + '<meta charset="koi8-r">é'.encode()
    assert choose_encoding(body, "windows-1251") == ("utf-8", 3)
    assert decode_html(body, "windows-1251").text.endswith("é")


def test_utf16_be_bom() -> None:
    body = codecs.BOM_UTF16_BE + "<p>Привет</p>".encode("utf-16-be")
    assert decode_html(body).text == "<p>Привет</p>"


def test_header_beats_meta() -> None:
    body = '<meta charset="utf-8"><p>Привет</p>'.encode("cp1251")
    assert decode_html(body, "windows-1251").text.endswith("Привет</p>")


def test_declared_utf8_that_is_latin1_is_caught() -> None:
    body = "<meta charset=utf-8><p>Déjà vu, garçon, très élégant</p>".encode("latin-1")
    decoded = decode_html(body)
    assert decoded.encoding == "cp1252"
    assert "Déjà vu, garçon, très élégant" in decoded.text


def test_declared_utf8_with_one_bad_byte_stays_utf8() -> None:
    body = "<p>Grüße aus Köln, schön</p>".encode() + b"\xff"
    decoded = decode_html(body, "utf-8")
    assert decoded.encoding == "utf-8"
    assert decoded.text.startswith("<p>Grüße aus Köln, schön</p>")
    assert decoded.text.endswith("\ufffd")


def test_declared_latin1_that_is_utf8_is_caught() -> None:
    body = "<p>naïve café</p>".encode()
    assert decode_html(body, "iso-8859-1").text == "<p>naïve café</p>"


def test_undeclared_utf8_and_ascii_skip_the_guesser() -> None:
    assert choose_encoding("<p>日本語</p>".encode()) == ("utf-8", 0)
    assert choose_encoding(b"<p>plain</p>") == ("utf-8", 0)


def test_undeclared_legacy_encoding_is_guessed() -> None:
    text = (
        "<p>Съешь же ещё этих мягких французских булок, да выпей чаю. Широкая электрификация.</p>"
    )
    decoded = decode_html(text.encode("cp1251"))
    assert decoded.text == text


@pytest.mark.parametrize(
    "body",
    [b"", b"\xff\xfe", b"\xef\xbb\xbf", b"\x00" * 10, bytes(range(256)), b"\x81\x8d\x8f\x90\x9d"],
)
@pytest.mark.parametrize("charset", [None, "utf-8", "cp1252", "shift_jis", "utf-16", "bogus"])
def test_never_raises(body: bytes, charset: str | None) -> None:
    decoded = decode_html(body, charset)
    assert isinstance(decoded.text, str)
    decoded.text.encode("utf-8")  # no lone surrogates


def test_valid_utf8_comes_with_its_bytes_and_anything_else_without() -> None:
    body = "<p>日本語 é</p>".encode()
    assert decode_html(body) == ("<p>日本語 é</p>", "utf-8", body)
    assert decode_html(b"<p>caf\xe9 \xff</p>", "utf-8").utf8 is None  # bytes were replaced
    assert decode_html(b"\xef\xbb\xbf<p>bom</p>").utf8 is None  # the text starts later
    assert decode_html("<p>é</p>".encode("cp1252"), "windows-1252").utf8 is None

"""The plain-URL shortcut of :func:`normalize_url` gives the key the full parse gives.

``_normalized_by_parsing`` reads every URL the way ``urlsplit`` and the fetcher's yarl do, and
raises every refusal; ``_plain_normalized`` builds the key of the common shape without either
parser. Wherever the shortcut answers, both must give the same key; wherever it does not, the
full parse decides (so refusals keep their words). Hostile URLs are generated from pieces
that each parser has treated in its own way: IDNA and look-alike letters, escapes, ports with
zeros, dots, userinfo, brackets, backslashes, controls.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from taskcrawler.domain import InvalidURL, normalize_url
from taskcrawler.domain.urls import (
    _normalized_by_parsing,
    _plain_normalized,
    host_as_sent,
    host_filter,
    host_key,
)

Outcome = tuple[str, str]


def by_parsing(url: str) -> Outcome:
    try:
        return ("key", _normalized_by_parsing(url))
    except InvalidURL as exc:
        return ("refused", str(exc))


def through_normalize_url(url: str) -> Outcome:
    try:
        return ("key", normalize_url.__wrapped__(url))
    except InvalidURL as exc:
        return ("refused", str(exc))


SCHEMES = st.sampled_from(["http", "https", "HTTP", "hTtPs", "ftp", "httpx", "htt", ""])
SEPARATORS = st.sampled_from(["://", "://", "://", ":/", ":///", "//", ":"])
USERINFO = st.sampled_from(["", "", "", "user@", "u:p@", "@", ":@", "a@b@"])
LABEL_CHARACTERS = st.sampled_from(
    [
        *"abcxyzABCXYZ0129-_",
        "\u212a",  # Kelvin sign: IGNORECASE without ASCII would take it for k
        "\u017f",  # long s: likewise for s
        "\u00df",  # sharp s: IDNA 2008 keeps it, 2003 made it ss
        "\u00fc",
        "\u00ad",  # soft hyphen, dropped by IDNA
        "\u200b",  # zero-width space
        "\uff0e",  # full-width dot
        "\u3002",  # ideographic full stop
        "\u2488",  # digit one full stop
        "\u2168",  # Roman numeral nine
        "%",
        "!",
        " ",
        "\\",
        "[",
        "]",
    ]
)
LABELS = st.one_of(
    st.text(LABEL_CHARACTERS, min_size=0, max_size=8),
    st.sampled_from(["a" * 63, "a" * 64, "xn--bcher-kva", "xn--", "-a", "a-", "_dmarc", "0x7f"]),
    st.integers(0, 300).map(str),
    st.sampled_from(["01", "00", "256", "1e3"]),
)
NAMES = st.lists(LABELS, min_size=1, max_size=6).map(".".join)
HOSTS = st.one_of(
    NAMES,
    NAMES.map(lambda name: name + "."),
    NAMES.map(lambda name: name + ".."),
    st.sampled_from(
        [
            "[::1]",
            "[::FFFF:1.2.3.4]",
            "[fe80::1%25eth0]",
            "[v1.x]",
            "[1.2.3.4]",
            "::1",
            "[::1",
            "::1]",
            "1.2.3.4",
            "001.2.3.4",
            "1.2.3",
            "4294967295",
            "[::1]x",
            "a.com\\@b.com",
            ("a" * 60 + ".") * 4 + "a" * 9,  # 253 characters
            ("a" * 60 + ".") * 4 + "a" * 10,  # 254
            ("a" * 60 + ".") * 4 + "a" * 9 + ".",  # 253 and a trailing dot
        ]
    ),
)
PORTS = st.one_of(
    st.just(""),
    st.sampled_from([":", ":0", ":00", ":80", ":080", ":00080", ":443", ":0443", ":8443"]),
    st.sampled_from([":65535", ":65536", ":99999", ":123456", ":1a", ":+1", ": 1", ":-1", ":1:2"]),
    st.integers(0, 70000).map(lambda port: f":{port}"),
)
REST_CHARACTERS = st.sampled_from(
    [
        *"/?#.%@:;=&+,~-_!$'()*[]\\\"<>^`{|}aAzZ09",
        *("%41", "%7e", "%2f", "%2F", "%zz", "%4", "..", "./", "/../"),
        *("\u00e9", "\u212a", " ", "\t", "\x00", "\x7f", "\x01", "\ud800"),
    ]
)
RESTS = st.lists(REST_CHARACTERS, max_size=16).map("".join)
AROUND = st.sampled_from(["", "", "", "", " ", "\x01", "\x1f", "\n"])


@st.composite
def urls(draw: st.DrawFn) -> str:
    lead, trail = draw(AROUND), draw(AROUND)
    authority = draw(USERINFO) + draw(HOSTS) + draw(PORTS)
    return lead + draw(SCHEMES) + draw(SEPARATORS) + authority + draw(RESTS) + trail


ASCII_LABELS = st.text(st.sampled_from("abzABZ019-_"), min_size=0, max_size=64)
ASCII_HOSTS = st.lists(ASCII_LABELS, min_size=1, max_size=5).map(".".join)
PRINTABLE = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=24)


# Built once, not in every draw: Hypothesis works out each new strategy's properties anew.
PLAIN_SCHEMES = st.sampled_from(["http", "https", "HTTP", "Https"])
PLAIN_HOSTS = st.one_of(ASCII_HOSTS, ASCII_HOSTS.map(lambda name: name + "."), HOSTS)
PLAIN_STARTS = st.sampled_from(["", "/", "?", "#", "/a/"])


@st.composite
def nearly_plain_urls(draw: st.DrawFn) -> str:
    """Close to the shortcut's shape, so that many take it and the rest miss it narrowly."""
    scheme, host, start = draw(PLAIN_SCHEMES), draw(PLAIN_HOSTS), draw(PLAIN_STARTS)
    return f"{scheme}://{host}{draw(PORTS)}{start}{draw(PRINTABLE)}"


PLAIN = [
    "http://example.com",
    "HTTP://Example.COM:80/a?b=1#frag",
    "https://example.com:443/",
    "https://example.com:00443/",
    "https://example.com:8443/x",
    "http://example.com./",
    "http://127.0.0.1:9/run/1",
    "http://under_score.example/",
    "http://0x7f.1/",
    "http://example.com/page/%64d?q=%3a%41&r=%e2%82%ac",
    "http://example.com/100%/%zz",
    "http://example.com?",
    "http://example.com#x?y",
    "http://example.com/?a=1?b=2#c#d",
    "http://example.com/a/./b/../c",
    "http://example.com/@evil.com",
    "http://example.com/a\\b",
    "http://" + "a" * 63 + ".example/",
    "http://" + ("a" * 60 + ".") * 4 + "a" * 9 + "/",  # 253 characters
]


@pytest.mark.parametrize("url", PLAIN)
def test_plain_urls_take_the_shortcut_to_the_same_key(url: str) -> None:
    shortcut = _plain_normalized(url)
    assert shortcut is not None
    assert ("key", shortcut) == by_parsing(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://\u212aelvin.example/",  # the Kelvin sign is no ASCII k
        "http://\u017fite.example/",
        "http://b\u00fccher.de/",
        "http://user@example.com/",
        "http://example.com:0/",
        "http://example.com:65536/",
        "http://example.com:/",
        "http://a..example/",
        "http://" + "a" * 64 + ".example/",
        "http://" + ("a" * 60 + ".") * 4 + "a" * 10 + "/",  # 254
        "http://[::1]:8080/",
        "http://example.com/\u00e9",
        "http://example.com/a b",
        "\x01http://example.com/",
        "ftp://example.com/",
        "http://example.com/" + "a" * 2100,
    ],
)
def test_other_urls_are_left_to_the_parsers(url: str) -> None:
    assert _plain_normalized(url) is None
    assert through_normalize_url(url) == by_parsing(url)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(urls(), nearly_plain_urls()))
@example("http://example.com:00080/")
@example("http://\u017fite.example/")  # IDNA maps the long s to s; lower() keeps it
@example("http://1.2.3.4./")
@example("http://a.com\\@b.com/")
@example("http://A.COM.:443/%7E?%7e#%7e")
def test_normalize_url_gives_what_the_full_parse_gives(url: str) -> None:
    expected = by_parsing(url)
    assert through_normalize_url(url) == expected
    shortcut = _plain_normalized(url)
    if shortcut is not None:
        assert ("key", shortcut) == expected


def test_the_cached_function_takes_the_shortcut_too() -> None:
    assert normalize_url("HTTPS://Shortcut.Example:443/%7ex?#") == "https://shortcut.example/~x"
    with pytest.raises(InvalidURL, match="port 0"):
        normalize_url("http://shortcut.example:0/")


def hostname_by_urlsplit(url: str) -> tuple[str, str]:
    try:
        return ("host", (urlsplit(url).hostname or "").lower())
    except ValueError as exc:
        return ("error", str(exc))


def through_host_as_sent(url: str) -> tuple[str, str]:
    try:
        return ("host", host_as_sent(url))
    except ValueError as exc:
        return ("error", str(exc))


@settings(max_examples=2000, deadline=None)
@given(st.one_of(urls(), nearly_plain_urls()))
@example("http://Example.COM.:80/")
@example("http://\u212aelvin.example/")
@example("http://[::1]:80/")
@example("http://u@Example.com/")
def test_the_host_as_sent_is_urlsplits(url: str) -> None:
    assert through_host_as_sent(url) == hostname_by_urlsplit(url)


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://Example.COM.:8080/x", "example.com."),
        ("https://B\u00fccher.DE/", "b\u00fccher.de"),
        ("http://[::1]:8080/", "::1"),
        ("http:///path", ""),
    ],
)
def test_the_host_as_sent_keeps_the_spelling_lower_cased(url: str, host: str) -> None:
    assert host_as_sent(url) == host


def through_host_key(url: str) -> tuple[str, str]:
    try:
        return ("host", host_key(url))
    except InvalidURL:
        return ("invalid", "")


def key_hostname(url: str) -> tuple[str, str]:
    try:
        return ("host", urlsplit(normalize_url(url)).hostname or "")
    except InvalidURL:
        return ("invalid", "")


@settings(max_examples=2000, deadline=None)
@given(st.one_of(urls(), nearly_plain_urls()))
@example("http://Example.COM.:80/")
@example("http://B\u00fccher.DE/")
@example("http://[::1]:80/")
def test_the_host_key_is_the_keys_host(url: str) -> None:
    assert through_host_key(url) == key_hostname(url)


@pytest.mark.parametrize("spelled", ["b\u00fccher.de", "B\u00fcCHER.DE.", "xn--bcher-kva.de"])
def test_a_host_filter_takes_either_spelling_of_an_idn_host(spelled: str) -> None:
    assert host_filter(spelled) == "xn--bcher-kva.de"
    assert host_filter("not a host") == "not a host"

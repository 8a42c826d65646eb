import pytest
from yarl import URL

from taskcrawler.domain import ErrorCode, FetchError, InvalidURL, normalize_url, validate_url
from taskcrawler.domain.urls import request_target
from taskcrawler.fetch import Fetcher
from taskcrawler.settings import Settings


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("http://Example.COM", "http://example.com/"),
        ("HTTP://example.com:80/a?b=1#frag", "http://example.com/a?b=1"),
        ("https://example.com:443/", "https://example.com/"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("http://bücher.de/Über", "http://xn--bcher-kva.de/Über"),
        ("http://example.com./", "http://example.com/"),
        ("http://[::1]:8080/p", "http://[::1]:8080/p"),
        ("http://example.com/A/B?Q=Z", "http://example.com/A/B?Q=Z"),
        # the host as the fetcher requests it: IDNA 2008 keeps ß (IDNA 2003 made it "ss")
        ("http://ß.de/", "http://xn--zca.de/"),
        ("http://a\uff0ecom/", "http://a.com/"),  # a full-width dot is a dot
        ("http://\u2168.com/", "http://ix.com/"),  # Roman numeral nine, mapped by UTS 46
        ("http://under_score.example/", "http://under_score.example/"),
        ("http://0x7f.1/", "http://0x7f.1/"),  # legacy IPv4 spellings are the guard's to judge
        # RFC 3986 6.2.2: an escaped unreserved character is that character; other escapes
        # take upper-case hex digits; reserved ones stay escaped (/a%2Fb is not /a/b)
        ("http://example.com/page/%64d", "http://example.com/page/dd"),
        ("http://example.com/%7euser/%2d%2E%5F", "http://example.com/~user/-._"),
        (
            "http://example.com/a%2fb?q=%3a%41&r=%e2%82%ac",
            "http://example.com/a%2Fb?q=%3AA&r=%E2%82%AC",
        ),
        ("http://example.com/100%/%zz", "http://example.com/100%/%zz"),
    ],
)
def test_normalize(url: str, normalized: str) -> None:
    assert normalize_url(url) == normalized


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "empty"),
        ("ftp://example.com/", "only http and https"),
        ("javascript:alert(1)", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("http://", "no host"),
        ("http://user:pw@example.com/", "credentials"),
        ("http://user@example.com/", "credentials"),
        ("http://example.com:99999/", "cannot be parsed"),
        ("http://exa mple.com/\n", "whitespace"),
        ("http://example.com/" + "a" * 2100, "longer than 2048"),
        ("not a url", "only http and https"),
    ],
)
def test_refused(url: str, message: str) -> None:
    with pytest.raises(InvalidURL, match=message):
        validate_url(url)


def test_validate_returns_url_as_sent() -> None:
    assert validate_url("http://Example.com") == "http://Example.com"


#: Hosts an earlier version accepted and the worker could never fetch (it failed them as
#: internal_error or retried them as dns), and the part of the message that says why.
UNUSABLE = [
    ("http://\u2488.example/", "'\u2488.example' (requested as '1..example') has an empty label"),
    ("http://a\u200bb.example/", "cannot contain '\\u200b'"),  # zero-width space
    ("http://a\u00adb.example/", "cannot contain"),  # soft hyphen: IDNA would drop it
    ("http://example.com:0/", "port 0"),
    ("http://a..example/", "empty label"),
    ("http://.example/", "empty label"),
    ("http://example.com../", "empty label"),
    ("http://" + "a" * 64 + ".example/", "longer than 63"),
    ("http://" + ("a" * 60 + ".") * 5 + "example/", "longer than 253"),
    ("http://exa%20mple.com/", "not a DNS name"),
    ("http://a%00b.example/", "not a DNS name"),
    ("http://a!b.example/", "not a DNS name"),
]


@pytest.mark.parametrize(("url", "message"), UNUSABLE)
def test_hosts_no_fetch_can_use_are_refused_at_submit(url: str, message: str) -> None:
    with pytest.raises(InvalidURL) as refused:
        validate_url(url)
    assert message in str(refused.value)


@pytest.mark.parametrize(("url", "message"), UNUSABLE)
async def test_the_fetcher_refuses_them_for_the_same_reason_without_a_retry(
    url: str, message: str
) -> None:
    fetcher = Fetcher(Settings(respect_robots=False))
    try:
        with pytest.raises(FetchError) as refused:
            await fetcher.fetch(url)
    finally:
        await fetcher.close()
    assert refused.value.code == ErrorCode.INVALID_URL
    assert not refused.value.transient
    assert message in refused.value.message


def test_the_deduplication_key_names_the_host_that_is_requested() -> None:
    for url in ("http://Bücher.DE/x", "http://ß.de/", "http://[::1]:8080/", "http://a.com./"):
        requested = request_target(url)
        key = URL(normalize_url(url))
        assert key.raw_host == (requested.raw_host or "").rstrip(".")
        assert key.port == requested.port

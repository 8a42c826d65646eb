import pytest

from taskcrawler.domain import InvalidURL, normalize_url, validate_url


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

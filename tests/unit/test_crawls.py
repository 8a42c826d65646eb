"""Crawl specs, scope and discovery: pure rules, every refusal with its reason."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from taskcrawler.domain.crawls import (
    DEFAULT_LIMIT,
    MAX_PATTERNS,
    CrawlSpec,
    CrawlStatus,
    InvalidCrawlSpec,
    Scope,
    SitemapMode,
    Verdict,
    discover,
    sitemap_candidates,
)
from taskcrawler.domain.jobs import ClaimedJob
from taskcrawler.domain.rendering import RenderRequest
from taskcrawler.storage.crawls import page_callback


@dataclass(frozen=True)
class L:
    url: str
    nofollow: bool = False


START = "https://www.example.com/start"


def spec(**fields: Any) -> CrawlSpec:
    return CrawlSpec.create(fields.pop("url", START), **fields)


# --- the spec ------------------------------------------------------------------------------


def test_defaults() -> None:
    made = spec()
    assert made.limit == DEFAULT_LIMIT == 10_000
    assert made.sitemap is SitemapMode.INCLUDE
    assert made.max_depth is None
    assert not made.allow_subdomains and not made.allow_external
    assert made.pages.formats == ("metadata", "markdown")
    assert (made.pages.render, made.pages.render_options) == ("never", None)
    assert made.webhook_events == ("crawl.completed",) and not made.page_webhooks
    # A spec stored before crawls had webhook_events announces its end only.
    assert CrawlSpec.from_dict({"url": START}).webhook_events == ("crawl.completed",)
    # One stored before its formats were stated asked for the metadata alone.
    assert CrawlSpec.from_dict({"url": START}).pages.formats == ("metadata",)


def test_a_screenshot_renders_always_unless_asked_otherwise() -> None:
    assert spec(formats=["screenshot"]).pages.render == "always"
    assert spec(formats=["screenshot"], render="auto").pages.render == "auto"
    assert spec(render="always").pages.render == "always"
    # A spec stored before crawls rendered reads as never.
    assert CrawlSpec.from_dict({"url": START}).pages.render == "never"


def test_round_trip_through_a_dict() -> None:
    made = spec(
        max_depth=3,
        limit=50,
        include_paths=["^/docs/"],
        exclude_paths=["\\.pdf$"],
        allow_subdomains=True,
        sitemap="only",
        formats=["markdown", "links"],
        callback_url="https://hooks.example.net/x",
        max_age=60,
        render="auto",
        render_options=RenderRequest(wait_for="main", block=("image", "font"), viewport_width=900),
        webhook_events=["crawl.page", "crawl.page"],
    )
    assert CrawlSpec.from_dict(made.to_dict()) == made
    assert made.webhook_events == ("crawl.page",) and made.page_webhooks
    assert made.to_dict()["render_options"]["viewport"] == {"width": 900, "height": 800}
    assert made.sitemap is SitemapMode.ONLY and made.include_paths == ("^/docs/",)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"url": "ftp://example.com/"}, "url", "only http and https"),
        ({"render": "sometimes"}, "render", "must be one of never, auto, always"),
        ({"render": "never", "formats": ["screenshot"]}, "render", "needs a browser"),
        ({"url": "http://"}, "url", "no host"),
        ({"limit": 0}, "limit", "between 1 and 100,000"),
        ({"limit": 100_001}, "limit", "between 1 and 100,000"),
        ({"limit": "10"}, "limit", "integer"),
        ({"limit": 500, "max_limit": 100}, "limit", "between 1 and 100"),
        ({"max_depth": -1}, "max_depth", "between 0"),
        ({"max_depth": 10_000}, "max_depth", "between 0"),
        ({"include_paths": ["ok", "(unclosed"]}, "include_paths[1]", "missing \\)"),
        ({"exclude_paths": ["(a)\\1"]}, "exclude_paths[0]", "invalid"),
        ({"exclude_paths": ["(?=lookahead)"]}, "exclude_paths[0]", "RE2 syntax"),
        ({"include_paths": [""]}, "include_paths[0]", "non-empty"),
        ({"include_paths": ["a" * 1001]}, "include_paths[0]", "at most 1000"),
        ({"include_paths": ["a"] * (MAX_PATTERNS + 1)}, "include_paths", "at most 100"),
        ({"include_paths": "^/docs"}, "include_paths", "list"),
        ({"include_paths": ["x{1000}{1000}"]}, "include_paths[0]", "invalid"),
        ({"sitemap": "sometimes"}, "sitemap", "include, skip, only"),
        ({"allow_external": "yes"}, "allow_external", "true or false"),
        ({"formats": []}, "formats", "non-empty"),
        ({"formats": ["pdf"], "known_formats": {"metadata"}}, "formats[0]", "unknown"),
        ({"callback_url": "javascript:alert(1)"}, "callback_url", "only http"),
        ({"max_age": -1}, "max_age", "between 0"),
        ({"webhook_events": "crawl.page"}, "webhook_events", "list of event names"),
        ({"webhook_events": ["crawl.page", "job.failed"]}, "webhook_events[1]", "unknown event"),
        # What a monitor's free-form crawl can hold: each a refusal naming the field.
        ({"depth": 2}, "depth", "unknown field"),
        ({"include_paths": 5}, "include_paths", "list"),
        ({"exclude_paths": None}, "exclude_paths", "list"),
        ({"include_paths": {"^/docs": 1}}, "include_paths", "list"),
        ({"formats": 5}, "formats", "non-empty list"),
        ({"options": {"mobile": True}}, "options", "scrape options"),
        ({"render_options": {"wait_seconds": 1}}, "render_options", "render options"),
    ],
)
def test_bad_input_names_the_field(fields: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InvalidCrawlSpec, match=message) as caught:
        spec(**fields)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


def test_a_catastrophic_pattern_is_evaluated_in_linear_time() -> None:
    """``(a+)+$`` against 'aaa…ab' backtracks 2**n times in a backtracking engine (Python's
    re would not finish in a lifetime with 2,000 a's); RE2 answers at once. The test holds no
    clock: with a backtracking engine it would simply never finish."""
    scope = Scope(START, exclude_paths=["(a+)+$"], include_paths=["(x+x+)+y"])
    path = "/" + "a" * 2000 + "b"
    assert scope.check(f"https://example.com{path}") is Verdict.NOT_INCLUDED
    assert scope.check("https://example.com/aaaa") is Verdict.EXCLUDED


def test_crawl_status() -> None:
    assert not CrawlStatus.RUNNING.is_final
    assert CrawlStatus.COMPLETED.is_final and CrawlStatus.CANCELLED.is_final


# --- scope ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "verdict"),
    [
        ("https://www.example.com/a", Verdict.IN_SCOPE),
        ("http://example.com/a", Verdict.IN_SCOPE),  # scheme and www. do not matter
        ("https://EXAMPLE.com:8443/a", Verdict.IN_SCOPE),  # nor the port
        ("https://docs.example.com/a", Verdict.SUBDOMAIN),
        ("https://www.docs.example.com/a", Verdict.SUBDOMAIN),
        ("https://example.org/a", Verdict.EXTERNAL),
        ("https://notexample.com/a", Verdict.EXTERNAL),
        ("https://example.com.evil.net/a", Verdict.EXTERNAL),
        ("ftp://example.com/a", Verdict.INVALID_URL),
        ("mailto:someone@example.com", Verdict.INVALID_URL),
        ("https://user:pw@example.com/", Verdict.INVALID_URL),
    ],
)
def test_hosts(url: str, verdict: Verdict) -> None:
    assert Scope(START).check(url) is verdict


def test_subdomains_and_external_on_request() -> None:
    subdomains = Scope(START, allow_subdomains=True)
    assert subdomains.allows("https://docs.example.com/")
    assert subdomains.check("https://example.org/") is Verdict.EXTERNAL
    external = Scope(START, allow_external=True)
    assert external.allows("https://example.org/") and external.allows("https://a.example.com/")


def test_paths_exclusion_wins() -> None:
    scope = Scope(START, include_paths=["^/docs/", "^/blog/"], exclude_paths=["/drafts/"])
    assert scope.check("https://example.com/docs/a") is Verdict.IN_SCOPE
    assert scope.check("https://example.com/blog/drafts/x") is Verdict.EXCLUDED
    assert scope.check("https://example.com/shop/") is Verdict.NOT_INCLUDED
    assert scope.check("https://example.com/x?p=/docs/") is Verdict.NOT_INCLUDED  # path only


def test_patterns_see_the_key_not_the_spelling() -> None:
    scope = Scope(START, include_paths=["^/a/c$"])
    assert scope.allows("https://example.com/a/./b/../c?utm_source=x")


# --- discovery -----------------------------------------------------------------------------


def test_discover_keys_dedups_and_keeps_document_order() -> None:
    made = spec()
    links = [
        L("https://example.com/b?utm_source=nl"),
        L("https://example.com/a#top"),
        L("https://example.com/b"),
        L("https://www.example.com/start"),  # the page itself
        L("https://example.com/a?z=1&y=2"),
    ]
    found = discover(START, links, None, 2, made, Scope.of(made))
    assert [(c.key, c.depth) for c in found.candidates] == [
        ("https://example.com/b", 3),
        ("https://example.com/a", 3),
        ("https://example.com/a?y=2&z=1", 3),
    ]
    assert found.duplicate_of is None


def test_discover_reports_every_refusal() -> None:
    made = spec(exclude_paths=["^/private/"])
    links = [
        L("https://example.com/ok"),
        L("https://example.com/private/x"),
        L("https://other.org/"),
        L("https://docs.example.com/"),
        L("https://example.com/secret", nofollow=True),
        L("javascript:void(0)"),
    ]
    found = discover(START, links, None, 0, made, Scope.of(made))
    assert [c.key for c in found.candidates] == ["https://example.com/ok"]
    assert found.rejected == {
        Verdict.EXCLUDED: 1,
        Verdict.EXTERNAL: 1,
        Verdict.SUBDOMAIN: 1,
        Verdict.NOFOLLOW: 1,
        Verdict.INVALID_URL: 1,
    }


def test_max_depth_stops_links_but_not_the_canonical() -> None:
    made = spec(max_depth=2)
    scope = Scope.of(made)
    links = [L("https://example.com/deeper")]
    at_limit = discover(
        "https://example.com/p?color=red", links, "https://example.com/p", 2, made, scope
    )
    assert [(c.key, c.depth) for c in at_limit.candidates] == [("https://example.com/p", 2)]
    assert at_limit.duplicate_of == "https://example.com/p"
    assert at_limit.rejected == {Verdict.TOO_DEEP: 1}
    below = discover("https://example.com/p", links, None, 1, made, scope)
    assert [(c.key, c.depth) for c in below.candidates] == [("https://example.com/deeper", 2)]


def test_a_canonical_elsewhere_or_to_itself_is_no_duplicate() -> None:
    made = spec()
    scope = Scope.of(made)
    itself = discover(
        "https://example.com/p?utm_source=x", [], "https://example.com/p", 0, made, scope
    )
    assert itself.duplicate_of is None and itself.candidates == []
    foreign = discover("https://example.com/p", [], "https://other.org/p", 0, made, scope)
    assert foreign.duplicate_of is None and foreign.candidates == []


def test_links_of_a_duplicate_are_still_followed() -> None:
    made = spec()
    found = discover(
        "https://example.com/a",
        [L("https://example.com/b")],
        "https://example.com/",
        1,
        made,
        Scope.of(made),
    )
    assert [c.key for c in found.candidates] == ["https://example.com/", "https://example.com/b"]


def test_sitemap_candidates_are_one_hop() -> None:
    urls = ["https://example.com/x?utm_id=1", "https://example.com/x", "https://o.org/", "bad"]
    made = spec()
    candidates, rejected = sitemap_candidates(urls, made, Scope.of(made))
    assert [(c.key, c.depth) for c in candidates] == [("https://example.com/x", 1)]
    assert rejected == {Verdict.EXTERNAL: 1, Verdict.INVALID_URL: 1}
    start_only = spec(max_depth=0)
    none, too_deep = sitemap_candidates(urls[:1], start_only, Scope.of(start_only))
    assert none == [] and too_deep == {Verdict.TOO_DEEP: 1}


@pytest.mark.parametrize(
    ("events", "callback", "expected"),
    [
        (["crawl.page"], "https://hooks.example.net/p", "https://hooks.example.net/p"),
        (["crawl.page", "crawl.completed"], "https://h.example.net/", "https://h.example.net/"),
        (["crawl.completed"], "https://hooks.example.net/p", None),  # the crawl's end only
        (["crawl.page"], None, None),
    ],
)
def test_a_page_carries_the_callback_only_for_crawl_page(
    events: list[str], callback: str | None, expected: str | None
) -> None:
    stored = spec(webhook_events=events, callback_url=callback).to_dict()
    assert page_callback(stored) == expected
    # A spec stored before crawls had webhook_events: no page announces itself.
    assert page_callback({"url": START, "callback_url": "https://h.example.net/"}) is None


@pytest.mark.parametrize(
    ("crawl", "formats", "parsed"),
    [
        (False, ("markdown",), ("markdown",)),
        (True, ("markdown",), ("markdown", "link_targets")),  # followed: no anchor texts
        (True, ("markdown", "links"), ("markdown", "links")),  # kept: with their texts
    ],
)
def test_a_crawl_page_is_parsed_for_its_links_texts_only_when_kept(
    crawl: bool, formats: tuple[str, ...], parsed: tuple[str, ...]
) -> None:
    job = ClaimedJob(
        uuid.uuid4(),
        START,
        0,
        uuid.uuid4(),
        formats,
        crawl_id=uuid.uuid4() if crawl else None,
    )
    assert job.parse_formats == parsed

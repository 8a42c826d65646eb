"""Firecrawl's formats and ``waitFor`` read into a job's formats and render: what each screenshot
format asks of the browser, the refusals that name the field, and a document's screenshot."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from taskcrawler.domain import JobStatus
from taskcrawler.domain.jobs import Job
from taskcrawler.domain.rendering import RenderRequest
from taskcrawler.firecrawl.documents import firecrawl_document
from taskcrawler.firecrawl.options import (
    ScreenshotSpec,
    Unsupported,
    page_options,
    scrape_options,
    webhook_spec,
)


@pytest.mark.parametrize(
    ("formats", "shot"),
    [
        (["markdown"], None),
        (["screenshot"], ScreenshotSpec(full_page=False)),
        (["screenshot@fullPage"], ScreenshotSpec(full_page=True)),
        ([{"type": "screenshot"}], ScreenshotSpec(full_page=False)),
        ([{"type": "screenshot", "fullPage": True, "quality": None}], ScreenshotSpec(True)),
        (
            [{"type": "screenshot", "viewport": {"width": 200, "height": 4096}}],
            ScreenshotSpec(False, (200, 4096)),
        ),
    ],
)
def test_screenshot_formats(formats: list[Any], shot: ScreenshotSpec | None) -> None:
    page = page_options(["links", *formats, "links"])
    assert page.screenshot == shot
    assert page.formats == (("links", "screenshot") if shot else ("links", "markdown"))
    mode, request = page.render()
    if shot is None:
        assert (mode, request) == ("never", None)
        return
    assert mode == "always" and request is not None
    assert request.full_page is shot.full_page
    width, height = shot.viewport or (1280, 800)
    assert (request.viewport_width, request.viewport_height) == (width, height)
    assert request.wait_seconds == RenderRequest().wait_seconds
    options = page.job_options(5000)
    assert options.formats == ("metadata", "links", "screenshot")
    assert (options.render, options.render_options, options.max_age) == ("always", request, 5.0)


def test_wait_for_renders_and_bounds_the_wait() -> None:
    assert page_options(["markdown"], 0).render() == ("never", None)
    mode, request = page_options(["markdown"], 2500).render()
    assert mode == "always" and request == RenderRequest(wait_seconds=2.5)


def test_mobile_renders_as_a_phone() -> None:
    phone = scrape_options(mobile=True)
    assert phone.mobile and phone.browser_need == "options.mobile"
    mode, request = page_options(["markdown"], options=phone).render()
    assert mode == "always" and request == RenderRequest()
    assert request.viewport(mobile=True) == (412, 915)
    shot = [{"type": "screenshot", "viewport": {"width": 500, "height": 900}}]
    _, sized = page_options(shot, options=phone).render()
    assert sized is not None and sized.viewport(mobile=True) == (500, 900)


@pytest.mark.parametrize(
    ("formats", "named"),
    [
        (["screenshot", {"type": "screenshot"}], "formats[1]: one screenshot"),
        ([{"type": "screenshot", "quality": 90}], "formats[0].quality"),
        ([{"type": "screenshot", "fullPage": "yes"}], "formats[0].fullPage"),
        ([{"type": "screenshot", "omitBackground": True}], "formats[0].omitBackground"),
        ([{"type": "screenshot", "viewport": [800, 600]}], "formats[0].viewport"),
        ([{"type": "screenshot", "viewport": {"width": 800}}], "formats[0].viewport"),
        ([{"type": "screenshot", "viewport": {"width": 800, "height": 8000}}], "between 200"),
        ([{"type": "screenshot", "viewport": {"width": 800.5, "height": 600}}], "whole"),
        ([{"type": "screenshot", "viewport": {"width": True, "height": 600}}], "whole"),
        (["markdown", "json"], "jsonOptions: needs a schema, a prompt, or both"),
        ([{"type": "json", "prompt": "x", "model": "gpt"}], "formats[0].model"),
        (["markdown", "branding"], "formats[1]: 'branding' is not supported"),
        ([{"type": 3}], "formats[0]: not a format"),
        (["screenshot@viewport"], "unknown format"),
    ],
)
def test_refusals_name_the_field(formats: list[Any], named: str) -> None:
    with pytest.raises(Unsupported, match=named.replace("[", r"\[").replace("]", r"\]")):
        page_options(formats)


@pytest.mark.parametrize(
    ("status", "render", "shown"),
    [
        (JobStatus.COMPLETED, {"rendered": True}, {"screenshot": "http://api/shots/{id}"}),
        (
            JobStatus.COMPLETED,
            {"rendered": True, "screenshot": "over the size limit: none kept"},
            {"warning": "no screenshot: over the size limit: none kept"},
        ),
        (
            JobStatus.COMPLETED,
            {"rendered": False, "reason": "not an HTML page (application/pdf)"},
            {"warning": "no screenshot: not an HTML page (application/pdf)"},
        ),
        (JobStatus.FAILED, None, {}),
    ],
)
async def test_a_documents_screenshot_is_a_link_or_says_why_there_is_none(
    status: JobStatus, render: dict[str, Any] | None, shown: dict[str, str]
) -> None:
    job = Job(
        uuid.uuid4(),
        "http://site.test/",
        status,
        0,
        datetime.now(UTC),
        result=None if render is None else {"render": render},
        formats=("metadata", "screenshot"),
    )
    nothing = cast(Any, None)  # a screenshot's document reads no stored content
    document = await firecrawl_document(
        nothing, job, ("screenshot",), lambda job_id: f"http://api/shots/{job_id}"
    )
    expected = {k: v.replace("{id}", str(job.id)) for k, v in shown.items()}
    assert {k: v for k, v in document.items() if k != "metadata"} == expected


@pytest.mark.parametrize(
    ("asked", "named"),
    [
        ({"include_tags": ["a:hover"]}, "includeTags[0]"),
        ({"exclude_tags": ["p ~ div"]}, "excludeTags[0]"),
        ({"headers": {"Host": "x"}}, "headers['Host']"),
        ({"headers": {"Transfer-Encoding": "chunked"}}, "headers['Transfer-Encoding']"),
        ({"headers": {"X-A": "a\nb"}}, "headers['X-A']"),
        ({"headers": {"Proxy-Authorization": "x"}}, "headers['Proxy-Authorization']"),
        ({"headers": {"X-A": "x" * 9000}}, "headers"),
        ({"country": "DEU"}, "location.country"),
        ({"languages": ["not a tag"]}, "location.languages[0]"),
        ({"parsers": ["pdf", "image"]}, "parsers[1]"),
        ({"parsers": [{"type": "pdf", "maxPages": 0}]}, "parsers[].maxPages"),
        ({"parsers": [{"type": "pdf", "pages": True}]}, "parsers[0].pages"),
        ({"parsers": [{"type": "pdf", "ocr": True}]}, "parsers[0].ocr"),
    ],
)
def test_bad_scrape_options_are_refused_by_firecrawls_name(
    asked: dict[str, Any], named: str
) -> None:
    with pytest.raises(Unsupported, match=named.replace("[", r"\[").replace("]", r"\]")):
        scrape_options(**asked)


def test_firecrawls_defaults_read_as_taskcrawlers() -> None:
    chosen = scrape_options(
        only_main_content=False,
        include_tags=["article", "main > p"],
        headers={"Cookie": "a=b"},
        languages=["fr-CA", "fr", "en"],
        country="ca",
        remove_base64_images=False,
        parsers=[{"type": "pdf", "maxPages": 3, "mode": "fast"}],
    )
    assert not chosen.only_main_content and chosen.keep_base64_images
    assert chosen.include_tags == ("article", "main > p") and chosen.country == "CA"
    assert chosen.accept_language() == "fr-CA,fr;q=0.9,en;q=0.8"
    assert (chosen.parse_pdf, chosen.max_pages) == (True, 3)
    assert "a=b" not in repr(chosen)  # headers never show in a repr (logs)
    assert chosen.public()["headers"] == ["Cookie"]
    assert scrape_options(parsers=[]).parse_pdf is False
    assert scrape_options() == scrape_options(remove_base64_images=True, block_ads=False)


def test_change_tracking_formats() -> None:
    page = page_options([{"type": "changeTracking", "modes": ["git-diff"]}])
    assert page.tracking is not None and page.tracking.git_diff
    assert page.formats == ("markdown",)
    v1 = page_options(["markdown", "changeTracking"], tracking_options={"modes": []})
    assert v1.tracking is not None and not v1.tracking.git_diff
    for bad, named in [
        ({"type": "changeTracking", "modes": ["json"]}, "modes[0]: json needs an LLM"),
        ({"type": "changeTracking", "modes": ["word-diff"]}, "unknown mode 'word-diff'"),
        ({"type": "changeTracking", "tag": "prod"}, "formats[0].tag"),
        ({"type": "changeTracking", "schema": {}}, "formats[0].schema"),
    ]:
        with pytest.raises(Unsupported, match=named.replace("[", r"\[").replace("]", r"\]")):
            page_options([bad])
    with pytest.raises(Unsupported, match="changeTrackingOptions"):
        page_options(["markdown"], tracking_options={"modes": ["git-diff"]})


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def test_webhooks_are_checked() -> None:
    spec = webhook_spec(
        "https://hooks.example/x", headers={"X-Token": "t"}, metadata={"a": 1}, events=["page"]
    )
    assert spec.events == ("page",) and spec.headers == (("X-Token", "t"),)
    for bad, named in [
        ({"url": "ftp://x/"}, "webhook.url"),
        ({"url": "https://h/", "headers": {"Host": "x"}}, "webhook.headers"),
        ({"url": "https://h/", "events": []}, "webhook.events"),
        ({"url": "https://h/", "metadata": {"k": "v" * 20_000}}, "webhook.metadata"),
        # JSON that orjson cannot write (it is sent back in every event): a 400, not a 500.
        ({"url": "https://h/", "metadata": {"k": 2**64}}, "webhook.metadata"),
        ({"url": "https://h/", "metadata": _nested(300)}, "webhook.metadata"),
    ]:
        url = bad.pop("url")
        with pytest.raises(Unsupported, match=named):
            webhook_spec(url, **bad)

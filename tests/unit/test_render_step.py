"""What the worker's render step decides, with a stand-in renderer (the real one is tested with
chromium in tests/browser/)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest

from taskcrawler.browser import Availability, RenderOptions, RenderResult
from taskcrawler.domain import ClaimedJob, ErrorCode, FetchError, Outcome
from taskcrawler.domain.actions import parse_actions
from taskcrawler.domain.pages import Capture, FetchedPage, PageContent, Screenshot
from taskcrawler.domain.rendering import MOBILE_VIEWPORT, RenderRequest, effective_mode
from taskcrawler.domain.scrape_options import ScrapeOptions
from taskcrawler.worker.parsing import PageParser
from taskcrawler.worker.rendering import RenderStep

SHELL = b'<html><body><div id="root"></div><script src="/app.js"></script></body></html>'
STATIC = b"<html><body><main>" + b"<p>Plenty of words here, said by the server. </p>" * 20
PICTURE = Screenshot(b"\x89PNG...", 800, 600, cut=False)
AVAILABLE = Availability(True, "a stand-in")
DEFAULT_OPTIONS = RenderOptions()


class StandIn:
    def __init__(self, error: FetchError | None = None) -> None:
        self.error = error
        self.acted: tuple[dict[str, Any], tuple[Capture, ...]] | None = None
        self.calls: list[tuple[str, RenderOptions, FetchedPage | None]] = []

    async def render(
        self, url: str, options: RenderOptions = DEFAULT_OPTIONS, *, document: Any = None
    ) -> RenderResult:
        self.calls.append((url, options, document))
        if self.error is not None:
            raise self.error
        return RenderResult(
            url=url,
            final_url=url + "#rendered",
            status=200,
            headers={"content-type": "text/html"},
            html="<html><body><main><h1>Rendered</h1></main></body></html>",
            screenshot=PICTURE if options.screenshot else None,
            requests=3,
            blocked_requests=1,
            blocked=("10.0.0.1:80 (private)",),
            actions=None if self.acted is None else self.acted[0],
            captures=() if self.acted is None else self.acted[1],
        )

    async def close(self) -> None:
        pass

    def metrics(self) -> dict[str, float]:
        return {}


def job(render: str, formats: tuple[str, ...] = ("metadata",), **options: Any) -> ClaimedJob:
    return ClaimedJob(
        uuid.uuid4(),
        "http://site.test/",
        0,
        uuid.uuid4(),
        formats,
        render=render,
        render_options=RenderRequest(**options),
    )


def page(body: bytes, content_type: str | None = "text/html") -> FetchedPage:
    url = "http://site.test/"
    return FetchedPage(url, url, 200, {}, content_type, "utf-8", body)


@pytest.fixture
async def parser() -> Any:
    built = PageParser(processes=1)
    yield built
    await built.aclose()


async def test_never_renders_nothing_and_auto_renders_only_shells(parser: PageParser) -> None:
    renderer = StandIn()
    step = RenderStep(renderer, AVAILABLE, parser)
    assert await step.prepare(job("never"), page(SHELL)) is None
    skipped = await step.prepare(job("auto"), page(STATIC))
    assert skipped is not None and skipped.info["rendered"] is False
    assert skipped.page.body == STATIC and renderer.calls == []
    rendered = await step.prepare(job("auto", wait_for="main", block=("image",)), page(SHELL))
    assert rendered is not None and rendered.info["rendered"] is True
    assert "empty mount point #root" in rendered.info["reason"]
    assert rendered.info["blocked_requests"] == 1
    assert b"Rendered" in rendered.page.body and rendered.page.charset == "utf-8"
    [(_, options, document)] = renderer.calls
    assert options.wait_for_selector == "main" and options.block_resources == {"image"}
    assert options.screenshot is False and document is not None  # handed the fetched page


async def test_a_screenshot_makes_auto_render_and_lands_in_the_content(
    parser: PageParser,
) -> None:
    renderer = StandIn()
    step = RenderStep(renderer, AVAILABLE, parser)
    rendered = await step.prepare(job("auto", ("metadata", "screenshot")), page(STATIC))
    assert rendered is not None and rendered.screenshot == PICTURE
    viewport_only = await step.prepare(
        job("always", ("screenshot",), full_page=False), page(STATIC)
    )
    assert viewport_only is not None
    [whole, viewport] = [options for _, options, _ in renderer.calls]
    assert whole.screenshot and whole.full_page
    assert viewport.screenshot and not viewport.full_page
    outcome = Outcome(job=job("auto"), result={"metadata": {}}, content=PageContent())
    annotated = rendered.annotate(outcome)
    assert annotated.content is not None and annotated.content.screenshot == PICTURE
    assert annotated.result == {"metadata": {}, "render": rendered.info}
    failed = Outcome(job=job("auto"), error_code="http_404", error_message="gone")
    assert rendered.annotate(failed) is failed


async def test_pages_that_are_not_html_are_not_rendered(parser: PageParser) -> None:
    renderer = StandIn()
    step = RenderStep(renderer, AVAILABLE, parser)
    taken = await step.prepare(job("always"), page(b"plain text", "text/plain"))
    assert taken is not None and taken.info["rendered"] is False and renderer.calls == []


async def test_without_a_browser_always_fails_and_auto_falls_back(parser: PageParser) -> None:
    step = RenderStep(StandIn(), Availability(False, "no chromium on PATH"), parser)
    assert not step.available
    with pytest.raises(FetchError) as caught:
        await step.prepare(job("always"), page(SHELL))
    assert caught.value.code == ErrorCode.RENDER_UNAVAILABLE and not caught.value.transient
    with pytest.raises(FetchError):
        await step.prepare(job("auto", ("screenshot",)), page(STATIC))
    fallback = await step.prepare(job("auto"), page(SHELL))
    assert fallback is not None and "no chromium on PATH" in fallback.info["fallback"]
    assert fallback.page.body == SHELL


async def test_a_failed_render_is_the_jobs_error(parser: PageParser) -> None:
    crash = FetchError(ErrorCode.RENDER_CRASHED, "the browser crashed")
    step = RenderStep(StandIn(crash), AVAILABLE, parser)
    with pytest.raises(FetchError) as caught:
        await step.prepare(job("always"), page(SHELL))
    assert caught.value is crash and crash.transient


async def test_a_mobile_job_renders_as_a_phone_even_on_auto_or_never(
    parser: PageParser,
) -> None:
    renderer = StandIn()
    step = RenderStep(renderer, AVAILABLE, parser)
    phone_options = ScrapeOptions(mobile=True)
    rendered = await step.prepare(_with(job("auto"), phone_options), page(STATIC))  # no shell
    assert rendered is not None and rendered.info["rendered"] is True
    assert rendered.info["reason"] == "options.mobile was asked for"
    # A URL's job first asked without a browser, given mobile by a later submission.
    sized = await step.prepare(_with(job("never", viewport_width=600), phone_options), page(STATIC))
    assert sized is not None and sized.info["mode"] == "always"
    [phone, wide] = [options for _, options, _ in renderer.calls]
    assert phone.mobile and (phone.viewport_width, phone.viewport_height) == MOBILE_VIEWPORT
    assert wide.mobile and (wide.viewport_width, wide.viewport_height) == (600, 800)
    assert effective_mode(None, None, phone_options) == "always"
    with pytest.raises(ValueError, match=r"options\.mobile needs a browser"):
        effective_mode("never", None, phone_options)
    assert ScrapeOptions.from_json(phone_options.to_json()) == phone_options


async def test_the_actions_files_land_in_the_content_and_their_paths_in_the_result(
    parser: PageParser,
) -> None:
    renderer = StandIn()
    files = (Capture("screenshot", b"\x89PNG"), Capture("pdf", b"%PDF-"))
    renderer.acted = (
        {"screenshots": [0], "scrapes": [], "javascriptReturns": [], "pdfs": [0]},
        files,
    )
    step = RenderStep(renderer, AVAILABLE, parser)
    acting = ScrapeOptions(actions=parse_actions([{"type": "screenshot"}, {"type": "pdf"}]))
    claimed = _with(job("never"), acting)
    rendered = await step.prepare(claimed, page(STATIC))
    assert rendered is not None and rendered.captures == files
    annotated = rendered.annotate(Outcome(job=claimed, result={}, content=PageContent()))
    assert annotated.content is not None and annotated.content.captures == files
    assert annotated.result is not None
    assert annotated.result["actions"]["pdfs"] == [f"/api/v1/jobs/{claimed.id}/actions/pdfs/0"]
    # A render whose actions made no file replaces an earlier run's with none.
    renderer.acted = ({"screenshots": [], "scrapes": [], "javascriptReturns": [], "pdfs": []}, ())
    again = await step.prepare(claimed, page(STATIC))
    assert again is not None
    emptied = again.annotate(Outcome(job=claimed, result={}, content=PageContent()))
    assert emptied.content is not None and emptied.content.captures == ()


def _with(claimed: ClaimedJob, options: ScrapeOptions) -> ClaimedJob:
    return dataclasses.replace(claimed, options=options)


def test_the_render_mode_follows_the_formats() -> None:
    assert effective_mode(None, None) == "never"
    assert effective_mode(None, ["screenshot"]) == "always"
    assert effective_mode("auto", ["screenshot"]) == "auto"
    with pytest.raises(ValueError, match="needs a browser"):
        effective_mode("never", ["screenshot"])
    with pytest.raises(ValueError, match="render must be one of"):
        effective_mode("sometimes", None)
    request = RenderRequest(wait_until="load", wait_for="#x", block=("font",), full_page=False)
    assert RenderRequest.from_json(request.to_json()) == request
    assert RenderRequest.from_json(None) == RenderRequest()


@pytest.mark.parametrize(("width", "height"), [(199, 800), (1280, 4097), (0, 0)])
def test_a_render_request_refuses_a_viewport_out_of_bounds(width: int, height: int) -> None:
    with pytest.raises(ValueError, match="width and height must be between 200 and 4096 pixels"):
        RenderRequest(viewport_width=width, viewport_height=height)


def test_a_render_request_takes_a_viewport_at_its_bounds() -> None:
    request = RenderRequest(viewport_width=200, viewport_height=4096)
    assert (request.viewport_width, request.viewport_height) == (200, 4096)

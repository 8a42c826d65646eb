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
from taskcrawler.service.firecrawl import (
    FirecrawlService,
    ScreenshotSpec,
    Unsupported,
    page_options,
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
        (["markdown", "json"], "formats[1]: 'json' is not supported"),
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
    service = FirecrawlService(nothing, nothing, nothing, nothing, nothing)
    document = await service.document(
        nothing, job, ("screenshot",), lambda job_id: f"http://api/shots/{job_id}"
    )
    expected = {k: v.replace("{id}", str(job.id)) for k, v in shown.items()}
    assert {k: v for k, v in document.items() if k != "metadata"} == expected

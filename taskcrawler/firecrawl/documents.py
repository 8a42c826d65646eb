"""A finished job as Firecrawl's document: the formats asked for (Firecrawl's names), its
screenshot's and actions' URLs, and its metadata."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

from taskcrawler.domain import JobStatus
from taskcrawler.domain.actions import CAPTURE_LISTS
from taskcrawler.domain.jobs import Job
from taskcrawler.domain.rendering import (
    SCREENSHOT,
)
from taskcrawler.domain.structured import (
    JSON_FORMAT,
    SUMMARY_FORMAT,
)
from taskcrawler.firecrawl.options import FORMATS
from taskcrawler.storage.ports import (
    ContentRepository,
)

#: Firecrawl's formats and the TaskCrawler formats that make them.

MAX_LINKS = 5_000


#: The absolute URL of a job's screenshot (the API knows where it serves them).
ScreenshotURL = Callable[[UUID], str]


async def firecrawl_document(
    content: ContentRepository,
    job: Job,
    formats: tuple[str, ...],
    screenshot_url: ScreenshotURL,
    *,
    texts: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The Firecrawl document of a finished job: the formats asked for (Firecrawl's names),
    and its metadata. Every format of a job that did not complete is empty. ``texts``: the
    job's stored texts of :func:`stored_texts`, read beforehand (with other jobs' at once)."""

    async def text(fmt: str) -> str | None:
        return texts.get(fmt) if texts is not None else await content.text(job.id, fmt)

    doc: dict[str, Any] = {}
    completed = job.status is JobStatus.COMPLETED
    for name in formats:
        if name == "screenshot":
            doc |= _screenshot(job, screenshot_url) if completed else {}
        elif name == "links":
            links = await content.links_of(job.id, limit=MAX_LINKS) if completed else []
            doc["links"] = list(dict.fromkeys(link.url for link in links))
        elif name == "images":
            listed = await text("images") if completed else None
            doc["images"] = [url for url in (listed or "").split("\n") if url]
        elif name in ("json", "summary"):
            doc[name] = (job.result or {}).get(name) if completed else None
        else:
            doc[name] = (await text(FORMATS[name]) or "") if completed else ""
    if completed and (acted := (job.result or {}).get("actions")) is not None:
        doc["actions"] = _served_actions(acted, job, screenshot_url)
    doc["metadata"] = _metadata(job)
    return doc


def stored_texts(formats: tuple[str, ...]) -> tuple[str, ...]:
    """The stored texts (our format names) a document of these Firecrawl formats reads."""
    computed = ("screenshot", "links", "json", "summary")
    return tuple(
        "images" if name == "images" else FORMATS[name] for name in formats if name not in computed
    )


def their_formats(job: Job) -> tuple[str, ...]:
    """The Firecrawl formats a job's own formats give."""
    return _their_formats(job)


def _their_formats(job: Job) -> tuple[str, ...]:
    """The Firecrawl formats a job's own formats give."""
    theirs = {
        "markdown": ("markdown",),
        "clean_html": ("html",),
        "html": ("rawHtml",),
        "links": ("links",),
        "images": ("images",),
        SCREENSHOT: ("screenshot",),
        JSON_FORMAT: ("json",),
        SUMMARY_FORMAT: ("summary",),
    }
    return tuple(name for ours in job.formats for name in theirs.get(ours, ()))


def _screenshot(job: Job, screenshot_url: ScreenshotURL) -> dict[str, Any]:
    """``screenshot``: where the picture is served; or, when the render kept none, a
    ``warning`` saying why (Firecrawl's field for what a document lacks)."""
    render = (job.result or {}).get("render") or {}
    if render.get("rendered") and "screenshot" not in render:
        return {"screenshot": screenshot_url(job.id)}
    why = render.get("screenshot") or render.get("reason") or "the page was not rendered"
    return {"warning": f"no screenshot: {why}"}


def _served_actions(
    acted: dict[str, Any], job: Job, screenshot_url: ScreenshotURL
) -> dict[str, Any]:
    """The actions' object with its files' paths made absolute URLs, as Firecrawl gives them:
    the jobs API serves them beside the screenshot, whose URL says where that API is."""
    api = screenshot_url(job.id).removesuffix(f"/api/v1/jobs/{job.id}/screenshot")
    files = {
        name: [api + path for path in acted.get(name) or ()] for name in CAPTURE_LISTS.values()
    }
    return {**acted, **files}


def _metadata(job: Job) -> dict[str, Any]:
    found = dict((job.result or {}).get("metadata") or {})
    metadata: dict[str, Any] = {
        key: found[key] for key in ("title", "description", "language") if found.get(key)
    }
    if found.get("favicon"):
        metadata["favicon"] = found["favicon"]
    metadata |= {
        "sourceURL": job.url,
        "url": job.final_url or job.url,
        "statusCode": job.http_status,
        "contentType": job.content_type,
        "scrapeId": str(job.id),
    }
    if job.status is JobStatus.FAILED:
        metadata["error"] = job.error_log
    return metadata

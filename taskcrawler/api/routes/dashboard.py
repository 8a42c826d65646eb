"""The web dashboard: its HTML pages and their static files, all served from the package.

The pages hold no data. Their script calls the JSON API with ``fetch()`` (sending the API key the
user typed in, kept in ``localStorage``, as ``Authorization: Bearer``), so the dashboard sees
exactly what that key may see, and authentication works the same as for any other client. Nothing
is built or downloaded at run time: no CDN, no bundler, no template engine.
"""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path
from uuid import UUID

from fastapi import APIRouter, HTTPException, status
from fastapi.responses import FileResponse, HTMLResponse

from taskcrawler import __version__
from taskcrawler.contract.base import is_canonical_id

router = APIRouter(include_in_schema=False)

PACKAGE_DIR = Path(__file__).resolve().parent.parent
STATIC_DIR = PACKAGE_DIR / "static"
TEMPLATE_DIR = PACKAGE_DIR / "templates"
STATIC_PREFIX = "/static"

#: The pages are tiny and change only with a release; static files are revalidated by ETag.
NO_STORE = {"Cache-Control": "no-cache"}
SECURITY_HEADERS = {
    # Everything the pages load comes from here; the API is called on the same origin.
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@cache
def _template(name: str) -> str:
    return (TEMPLATE_DIR / name).read_text(encoding="utf-8")


def render(name: str, **values: str) -> str:
    """``{{name}}`` placeholders replaced by HTML-escaped values; the layout wraps the page."""
    page = _template(name)
    values = {
        "version": __version__,
        "static": STATIC_PREFIX,
        "monitor_id": "",
        "crawl_id": "",
        **values,
    }
    layout = _template("layout.html").replace("{{content}}", page)
    for key, value in values.items():
        layout = layout.replace("{{" + key + "}}", html.escape(value, quote=True))
    return layout


def _page(name: str, status_code: int = 200, /, **values: str) -> HTMLResponse:
    return HTMLResponse(
        render(name, **values),
        status_code=status_code,
        headers={**NO_STORE, **SECURITY_HEADERS},
    )


@router.get("/", response_class=HTMLResponse)
async def dashboard() -> HTMLResponse:
    """The jobs table, filters, submit form and charts."""
    return _page("jobs.html", title="Jobs", page="jobs", job_id="")


@router.get("/search", response_class=HTMLResponse)
async def search_page() -> HTMLResponse:
    """Search the chunks of the caller's pages (GET /api/v1/search)."""
    return _page("search.html", title="Search", page="search", job_id="")


def _page_of_one(page: str, raw_id: str) -> HTMLResponse:
    """The page of one job, monitor or crawl (``page``), for its id; the not-found page when
    ``raw_id`` is not a UUID in its one spelling (as the API's ids). The id goes in as
    ``{page}_id``."""
    if not is_canonical_id(raw_id):
        return _page(
            "not_found.html", status.HTTP_404_NOT_FOUND, title="Not found", page="none", job_id=""
        )
    parsed = UUID(raw_id)
    ids = {"job_id": "", f"{page}_id": str(parsed)}
    return _page(f"{page}.html", title=f"{page.capitalize()} {parsed}", page=page, **ids)


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
async def job_page(job_id: str) -> HTMLResponse:
    """One job: metadata, error, timings and its runs. Its data comes from the JSON API."""
    return _page_of_one("job", job_id)


@router.get("/monitors", response_class=HTMLResponse)
async def monitors_page() -> HTMLResponse:
    """The monitors of the key in use: status, pages, schedule."""
    return _page("monitors.html", title="Monitors", page="monitors", job_id="")


@router.get("/monitors/{monitor_id}", response_class=HTMLResponse)
async def monitor_page(monitor_id: str) -> HTMLResponse:
    """One monitor: its pages and its changes, each with its diff."""
    return _page_of_one("monitor", monitor_id)


@router.get("/crawls", response_class=HTMLResponse)
async def crawls_page() -> HTMLResponse:
    """The crawls of the key in use, their live counts, and a form to start one."""
    return _page("crawls.html", title="Crawls", page="crawls", job_id="")


@router.get("/crawls/{crawl_id}", response_class=HTMLResponse)
async def crawl_page(crawl_id: str) -> HTMLResponse:
    """One crawl: its counts and progress, its pages (jobs), and a cancel button."""
    return _page_of_one("crawl", crawl_id)


@router.get(STATIC_PREFIX + "/{path:path}")
async def static_file(path: str) -> FileResponse:
    """A file under ``api/static``; nothing outside it, whatever the path says."""
    try:
        candidate = (STATIC_DIR / path).resolve()
        found = candidate.is_relative_to(STATIC_DIR) and candidate.is_file()
    except (OSError, ValueError):  # a name too long for the file system, and the like
        found = False
    if not found:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such file")
    return FileResponse(candidate, headers={**NO_STORE, "X-Content-Type-Options": "nosniff"})

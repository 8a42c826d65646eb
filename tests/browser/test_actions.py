"""A phone's render and the page actions, against Debian's chromium and the local render site:
one renderer for the module. Actions run in order before the page is taken; what they reach
goes through the address guard as the page's own requests do."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pypdfium2 as pdfium
import pytest

from taskcrawler.browser import BrowserRenderer, RenderOptions
from taskcrawler.browser import actions as actions_module
from taskcrawler.browser.renderer import png_size
from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.domain.actions import MAX_PDF_PAGES, parse_actions
from taskcrawler.domain.rendering import MOBILE_VIEWPORT
from tests.support.render_site import RenderSite


def _options(**values: Any) -> RenderOptions:
    return RenderOptions(wait_until="load", wait_seconds=5.0, **values)


async def test_a_mobile_render_is_a_phone_and_a_desktop_one_is_not(
    renderer: BrowserRenderer, site: RenderSite
) -> None:
    width, height = MOBILE_VIEWPORT
    phone = await renderer.render(
        site.url("/device"), _options(mobile=True, viewport_width=width, viewport_height=height)
    )
    assert f"width:{width} touch:1 mobile-ua:true" in phone.html
    assert "Mobile" in site.user_agents[-1] and "TaskCrawler" in site.user_agents[-1]
    desktop = await renderer.render(site.url("/device"), _options())
    assert "width:1280 touch:0 mobile-ua:false" in desktop.html


def _acting(*actions: dict[str, Any]) -> RenderOptions:
    return _options(actions=parse_actions(list(actions)))


async def test_actions_run_in_order_before_the_page_is_taken(
    renderer: BrowserRenderer, site: RenderSite
) -> None:
    result = await renderer.render(
        site.url("/actions"),
        _acting(
            {"type": "click", "selector": "#more"},
            {"type": "wait", "selector": "#shown"},
            {"type": "click", "selector": "#q"},
            {"type": "write", "text": "hello"},
            {"type": "press", "key": "ENTER"},
            {"type": "scroll", "direction": "down"},
            {"type": "wait", "milliseconds": 50},
            {"type": "executeJavascript", "script": "document.getElementById('typed').textContent"},
            {"type": "executeJavascript", "script": "Promise.resolve({n: 2, none: undefined})"},
            {"type": "scrape"},
        ),
    )
    assert "Revealed text" in result.html and "sent:hello" in result.html
    assert "scrolled" in result.html
    assert result.actions is not None
    assert result.actions["javascriptReturns"] == [
        {"type": "string", "value": "sent:hello"},
        {"type": "object", "value": {"n": 2}},
    ]
    [scrape] = result.actions["scrapes"]
    assert scrape["url"] == site.url("/actions") and "Revealed text" in scrape["html"]


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (
            {"type": "executeJavascript", "script": "throw new Error('boom')"},
            "actions[1] (executeJavascript) failed: the script threw Error: boom",
        ),
        (
            {"type": "executeJavascript", "script": "'x'.repeat(70000)"},
            "failed: it returned more than 65536 characters",
        ),
        ({"type": "press", "key": "NoSuchKey"}, "actions[1] (press) failed: unknown key"),
        ({"type": "scroll", "selector": "#nothing"}, "failed: no element matches '#nothing'"),
        (
            {"type": "click", "selector": "#nothing"},
            "actions[1] (click '#nothing') failed: not done within 0.5 s: no element matched",
        ),
    ],
)
async def test_a_failing_action_fails_the_render_naming_it(
    renderer: BrowserRenderer,
    site: RenderSite,
    monkeypatch: pytest.MonkeyPatch,
    action: dict[str, Any],
    reason: str,
) -> None:
    monkeypatch.setattr(actions_module, "ACTION_SECONDS", 0.5)
    with pytest.raises(FetchError) as caught:
        await renderer.render(site.url("/actions"), _acting({"type": "scrape"}, action))
    assert caught.value.code == ErrorCode.ACTION_FAILED and not caught.value.transient
    assert reason in caught.value.message
    assert "Traceback" not in caught.value.message and "\n" not in caught.value.message


async def test_screenshot_and_pdf_actions_give_their_files_in_order(
    renderer: BrowserRenderer, site: RenderSite
) -> None:
    result = await renderer.render(
        site.url("/tall?h=1500"),
        _acting(
            {"type": "screenshot"},
            {"type": "pdf", "format": "A4", "landscape": True},
            {"type": "screenshot", "fullPage": True, "viewport": {"width": 600, "height": 400}},
            {"type": "executeJavascript", "script": "innerWidth"},
        ),
    )
    assert result.actions is not None
    assert result.actions["screenshots"] == [0, 1] and result.actions["pdfs"] == [0]
    viewport, pdf, whole = result.captures
    assert (viewport.kind, pdf.kind, whole.kind) == ("screenshot", "pdf", "screenshot")
    assert png_size(viewport.data) == (1280, 800)
    assert png_size(whole.data) == (600, 1500)  # the whole page, at the viewport asked for
    document = pdfium.PdfDocument(pdf.data)
    try:
        width, height = document[0].get_size()
        text = document[0].get_textpage().get_text_range()
    finally:
        document.close()
    assert abs(width - 842) < 3 and abs(height - 595) < 3, (width, height)  # A4, lying
    assert "tall" in text
    # The page gets its own viewport back once the picture is taken.
    assert result.actions["javascriptReturns"] == [{"type": "number", "value": 1280}]


async def test_a_pdf_is_cut_at_its_page_bound(renderer: BrowserRenderer, site: RenderSite) -> None:
    result = await renderer.render(
        site.url("/tall?h=160000"), _acting({"type": "pdf", "format": "A6"})
    )
    [printed] = result.captures
    document = pdfium.PdfDocument(printed.data)
    try:
        assert len(document) == MAX_PDF_PAGES
    finally:
        document.close()


async def test_where_an_action_leads_goes_through_the_address_guard(
    renderer: BrowserRenderer, site: RenderSite, intranet: RenderSite
) -> None:
    inward = intranet.url("/secret", host="intranet.test")
    before = intranet.total_hits
    with pytest.raises(FetchError) as caught:
        await renderer.render(
            site.url("/actions?" + urlencode({"inward": inward})),
            _acting(
                {"type": "click", "selector": "#inward"}, {"type": "wait", "milliseconds": 300}
            ),
        )
    assert caught.value.code == ErrorCode.BLOCKED_ADDRESS, caught.value.message
    assert intranet.total_hits == before


async def test_what_printing_loads_goes_through_the_address_guard(
    renderer: BrowserRenderer, site: RenderSite, intranet: RenderSite
) -> None:
    inward = intranet.url("/secret", host="intranet.test")
    before = intranet.total_hits
    result = await renderer.render(
        site.url("/actions?" + urlencode({"printed": inward})), _acting({"type": "pdf"})
    )
    [printed] = result.captures
    assert printed.data.startswith(b"%PDF-")
    assert result.blocked_requests >= 1 and intranet.total_hits == before

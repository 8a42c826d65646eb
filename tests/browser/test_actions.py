"""A phone's render and the page actions, against Debian's chromium and the local render site:
one renderer for the module. Actions run in order before the page is taken; what they reach
goes through the address guard as the page's own requests do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from taskcrawler.browser import BrowserRenderer, RenderOptions
from taskcrawler.domain.rendering import MOBILE_VIEWPORT
from tests.browser.test_renderer import new_renderer
from tests.support.render_site import RenderSite


@pytest.fixture(scope="module")
async def site() -> AsyncIterator[RenderSite]:
    server = await RenderSite("127.0.0.1").start()
    yield server
    await server.stop()


@pytest.fixture(scope="module")
async def renderer() -> AsyncIterator[BrowserRenderer]:
    shared = new_renderer()
    yield shared
    await shared.close()


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

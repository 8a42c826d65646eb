"""What Firecrawl's options ask of the browser, against Debian's chromium and a local site:
blockAds refuses ad servers by EasyList/EasyPrivacy (Debian's uBlock Origin lists),
location sets the language and time zone, headers go to the page's own host only, and
skipTlsVerification lets a self-signed page render."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from taskcrawler.browser import BrowserRenderer, RenderOptions
from taskcrawler.domain import FetchError
from taskcrawler.settings import Settings
from tests.browser.conftest import chromium_path
from tests.support.firecrawl_site import FirecrawlSite


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirecrawlSite]:
    served = FirecrawlSite(tmp_path_factory.mktemp("rendered-site")).start()
    yield served
    served.close()


@pytest.fixture(scope="module")
async def renderer() -> AsyncIterator[BrowserRenderer]:
    settings = Settings(
        _env_file=None,
        browser=chromium_path(),
        allow_private_networks=True,
        respect_robots=False,
        render_timeout_seconds=20.0,
    )
    shared = BrowserRenderer(settings)
    yield shared
    await shared.close()


def _options(**values: Any) -> RenderOptions:
    return RenderOptions(wait_until="load", wait_seconds=5.0, **values)


async def test_ads_are_refused_the_locale_set_and_headers_kept_to_the_host(
    renderer: BrowserRenderer, site: FirecrawlSite
) -> None:
    url = site.url("/rendered?asked")
    result = await renderer.render(
        url,
        _options(
            block_ads=True,
            locale="de-DE",
            timezone_id="Europe/Berlin",
            page_headers=(("X-Secret", "browser-secret"),),
            page_url=url,
        ),
    )
    assert result.ads_note is None, result.ads_note  # the lists are there (make test)
    assert result.ads_blocked >= 1
    assert "lang:de-DE" in result.html and "zone:Europe/Berlin" in result.html
    here = site.requests_to("/img/here.gif")
    away = site.requests_to("/img/away.gif")
    assert here and here[-1].headers.get("X-Secret") == "browser-secret"
    assert away and all("X-Secret" not in seen.headers for seen in away)
    assert here[-1].headers.get("Accept-Language", "").startswith("de-DE")


async def test_without_block_ads_the_ad_server_is_asked(
    renderer: BrowserRenderer, site: FirecrawlSite
) -> None:
    result = await renderer.render(site.url("/rendered?plain"), _options())
    assert result.ads_blocked == 0 and result.ads_note is None


async def test_a_self_signed_page_renders_only_when_asked(
    renderer: BrowserRenderer, site: FirecrawlSite
) -> None:
    with pytest.raises(FetchError):
        await renderer.render(site.tls_url("/article"), _options())
    result = await renderer.render(site.tls_url("/article"), _options(ignore_https_errors=True))
    assert "River bridge repairs" in result.html

"""Firecrawl's page actions checked at the edge: each refusal names the action and its field,
the list is bounded, and a checked list survives storage and asks for a browser."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, cast

import pytest
from playwright.async_api import Page
from pydantic import ValidationError

from taskcrawler.browser.actions import run_actions
from taskcrawler.contract.jobs import JobCreate
from taskcrawler.contract.options import scrape_options_of
from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.domain.actions import (
    MAX_ACTIONS,
    MAX_CAPTURES,
    Action,
    InvalidAction,
    parse_actions,
    with_capture_paths,
)
from taskcrawler.domain.rendering import RenderRequest, effective_mode
from taskcrawler.domain.scrape_options import ScrapeOptions
from taskcrawler.firecrawl.options import Unsupported, page_options, scrape_options


def test_a_checked_list_is_stored_and_asks_for_a_browser() -> None:
    actions = parse_actions(
        [
            {"type": "wait", "milliseconds": 500},
            {"type": "wait", "selector": "main p"},
            {"type": "click", "selector": "#more", "all": True},
            {"type": "write", "text": "hello"},
            {"type": "press", "key": "ENTER"},
            {"type": "scroll"},
            {"type": "executeJavascript", "script": "document.title"},
            {"type": "scrape"},
        ]
    )
    assert actions[5] == Action("scroll", direction="down")
    options = ScrapeOptions(actions=actions)
    assert ScrapeOptions.from_json(options.to_json()) == options
    assert effective_mode(None, None, options) == "always"
    # A page asked for with other actions is another page: it is read again, with them.
    assert not options.same_page_as(ScrapeOptions()) and not options.same_fetch_as(ScrapeOptions())
    acting = scrape_options(actions=[{"type": "scrape"}])
    assert acting.actions == (Action("scrape"),)
    mode, asked = page_options(["markdown"], options=acting).render()
    assert mode == "always" and asked == RenderRequest()


@pytest.mark.parametrize(
    ("actions", "named"),
    [
        ("click", "actions: must be a list"),
        ([{"type": "scrape"}] * (MAX_ACTIONS + 1), f"at most {MAX_ACTIONS}"),
        (["scrape"], "actions[0]: must be an object"),
        ([{"type": "hover"}], "actions[0].type: one of wait, click"),
        ([{"type": "scrape"}, {"type": "click"}], "actions[1].selector: a click action needs it"),
        ([{"type": "click", "selector": "a", "text": "x"}], "actions[0].text: not a field"),
        ([{"type": "click", "selector": "p:unknown(1)"}], "actions[0].selector: not a CSS"),
        ([{"type": "wait"}], "actions[0]: a wait action takes milliseconds or a selector"),
        ([{"type": "wait", "milliseconds": 10, "selector": "a"}], "actions[0]: a wait action"),
        ([{"type": "wait", "milliseconds": 30_001}], "actions[0].milliseconds"),
        ([{"type": "wait", "milliseconds": True}], "actions[0].milliseconds"),
        ([{"type": "write", "text": ""}], "actions[0].text: a string of 1 to"),
        ([{"type": "executeJavascript", "script": "x" * 50_001}], "actions[0].script"),
        ([{"type": "scroll", "direction": "left"}], "actions[0].direction: up or down"),
        ([{"type": "screenshot", "quality": 80}], "actions[0].quality: TaskCrawler's screen"),
        ([{"type": "screenshot", "fullPage": "yes"}], "actions[0].fullPage: true or false"),
        ([{"type": "screenshot", "viewport": {"width": 100, "height": 600}}], "viewport"),
        ([{"type": "screenshot", "viewport": [800, 600]}], "actions[0].viewport: {width"),
        ([{"type": "pdf", "format": "A9"}], "actions[0].format: one of A0"),
        ([{"type": "pdf", "scale": 3}], "actions[0].scale: a number from 0.1 to 2.0"),
        ([{"type": "pdf", "landscape": 1}], "actions[0].landscape: true or false"),
        ([{"type": "pdf", "selector": "p"}], "actions[0].selector: not a field of a pdf"),
        ([{"type": "pdf"}] * (MAX_CAPTURES + 1), f"at most {MAX_CAPTURES} screenshot and pdf"),
    ],
)
def test_a_bad_action_is_refused_naming_it(actions: Any, named: str) -> None:
    with pytest.raises(InvalidAction) as caught:
        parse_actions(actions)
    assert named in str(caught.value)
    with pytest.raises(Unsupported) as refused:
        scrape_options(actions=actions)
    assert named in str(refused.value)


def test_screenshots_and_pdfs_are_checked_kept_and_served_at_paths() -> None:
    actions = parse_actions(
        [
            {"type": "screenshot", "fullPage": True, "viewport": {"width": 800, "height": 600}},
            {"type": "pdf", "format": "A4", "landscape": True, "scale": 0.5},
            {"type": "screenshot"},
        ]
    )
    assert actions == (
        Action("screenshot", full_page=True, viewport=(800, 600)),
        Action("pdf", paper="A4", landscape=True, scale=0.5),
        Action("screenshot"),
    )
    options = ScrapeOptions(actions=actions)
    assert ScrapeOptions.from_json(options.to_json()) == options
    job = uuid.UUID(int=7)
    given = {"screenshots": [0, 1], "scrapes": [], "javascriptReturns": [], "pdfs": [0]}
    assert with_capture_paths(given, job) == {
        "screenshots": [
            f"/api/v1/jobs/{job}/actions/screenshots/0",
            f"/api/v1/jobs/{job}/actions/screenshots/1",
        ],
        "scrapes": [],
        "javascriptReturns": [],
        "pdfs": [f"/api/v1/jobs/{job}/actions/pdfs/0"],
    }


async def test_the_files_of_the_actions_are_bounded_together() -> None:
    async def capture(page: Page, action: Action, room: int) -> bytes | None:
        return b"x" * 600 if room >= 600 else None  # as the renderer's: None when over

    async def serialize(page: Page) -> str:
        return "<html></html>"

    page = cast(Page, object())  # screenshots and PDFs reach the page through capture only
    deadline = asyncio.get_running_loop().time() + 30
    acted = await run_actions(
        page, parse_actions([{"type": "pdf"}]), deadline, serialize, capture, 1000
    )
    assert acted.output["pdfs"] == [0] and [c.kind for c in acted.captures] == ["pdf"]
    with pytest.raises(FetchError) as caught:
        await run_actions(
            page,
            parse_actions([{"type": "screenshot"}, {"type": "screenshot"}]),
            deadline,
            serialize,
            capture,
            1000,
        )
    assert caught.value.code == ErrorCode.ACTION_FAILED
    assert "actions[1] (screenshot) failed: its file is over the 1,000 bytes" in str(caught.value)


def test_the_native_api_takes_mobile_and_actions_in_options() -> None:
    created = JobCreate.model_validate(
        {
            "url": "https://example.com/",
            "options": {"mobile": True, "actions": [{"type": "scrape"}]},
        }
    )
    assert created.render == "always"
    asked = scrape_options_of(created.options)
    assert asked is not None and asked.mobile and asked.actions == (Action("scrape"),)
    pictured = JobCreate.model_validate(
        {
            "url": "https://example.com/",
            "options": {"actions": [{"type": "screenshot", "fullPage": True}, {"type": "pdf"}]},
        }
    )
    asked = scrape_options_of(pictured.options)
    assert pictured.render == "always" and asked is not None
    assert asked.actions == (Action("screenshot", full_page=True), Action("pdf"))
    with pytest.raises(ValidationError, match=r"actions\[0\]\.selector: a click action needs it"):
        JobCreate.model_validate(
            {"url": "https://example.com/", "options": {"actions": [{"type": "click"}]}}
        )
    with pytest.raises(ValidationError, match=r"options\.mobile needs a browser"):
        JobCreate.model_validate(
            {"url": "https://example.com/", "render": "never", "options": {"mobile": True}}
        )

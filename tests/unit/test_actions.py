"""Firecrawl's page actions checked at the edge: each refusal names the action and its field,
the list is bounded, and a checked list survives storage and asks for a browser."""

from __future__ import annotations

from typing import Any

import pytest

from taskcrawler.domain.actions import MAX_ACTIONS, Action, InvalidAction, parse_actions
from taskcrawler.domain.rendering import RenderRequest, effective_mode
from taskcrawler.service.firecrawl import Unsupported, page_options


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
    request = RenderRequest(actions=actions)
    assert RenderRequest.from_json(request.to_json()) == request
    assert effective_mode(None, None, request) == "always"
    mode, asked = page_options(["markdown"], actions=[{"type": "scrape"}]).render()
    assert mode == "always" and asked == RenderRequest(actions=(Action("scrape"),))


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
        ([{"type": "screenshot"}], "actions[0].type: 'screenshot' actions are not supported"),
        ([{"type": "pdf"}], "actions[0].type: 'pdf' actions are not supported"),
    ],
)
def test_a_bad_action_is_refused_naming_it(actions: Any, named: str) -> None:
    with pytest.raises(InvalidAction) as caught:
        parse_actions(actions)
    assert named in str(caught.value)
    with pytest.raises(Unsupported) as refused:
        page_options(["markdown"], actions=actions)
    assert named in str(refused.value)

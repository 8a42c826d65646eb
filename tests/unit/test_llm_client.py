"""The OpenAI-compatible chat client against a local fake model that misbehaves: every
failure is an LLMUnavailable with our own words, within the deadline and the size bound."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from taskcrawler.llm import LLMConfig, LLMUnavailable
from taskcrawler.llm.openai import OpenAIChat
from tests.support.fake_services import FakeLLM, fake_llm

SCHEMA = {"type": "object", "properties": {"title": {"type": "string"}}}


@pytest.fixture(scope="module")
async def model() -> AsyncIterator[tuple[FakeLLM, str]]:
    async with fake_llm() as running:
        yield running


def _client(url: str, **overrides: Any) -> OpenAIChat:
    values: dict[str, Any] = {
        "url": url,
        "model": "fake",
        "api_key": "sk-test",
        "timeout_seconds": 2.0,
        "max_retries": 2,
        "retry_base_seconds": 0.001,
        "max_response_bytes": 256 * 1024,
    }
    return OpenAIChat(LLMConfig(**(values | overrides)))


def _ask(word: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "extract"}, {"role": "user", "content": f"page {word}"}]


async def test_an_answer_with_structured_output_asked(model: tuple[FakeLLM, str]) -> None:
    fake, url = model
    client = _client(url)
    try:
        answer = await client.complete(_ask("llm-ok"), schema=SCHEMA)
    finally:
        await client.close()
    assert '"title": "llm-ok"' in answer
    sent = fake.requests[-1]
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
    assert sent["model"] == "fake" and sent["stream"] is False and client.structured_output


async def test_a_server_without_structured_output_is_prompted_instead() -> None:
    async with fake_llm(refuse_structured=True) as (fake, url):
        client = _client(url)
        try:
            first = await client.complete(_ask("llm-ok"), schema=SCHEMA)
            second = await client.complete(_ask("llm-ok"), schema=SCHEMA)
        finally:
            await client.close()
    assert "llm-ok" in first and "llm-ok" in second
    # Asked once with response_format, refused, then never again.
    assert ["response_format" in sent for sent in fake.requests] == [True, False, False]
    assert client.structured_output is False


async def test_a_400_about_something_else_keeps_structured_output(
    model: tuple[FakeLLM, str],
) -> None:
    # A page too long for the model's context is refused with a 400 too: that must not make
    # every later page of the process go without structured output.
    fake, url = model
    client = _client(url)
    try:
        with pytest.raises(LLMUnavailable, match="answered 400"):
            await client.complete(_ask("llm-toolong"), schema=SCHEMA)
        await client.complete(_ask("llm-ok"), schema=SCHEMA)
    finally:
        await client.close()
    assert "response_format" in fake.requests[-1]
    assert client.structured_output is not False


async def test_a_429_is_tried_again_after_its_retry_after(model: tuple[FakeLLM, str]) -> None:
    _, url = model
    client = _client(url)
    try:
        assert "llm-429" in await client.complete(_ask("llm-429 once"))
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("word", "overrides", "said"),
    [
        ("llm-5xx", {}, "answered 503 (gave up after 3 attempts)"),
        ("llm-slow", {"timeout_seconds": 0.3}, "did not answer within 0.3 s"),
        ("llm-garbage", {}, "did not answer JSON"),
        ("llm-endless", {}, "over 262,144 bytes"),
    ],
)
async def test_a_misbehaving_model_is_unavailable_in_our_words(
    model: tuple[FakeLLM, str], word: str, overrides: dict[str, Any], said: str
) -> None:
    _, url = model
    client = _client(url, **overrides)
    try:
        with pytest.raises(LLMUnavailable) as refused:
            await client.complete(_ask(word))
    finally:
        await client.close()
    assert said in str(refused.value)
    assert "gateway" not in str(refused.value)  # the server's own text never passes


async def test_an_unreachable_model_is_unavailable() -> None:
    client = _client("http://127.0.0.1:9/v1", max_retries=1)
    try:
        with pytest.raises(LLMUnavailable, match="answered 503"):
            await client.complete(_ask("llm-ok"))
    finally:
        await client.close()


async def test_waiting_for_a_free_slot_does_not_spend_the_deadline(
    model: tuple[FakeLLM, str],
) -> None:
    # A worker runs more pages than the model takes requests at once: a page queued behind
    # the others must still get its own deadline once its request is sent.
    _, url = model
    client = _client(url, concurrency=1, timeout_seconds=0.5)
    try:
        async with client._slots:  # another page's request holds the only slot
            waiting = asyncio.ensure_future(client.complete(_ask("llm-ok")))
            await asyncio.sleep(1.0)
        answer = await waiting
    finally:
        await client.close()
    assert '"title": "llm-ok"' in answer

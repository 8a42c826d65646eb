"""Any OpenAI-compatible chat endpoint: ``POST {url}/chat/completions``, not streamed.

With a schema, the request asks for structured output (``response_format`` of type
``json_schema``: vLLM, llama.cpp, Ollama, OpenAI); a server that refuses that field (a 400 or
422 naming it) is asked again without it, and from then on this client prompts for JSON
instead. 429, 5xx and dropped connections are tried again with backoff, ``Retry-After``
honoured, while the deadline allows; the deadline covers every attempt, so a slow or endless
answer costs one ``timeout_seconds`` at most. An answer is read up to ``max_response_bytes``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
import orjson

from taskcrawler.common.http_json import (
    AnswerNotJSON,
    AnswerTooLarge,
    read_bounded,
    read_json,
    retry_after_seconds,
)
from taskcrawler.domain.backoff import backoff_delay
from taskcrawler.llm.base import LLMConfig, LLMUnavailable, Message

log = logging.getLogger(__name__)

_RETRIED_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: Statuses with which a server refuses a request field it does not know.
_REFUSED_FIELD_STATUSES = frozenset({400, 422})
#: ``Retry-After`` honoured up to this long (longer, and the deadline decides anyway).
MAX_RETRY_AFTER_SECONDS = 30.0
#: Bytes of a 400 or 422 read to learn whether it refuses ``response_format``.
MAX_REFUSAL_BYTES = 64 * 1024


class OpenAIChat:
    def __init__(self, config: LLMConfig, *, rng: random.Random | None = None) -> None:
        self._config = config
        self._endpoint = config.url.rstrip("/") + "/chat/completions"
        self._rng = rng or random.Random()
        self._session: aiohttp.ClientSession | None = None
        self._slots = asyncio.Semaphore(max(1, config.concurrency))
        #: Whether the server takes ``response_format: json_schema`` (None: not known yet).
        self.structured_output: bool | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            headers = {"Content-Type": "application/json"}
            if self._config.api_key:
                headers["Authorization"] = f"Bearer {self._config.api_key}"
            self._session = aiohttp.ClientSession(headers=headers)
        return self._session

    def _body(self, messages: Sequence[Message], schema: Mapping[str, Any] | None) -> bytes:
        body: dict[str, Any] = {
            "model": self._config.model,
            "messages": [dict(message) for message in messages],
            "max_tokens": self._config.max_tokens,
            "temperature": 0,
            "stream": False,
        }
        if schema is not None and self.structured_output is not False:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "extract", "schema": dict(schema)},
            }
        return orjson.dumps(body)

    async def complete(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None = None
    ) -> str:
        # The deadline starts once a slot is free: a page queued behind the process's other
        # requests would otherwise fail for their slowness, not the model's answer to it.
        async with self._slots:
            return await self._within_deadline(messages, schema)

    async def _within_deadline(
        self, messages: Sequence[Message], schema: Mapping[str, Any] | None
    ) -> str:
        deadline = time.monotonic() + self._config.timeout_seconds
        try:
            async with asyncio.timeout(self._config.timeout_seconds):
                return await self._attempts(messages, schema, deadline)
        except TimeoutError:
            raise LLMUnavailable(
                f"the model did not answer within {self._config.timeout_seconds:g} s"
            ) from None

    async def _attempts(
        self, messages: Sequence[Message], schema: Mapping[str, Any] | None, deadline: float
    ) -> str:
        attempt = 0
        while True:
            asked_structured = schema is not None and self.structured_output is not False
            status, payload, retry_after = await self._post(
                self._body(messages, schema), read_refusal=asked_structured
            )
            if status == 200:
                if asked_structured:
                    self.structured_output = True
                return _answer_text(payload)
            if status in _REFUSED_FIELD_STATUSES and payload and not self.structured_output:
                # The server does not take structured output: the schema goes in the prompt.
                log.info("%s refused response_format; prompting for JSON", self._endpoint)
                self.structured_output = False
                continue
            problem = f"the model's server answered {status}"
            if status not in _RETRIED_STATUSES:
                raise LLMUnavailable(problem)
            attempt += 1
            if attempt > self._config.max_retries:
                raise LLMUnavailable(f"{problem} (gave up after {attempt} attempts)")
            delay = backoff_delay(
                attempt, base=self._config.retry_base_seconds, cap=30.0, rng=self._rng
            )
            delay = max(delay, min(retry_after or 0.0, MAX_RETRY_AFTER_SECONDS))
            if time.monotonic() + delay >= deadline:
                raise LLMUnavailable(f"{problem}, and its deadline leaves no time to retry")
            await asyncio.sleep(delay)

    async def _post(
        self, body: bytes, *, read_refusal: bool = False
    ) -> tuple[int, Any, float | None]:
        """One request: its status, its JSON (for a 200) and its ``Retry-After``. A dropped
        connection is a 503 here (tried again as one). With ``read_refusal``, a 400 or 422's
        payload is whether its body names the structured output field: a page too long for
        the model's context is a 400 too, and must not turn structured output off."""
        try:
            async with self._client().post(self._endpoint, data=body) as response:
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
                if read_refusal and response.status in _REFUSED_FIELD_STATUSES:
                    return response.status, await _names_structured_output(response), None
                if response.status != 200:
                    return response.status, None, retry_after
                payload = await read_json(response, self._config.max_response_bytes)
                return 200, payload, None
        except AnswerTooLarge:
            raise LLMUnavailable(
                f"the model's answer is over {self._config.max_response_bytes:,} bytes"
            ) from None
        except AnswerNotJSON:
            raise LLMUnavailable("the model's server did not answer JSON") from None
        except aiohttp.ClientError as exc:
            log.warning("the model at %s: %s", self._endpoint, type(exc).__name__)
            return 503, None, None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def _names_structured_output(response: aiohttp.ClientResponse) -> bool:
    """Whether a refusal's body (its first :data:`MAX_REFUSAL_BYTES`) names the field."""
    try:
        body = await read_bounded(response, MAX_REFUSAL_BYTES)
    except AnswerTooLarge:
        return False
    text = body.decode("utf-8", "replace").lower()
    return "response_format" in text or "json_schema" in text


def _answer_text(payload: Any) -> str:
    """The first choice's message content, the one thing read of a chat completion."""
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMUnavailable("the model's server did not answer a chat completion") from None
    if not isinstance(content, str):
        raise LLMUnavailable("the model's answer has no text")
    return content

"""Language models: the ``json`` and ``summary`` formats and Firecrawl's extract ask one.

The one kind is any OpenAI-compatible chat endpoint the operator configures
(``TASKCRAWLER_LLM_URL``, ``_MODEL``, ``_API_KEY``): Ollama, vLLM, llama.cpp's server, LiteLLM,
OpenAI. Its answers are hostile input like any page: bounded in time and size, checked, and
what fails is told to clients by a named error code, never by an exception's text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from taskcrawler.domain.structured import HOW_TO_CONFIGURE


class LLMUnavailable(Exception):
    """The model gave no usable answer: unreachable, past its deadline, refusing (429, 5xx
    after the retries), or answering something that is not a chat completion. The message
    is ours (a status, a kind of failure), never the server's text."""


Message = Mapping[str, str]


class ChatModel(Protocol):
    async def complete(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None = None
    ) -> str:
        """The text of the model's answer to ``messages``; with ``schema``, constrained to it
        where the server can (structured output), else as asked. :class:`LLMUnavailable`."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class LLMConfig:
    url: str  # the base URL: {url}/chat/completions
    model: str
    api_key: str | None = None
    #: The deadline of one request, and of all of a format's requests together.
    timeout_seconds: float = 60.0
    max_retries: int = 2
    retry_base_seconds: float = 1.0
    #: Requests in flight at once, per process.
    concurrency: int = 4
    #: Characters of a page's Markdown sent at most (the model's context, less the answer).
    max_input_chars: int = 24_000
    #: Bytes of an answer read at most.
    max_response_bytes: int = 1024 * 1024
    #: Tokens the model may answer at most.
    max_tokens: int = 2048


def build_chat_model(config: LLMConfig) -> ChatModel:
    from taskcrawler.llm.openai import OpenAIChat

    return OpenAIChat(config)


__all__ = [
    "HOW_TO_CONFIGURE",
    "ChatModel",
    "LLMConfig",
    "LLMUnavailable",
    "Message",
    "build_chat_model",
]

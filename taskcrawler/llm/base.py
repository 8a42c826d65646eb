"""What a chat model is and takes: the port its adapter implements. A module of its own, so
that the adapter and the package that picks it (``build_chat_model``) need not import each
other."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


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
